#!/bin/sh
# Builds the container image of deploy/container/Dockerfile with the first
# container builder that works here (docker with its daemon running,
# podman, buildah), or says that it skips: CI runs this on machines that
# may have none.
set -eu
cd "$(dirname "$0")/../.."
tag=${1:-ticketbridge:dev}
version=$(git describe --tags --always 2>/dev/null || echo dev)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
for b in docker podman buildah; do
	# A client without its daemon cannot build: ask it first.
	if command -v "$b" >/dev/null 2>&1 && "$b" info >/dev/null 2>&1; then
		case $b in
		buildah) set -- buildah bud ;;
		*) set -- "$b" build ;;
		esac
		echo "building $tag with $b"
		exec "$@" -f deploy/container/Dockerfile --build-arg "VERSION=$version" \
			--build-arg "COMMIT=$commit" -t "$tag" .
	fi
done
echo "skip: no working container builder here (docker with its daemon running, podman or buildah); the image is not built"
