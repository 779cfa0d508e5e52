#!/usr/bin/env bash
# Builds the ticketbridge .deb into dist/ and prints its path.
#
# The build is reproducible: the same commit, Go toolchain and nfpm give
# the same bytes. The binary is built with -trimpath, without VCS stamping
# and with cgo off; its version and commit are set with -ldflags; every file
# in the package carries the time of the last commit (SOURCE_DATE_EPOCH) and
# an explicit mode.
#
# Environment: VERSION (default: from the last v* tag, else
# 0.0.0~git<date>.<commit>), COMMIT (default: HEAD's, 12 digits), GOARCH
# (default: the Go toolchain's), SOURCE_DATE_EPOCH (default: the last
# commit's time), OUT (default: dist). With VERSION, COMMIT and
# SOURCE_DATE_EPOCH set, no git repository is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
commit=${COMMIT:-$(git rev-parse --short=12 HEAD)}
if [ -z "${VERSION:-}" ]; then
	if tag=$(git describe --tags --match 'v[0-9]*' --abbrev=0 2>/dev/null); then
		VERSION=${tag#v}
		ahead=$(git rev-list --count "$tag..HEAD")
		if [ "$ahead" != 0 ]; then
			VERSION="$VERSION+git$ahead.$commit"
		fi
	else
		VERSION="0.0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d).$commit"
	fi
fi
GOARCH=${GOARCH:-$(go env GOARCH)}
OUT=${OUT:-dist}

stage=dist/pkg
rm -rf "$stage"
mkdir -p "$stage/doc" "$OUT"

CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH go build -trimpath -buildvcs=false \
	-ldflags "-s -w -buildid= -X github.com/ticketbridge/ticketbridge/internal/version.version=$VERSION -X github.com/ticketbridge/ticketbridge/internal/version.commit=$commit" \
	-o "$stage/ticketbridge" ./cmd/ticketbridge

if [ ! -f config.example.env ]; then
	echo "package: config.example.env is missing" >&2
	exit 1
fi
# The packaged env file is the example with the files helpdesk in the
# staff's folder the package makes (see deploy/postinstall.sh).
sed 's|^#TICKETBRIDGE_FILES_DIR=$|TICKETBRIDGE_FILES_DIR=/srv/ticketbridge/helpdesk|' config.example.env >"$stage/ticketbridge.env"
grep -qx 'TICKETBRIDGE_FILES_DIR=/srv/ticketbridge/helpdesk' "$stage/ticketbridge.env" || {
	echo "package: config.example.env has no #TICKETBRIDGE_FILES_DIR= line to set" >&2
	exit 1
}
for doc in README.md CHANGELOG.md LICENSE config.example.env; do
	if [ -f "$doc" ]; then
		cp "$doc" "$stage/doc/"
	else
		echo "package: warning: $doc is missing; the package goes without it" >&2
	fi
done
# Debian looks for the licence under this name.
cp LICENSE "$stage/doc/copyright"
# The guides the README links to, under docs/ beside it, with the status
# page's picture and the webhook's schemas and examples. Named by pattern,
# not by copying the folder, so that a file left there untracked does not
# make two builds of one commit differ.
mkdir -p "$stage/docs/webhook/examples"
cp docs/*.md docs/*.png "$stage/docs/"
cp docs/webhook/*.json "$stage/docs/webhook/"
cp docs/webhook/examples/*.json "$stage/docs/webhook/examples/"

deb="$OUT/ticketbridge_${VERSION}_${GOARCH}.deb"
rm -f "$deb"
TB_VERSION=$VERSION TB_ARCH=$GOARCH go run "$NFPM" package \
	--config deploy/nfpm.yaml --packager deb --target "$deb" >&2
echo "$deb"
