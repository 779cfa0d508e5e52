#!/usr/bin/env bash
# What CI runs to prove the package: build the .deb twice (from two
# directories) and compare the bytes, install it, verify the installed
# unit and print its systemd-analyze security score, then run the
# installed binary for real: the reference server (--demo, plus a seed with
# known keys), the daemon against it with the files helpdesk, /readyz,
# /metrics, `ticketbridge check` on good and broken configurations, once
# with the API unreachable, every command on the packaged configuration,
# and the install path of the guides in docs/ on the installed package:
# `once` as root, the console token made as docs/status-page.md says, two
# hotels the first of which adopts the one hotel (docs/hotels.md); after
# each step the daemon runs as the unit runs it (the service's user, the
# DynamicUser layout of /var/lib/private, the unit's credentials) and
# /readyz must answer 200.
#
# Runs as root on a fresh Debian 12 with Go, git and openssl (the status
# page guide's console-token recipe); needs nothing else (HTTP goes
# through bash's /dev/tcp). Everything it starts is stopped at the end. Exit status 0 only when every step passed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'ci-package: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs the package with dpkg)"

# The package is tested on configurations of its own: the caller's
# TICKETBRIDGE_* variables (CI exports the Request Tracker tests' ones,
# which check would rightly call unknown) are dropped.
for v in $(env | grep -o '^TICKETBRIDGE_[A-Za-z0-9_]*'); do
	unset "$v"
done

work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work" "${creds:-}"
	userdel ci-staff 2>/dev/null || true
	userdel ci-outsider 2>/dev/null || true
}
trap cleanup EXIT

# shellcheck source=deploy/ci-lib.sh
. "$(dirname "$0")/ci-lib.sh"

# http_get HOST:PORT PATH prints the status code on the first line, then
# the body.
http_get() {
	local host=${1%:*} port=${1##*:} path=$2 resp
	resp=$( (exec 3<>"/dev/tcp/$host/$port" &&
		printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$1" >&3 &&
		cat <&3) 2>/dev/null) || return 1
	local status=${resp%%$'\r'*}
	status=${status#* }
	printf '%s\n' "${status%% *}"
	printf '%s\n' "${resp#*$'\r\n\r\n'}"
}

step "build the package twice and compare"
deb=$(deploy/package.sh)
sum1=$(sha256sum "$deb" | cut -d' ' -f1)
version=$(dpkg-deb -f "$deb" Version)
commit=$(git rev-parse --short=12 HEAD)
epoch=$(git log -1 --format=%ct)
copy="$work/elsewhere/src"
mkdir -p "$copy"
git ls-files -z -c -o --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$copy"
deb2=$(cd "$copy" && VERSION=$version COMMIT=$commit SOURCE_DATE_EPOCH=$epoch OUT="$work/second" deploy/package.sh)
sum2=$(sha256sum "$deb2" | cut -d' ' -f1)
echo "$deb: $sum1"
echo "second build, another directory: $sum2"
[ "$sum1" = "$sum2" ] || die "the package is not reproducible"
echo "reproducible: yes ($(stat -c %s "$deb") bytes)"

step "install"
dpkg -i "$deb"
dpkg -L ticketbridge
for f in /usr/bin/ticketbridge /lib/systemd/system/ticketbridge.service /etc/ticketbridge/ticketbridge.env \
	/usr/share/doc/ticketbridge/LICENSE /usr/share/doc/ticketbridge/config.example.env \
	/usr/share/doc/ticketbridge/README.md /usr/share/doc/ticketbridge/docs/status-page.png \
	/usr/share/doc/ticketbridge/docs/webhook/examples/signature.json; do
	[ -e "$f" ] || die "$f is not installed"
done
# Every guide the README links to is installed where the link leads.
for g in docs/*.md; do
	[ -f "/usr/share/doc/ticketbridge/$g" ] || die "the guide $g is not installed in /usr/share/doc/ticketbridge/docs"
done
[ "$(stat -c '%a' /usr/share/doc/ticketbridge/docs/webhook)" = 755 ] || die "/usr/share/doc/ticketbridge/docs/webhook is not 0755"
grep -qx /etc/ticketbridge/ticketbridge.env /var/lib/dpkg/info/ticketbridge.conffiles ||
	die "ticketbridge.env is not a conffile"

step "the staff's helpdesk folder"
getent group ticketbridge >/dev/null || die "the package made no group ticketbridge"
getent passwd ticketbridge >/dev/null || die "the package made no user ticketbridge"
grep -qx 'TICKETBRIDGE_FILES_DIR=/srv/ticketbridge/helpdesk' /etc/ticketbridge/ticketbridge.env ||
	die "the packaged env file does not name /srv/ticketbridge/helpdesk"
for d in /srv/ticketbridge/helpdesk /srv/ticketbridge/helpdesk/outbox /srv/ticketbridge/helpdesk/outbox/processed; do
	[ "$(stat -c '%U:%G %a' "$d")" = "ticketbridge:ticketbridge 2770" ] || die "$d is $(stat -c '%U:%G %a' "$d"), want ticketbridge:ticketbridge 2770"
done
[ "$(stat -c '%G %a' /srv/ticketbridge)" = "ticketbridge 2750" ] || die "/srv/ticketbridge is $(stat -c '%G %a' /srv/ticketbridge)"
[ "$(stat -c '%U:%G %a' /etc/ticketbridge/hotels.d)" = "root:ticketbridge 750" ] ||
	die "/etc/ticketbridge/hotels.d is $(stat -c '%U:%G %a' /etc/ticketbridge/hotels.d), want root:ticketbridge 750"
[ "$(stat -c '%U:%G %a' /etc/ticketbridge/keys)" = "ticketbridge:ticketbridge 700" ] ||
	die "/etc/ticketbridge/keys is $(stat -c '%U:%G %a' /etc/ticketbridge/keys), want ticketbridge:ticketbridge 700"
useradd --no-create-home --groups ticketbridge ci-staff
useradd --no-create-home ci-outsider
runuser -u ci-staff -- sh -c 'echo probe >/srv/ticketbridge/helpdesk/outbox/.ci-probe && rm /srv/ticketbridge/helpdesk/outbox/.ci-probe' ||
	die "a member of the group ticketbridge cannot drop a file into the outbox"
if runuser -u ci-outsider -- ls /srv/ticketbridge/helpdesk >/dev/null 2>&1; then
	die "a user outside the group ticketbridge can read the helpdesk folder"
fi
echo "ok: staff in the group ticketbridge write to /srv/ticketbridge/helpdesk/outbox; others cannot look in"

step "ticketbridge version"
/usr/bin/ticketbridge version | tee "$work/version"
grep -q "^ticketbridge $version\$" "$work/version" || die "version does not show $version"
grep -q "^commit $commit\$" "$work/version" || die "version does not show commit $commit"
grep -q "^go1\." "$work/version" || die "version does not show the Go version"

step "systemd-analyze verify"
systemd-analyze verify /lib/systemd/system/ticketbridge.service

step "systemd-analyze security"
systemd-analyze security --offline=true /lib/systemd/system/ticketbridge.service >"$work/security" 2>&1 || true
grep -v '^✓' "$work/security" || true
score=$(grep -o 'Overall exposure level for ticketbridge.service: [0-9.]*' "$work/security" | grep -o '[0-9.]*$') ||
	die "no exposure score"
echo "exposure score: $score"
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || die "exposure $score is above 2.0"

step "check with the packaged configuration, outside systemd"
set +e
# Without TICKETBRIDGE_* variables, check reads the packaged env file.
unset_vars=()
for v in $(env | grep -o '^TICKETBRIDGE_[A-Za-z0-9_]*'); do
	unset_vars+=(-u "$v")
done
env "${unset_vars[@]}" /usr/bin/ticketbridge check >"$work/check-packaged" 2>&1
code=$?
set -e
cat "$work/check-packaged"
[ "$code" = 1 ] || die "check of the unedited configuration: exit $code, want 1"
grep -q '^FAIL  configuration .*TICKETBRIDGE_API_URL is not set' "$work/check-packaged" || die "no FAIL for the empty API URL"
grep -q '^FAIL  API key' "$work/check-packaged" || die "no FAIL for the missing /etc/ticketbridge/api-key"
[ ! -e /var/lib/ticketbridge ] || die "check made /var/lib/ticketbridge, which is systemd's to make"

step "reference server"
key=rta_ci_bridge_key_0123456789abcdef
readonly_key=rta_ci_readonly_key_0123456789abcd
airport_key=rta_ci_airport_key_0123456789abcde
cat >"$work/seed.json" <<EOF
{
  "organizations": [
    {
      "id": "3b0e4a52-8c1d-4f3e-9a7b-5c6d7e8f9a01",
      "product_type": "hotel",
      "keys": [
        {"name": "bridge", "value": "$key", "platform": "read", "tickets": "write"},
        {"name": "readonly", "value": "$readonly_key", "platform": "read", "tickets": "read"}
      ],
      "tickets": [
        {
          "id": "4c1f5b63-9d2e-4a4f-8b8c-6d7e8f9a0b12",
          "department": "housekeeping",
          "status": "new",
          "task_description": "Two extra pillows to room 118",
          "origin": "guest",
          "created_at": "2026-03-04T10:00:00.000000+00:00",
          "messages": [
            {"id": "5d2a6c74-0e3f-4b5a-9c9d-7e8f9a0b1c23", "author_type": "guest", "author_name": "Ines Ortiz",
             "body": "Could we have two more pillows, please?", "visible_to_guest": true,
             "created_at": "2026-03-04T10:00:00.000000+00:00"}
          ]
        }
      ]
    },
    {
      "id": "6e3b7d85-1f4a-4c6b-8dae-8f9a0b1c2d34",
      "product_type": "hotel",
      "keys": [
        {"name": "bridge", "value": "$airport_key", "platform": "read", "tickets": "write"}
      ],
      "tickets": [
        {
          "id": "7f4c8e96-2a5b-4d7c-9ebf-9a0b1c2d3e45",
          "department": "reception",
          "status": "new",
          "task_description": "Late check-out for room 12",
          "origin": "guest",
          "created_at": "2026-03-04T11:00:00.000000+00:00",
          "messages": [
            {"id": "8a5d9fa7-3b6c-4e8d-8fc0-0b1c2d3e4f56", "author_type": "guest", "author_name": "Tom Berg",
             "body": "May we leave at two?", "visible_to_guest": true,
             "created_at": "2026-03-04T11:00:00.000000+00:00"}
          ]
        }
      ]
    }
  ]
}
EOF
api_port=$(free_port)
/usr/bin/ticketbridge refserver --demo --seed "$work/seed.json" --addr "127.0.0.1:$api_port" \
	--log-format json >"$work/refserver.out" 2>"$work/refserver.log" &
pids+=($!)
wait_for 20 http_get "127.0.0.1:$api_port" / || {
	cat "$work/refserver.log" >&2
	die "the reference server did not answer on port $api_port within 20s"
}
echo "reference server on 127.0.0.1:$api_port"

step "ticketbridge run"
listen_port=$(free_port)
mkdir -p "$work/etc"
printf '%s\n' "$key" >"$work/etc/api-key"
chmod 600 "$work/etc/api-key"
cat >"$work/etc/ticketbridge.env" <<EOF
TICKETBRIDGE_API_URL=http://127.0.0.1:$api_port
TICKETBRIDGE_API_KEY_FILE=$work/etc/api-key
TICKETBRIDGE_ADAPTER=files
TICKETBRIDGE_FILES_DIR=$work/helpdesk
TICKETBRIDGE_STATE=$work/state/state.db
TICKETBRIDGE_LISTEN=127.0.0.1:$listen_port
TICKETBRIDGE_SCHEDULE=@every 2s
TICKETBRIDGE_LOG_FORMAT=json
EOF
/usr/bin/ticketbridge run --env-file "$work/etc/ticketbridge.env" >"$work/run.out" 2>"$work/run.log" &
run_pid=$!
pids+=($run_pid)

ready() {
	kill -0 "$run_pid" 2>/dev/null || return 0 # it exited: stop waiting
	[ "$(http_get "127.0.0.1:$listen_port" /readyz | head -n1)" = 200 ]
}
wait_for 60 ready || {
	cat "$work/run.log" >&2
	http_get "127.0.0.1:$listen_port" /readyz >&2 || true
	die "/readyz did not answer 200 within 60s"
}
kill -0 "$run_pid" 2>/dev/null || {
	cat "$work/run.out" "$work/run.log" >&2
	die "ticketbridge run exited"
}
http_get "127.0.0.1:$listen_port" /readyz
[ "$(http_get "127.0.0.1:$listen_port" /healthz | head -n1)" = 200 ] || die "/healthz is not 200"

step "metrics"
http_get "127.0.0.1:$listen_port" /metrics >"$work/metrics"
[ "$(head -n1 "$work/metrics")" = 200 ] || die "/metrics answered $(head -n1 "$work/metrics")"
for name in ticketbridge_cycles_total ticketbridge_cycle_duration_seconds_bucket ticketbridge_api_requests_total \
	ticketbridge_messages_mirrored_total ticketbridge_tickets ticketbridge_journal_entries \
	ticketbridge_last_success_timestamp_seconds ticketbridge_errors_total ticketbridge_build_info; do
	grep -q "^$name" "$work/metrics" || die "/metrics lacks $name"
done
grep -q '^ticketbridge_api_requests_total{code="200",endpoint="/tickets",method="GET"}' "$work/metrics" ||
	die "/metrics has no successful GET /tickets"
if grep -q '4c1f5b63-9d2e-4a4f-8b8c-6d7e8f9a0b12\|rta_' "$work/metrics"; then
	die "/metrics contains a ticket id or a key"
fi
grep '^ticketbridge_\(cycles_total\|messages_mirrored_total\|tickets{\|ready\)' "$work/metrics"
ls "$work/helpdesk"

step "check: good configuration (the daemon holds the state file)"
/usr/bin/ticketbridge check --env-file "$work/etc/ticketbridge.env" || die "check of the good configuration failed"

# expect_fail NAME CHECK PATTERN VAR=VALUE runs check with VAR changed
# and wants exit 1 and a FAIL line of CHECK matching PATTERN.
expect_fail() {
	local name=$1 check=$2 pattern=$3 assignment=$4 code
	grep -v "^${assignment%%=*}=" "$work/etc/ticketbridge.env" >"$work/broken.env"
	printf '%s\n' "$assignment" >>"$work/broken.env"
	set +e
	/usr/bin/ticketbridge check --env-file "$work/broken.env" --timeout 5s >"$work/broken.out" 2>&1
	code=$?
	set -e
	cat "$work/broken.out"
	[ "$code" = 1 ] || die "check with $name: exit $code, want 1"
	grep -q "^FAIL  $check .*$pattern" "$work/broken.out" || die "check with $name: no FAIL line for $check matching '$pattern'"
	if grep -q "$key\|$readonly_key" "$work/broken.out"; then
		die "check with $name printed a key"
	fi
	echo "ok: $name gives FAIL $check"
}

step "check: wrong key"
printf 'rta_not_a_key_the_server_knows_0000\n' >"$work/etc/wrong-key"
chmod 600 "$work/etc/wrong-key"
expect_fail "a wrong key" "API" "revoked, expired or mistyped" "TICKETBRIDGE_API_KEY_FILE=$work/etc/wrong-key"

step "check: read-only key"
printf '%s\n' "$readonly_key" >"$work/etc/readonly-key"
chmod 600 "$work/etc/readonly-key"
expect_fail "a read-only key" "API write" "needs tickets:write" "TICKETBRIDGE_API_KEY_FILE=$work/etc/readonly-key"

step "check: unreachable API"
expect_fail "an unreachable API" "API" "cannot reach" "TICKETBRIDGE_API_URL=http://127.0.0.1:$(free_port)"

step "once with the API unreachable: exit 1"
set +e
# Its own state file: the daemon holds the other.
TICKETBRIDGE_API_URL=http://127.0.0.1:$(free_port) TICKETBRIDGE_STATE="$work/down/state.db" \
	/usr/bin/ticketbridge once --env-file "$work/etc/ticketbridge.env" \
	>"$work/once-down.out" 2>"$work/once-down.log"
code=$?
set -e
[ "$code" = 1 ] || { cat "$work/once-down.out" "$work/once-down.log" >&2; die "once with the API unreachable: exit $code, want 1"; }
grep -q "no call of the Guest Requests API succeeded" "$work/once-down.log" || die "once with the API unreachable does not say why"
echo "ok: once exits 1 when no API call succeeded"

step "the packaged configuration: every command reads it, as the service does"
# As a hotel's IT person edits it: the API, the adapter, the key where the
# unit's LoadCredential= reads it. No --env-file, no TICKETBRIDGE_* variable.
cp /etc/ticketbridge/ticketbridge.env "$work/packaged.env"
printf '%s\n' "TICKETBRIDGE_API_URL=http://127.0.0.1:$api_port" TICKETBRIDGE_ADAPTER=files TICKETBRIDGE_FILES_SETTLE=0s \
	>>/etc/ticketbridge/ticketbridge.env
printf '%s\n' "$key" >/etc/ticketbridge/api-key
chmod 600 /etc/ticketbridge/api-key
mkdir "$work/cwd"
packaged() { (cd "$work/cwd" && env "${unset_vars[@]}" /usr/bin/ticketbridge "$@"); }
packaged check >"$work/p-check" 2>&1 || { cat "$work/p-check" >&2; die "check of the packaged configuration failed"; }
packaged once --dry-run >"$work/p-dry" 2>"$work/p-dry.log" || {
	cat "$work/p-dry" "$work/p-dry.log" >&2
	die "once --dry-run with the packaged configuration failed"
}
grep -q "would create a helpdesk ticket for 4c1f5b63-9d2e-4a4f-8b8c-6d7e8f9a0b12" "$work/p-dry" ||
	die "the dry run does not say what it would create"
[ ! -e /var/lib/ticketbridge ] || die "the dry run made /var/lib/ticketbridge"
set +e
packaged once >"$work/p-once0" 2>&1
code=$?
set -e
if [ "$code" != 1 ] || ! grep -q "/var/lib/ticketbridge does not exist yet" "$work/p-once0"; then
	cat "$work/p-once0" >&2
	die "once before the service's first start: exit $code, want 1 and the reason"
fi
# What the unit does, emulated: the credentials, the state directory of
# DynamicUser=yes, the service's user.
unit=/lib/systemd/system/ticketbridge.service
# unit_credentials makes what systemd makes of the unit's LoadCredential=
# and SetCredential= lines in $creds: a copy of each readable source, else
# the SetCredential= default, owned by the service's user, read-only.
creds=$(mktemp -d) # systemd's /run/credentials/ticketbridge.service
unit_credentials() {
	local line spec name
	chmod 0700 "$creds"
	find "$creds" -mindepth 1 -delete
	while IFS= read -r line; do
		spec=${line#LoadCredential=}
		name=${spec%%:*}
		if [ -r "${spec#*:}" ]; then
			cp "${spec#*:}" "$creds/$name"
		fi
	done < <(grep '^LoadCredential=' "$unit")
	while IFS= read -r line; do
		spec=${line#SetCredential=}
		name=${spec%%:*}
		if [ ! -e "$creds/$name" ]; then
			printf '%b' "${spec#*:}" >"$creds/$name"
		fi
	done < <(grep '^SetCredential=' "$unit")
	chown -R ticketbridge:ticketbridge "$creds"
	chmod 0400 "$creds"/*
	chmod 0500 "$creds"
}
# unit_first_start makes the state directory as systemd does at the first
# start under DynamicUser=yes: /var/lib/private/ticketbridge, the service's,
# in /var/lib/private (root's, 0700), and the link /var/lib/ticketbridge.
made_private=
unit_first_start() {
	if [ ! -d /var/lib/private ]; then
		install -d -m 0700 /var/lib/private
		made_private=1
	fi
	install -d -m 0700 -o ticketbridge -g ticketbridge /var/lib/private/ticketbridge
	ln -s private/ticketbridge /var/lib/ticketbridge
}
# The service reaches /var/lib/private/ticketbridge in its own mount
# namespace only, where systemd mounts a tmpfs over /var/lib/private that
# holds the service's directory: private_ns runs a command so.
stash="$work/private-stash"
mkdir "$stash"
private_ns=(unshare --mount --propagation private -- sh -c 'mount --bind /var/lib/private/ticketbridge "$0" &&
	mount -t tmpfs -o mode=0755 tmpfs /var/lib/private && mkdir /var/lib/private/ticketbridge &&
	mount --bind "$0" /var/lib/private/ticketbridge && exec "$@"' "$stash")
if ! unshare --mount --propagation private true 2>/dev/null; then
	echo "note: no mount namespace here; /var/lib/private is opened to the service (0711) instead"
	private_ns=()
fi
unit_port=$(free_port)
unit_pid=
# unit_start [VAR=VALUE...] runs the installed daemon as the unit does:
# the unit's EnvironmentFile= (its own port, as something else may listen on
# the packaged one), $CREDENTIALS_DIRECTORY, $STATE_DIRECTORY, the
# service's user, in the namespace of private_ns, with VAR=VALUE added;
# unshare, sh, setpriv and env exec, so that $unit_pid is the daemon's.
unit_start() {
	local -a unit_env
	mapfile -t unit_env < <(grep -E '^TICKETBRIDGE_[A-Z0-9_]+=' /etc/ticketbridge/ticketbridge.env | grep -v '^TICKETBRIDGE_LISTEN=')
	[ ${#private_ns[@]} != 0 ] || chmod 0711 /var/lib/private
	"${private_ns[@]}" setpriv --reuid=ticketbridge --regid=ticketbridge --init-groups -- env -i PATH=/usr/bin:/bin \
		CREDENTIALS_DIRECTORY="$creds" STATE_DIRECTORY=/var/lib/ticketbridge "${unit_env[@]}" \
		TICKETBRIDGE_LISTEN="127.0.0.1:$unit_port" TICKETBRIDGE_LOG_FORMAT=json "$@" \
		/usr/bin/ticketbridge run >"$work/unit.out" 2>"$work/unit.log" &
	unit_pid=$!
	pids+=("$unit_pid")
}
unit_ready() {
	kill -0 "$unit_pid" 2>/dev/null || return 0 # it exited: stop waiting
	[ "$(http_get "127.0.0.1:$unit_port" /readyz | head -n1)" = 200 ]
}
unit_wait_ready() {
	wait_for 60 unit_ready && kill -0 "$unit_pid" 2>/dev/null || {
		cat "$work/unit.out" "$work/unit.log" >&2
		http_get "127.0.0.1:$unit_port" /readyz >&2 || true
		die "$1: the daemon, run as the unit runs it, did not answer /readyz 200 within 60s"
	}
}
unit_stop() {
	local code=0
	kill -TERM "$unit_pid"
	wait "$unit_pid" || code=$?
	[ ${#private_ns[@]} != 0 ] || chmod 0700 /var/lib/private
	[ "$code" = 0 ] || { cat "$work/unit.log" >&2; die "the daemon run as the unit exited $code after SIGTERM"; }
}
# unit_run NAME starts the daemon as the unit, wants /readyz 200, stops it.
unit_run() {
	unit_credentials
	unit_start
	unit_wait_ready "$1"
	unit_stop
	echo "ok: $1: the daemon run as the unit answers /readyz 200"
}

unit_first_start
packaged once >"$work/p-once" 2>&1 || { cat "$work/p-once" >&2; die "once with the packaged configuration failed"; }
[ -f /var/lib/ticketbridge/state.db ] || die "once did not keep its state in /var/lib/ticketbridge"
# Through the link, what once made is the service's.
for f in /var/lib/private/ticketbridge/state.db /var/lib/private/ticketbridge/state.db.status.json; do
	[ "$(stat -c %U "$f")" = ticketbridge ] || die "once left $f owned by $(stat -c %U "$f"), not by the service's user"
done
thread=$(find /srv/ticketbridge/helpdesk/tickets -name thread.md | head -n1)
[ -n "$thread" ] || die "once did not write into /srv/ticketbridge/helpdesk"
[ "$(stat -c %U "$thread")" = ticketbridge ] || die "once left $thread owned by $(stat -c %U "$thread"), not by the service's user"
runuser -u ci-staff -- cat "$thread" >/dev/null || die "staff cannot read $thread"
packaged status >"$work/p-status" 2>&1 || { cat "$work/p-status" >&2; die "status with the packaged configuration failed"; }
grep -q "1 tracked" "$work/p-status" || { cat "$work/p-status" >&2; die "status does not show the ticket once mirrored"; }
packaged state backup "$work/p-backup.db" || die "state backup with the packaged configuration failed"
[ -z "$(ls -A "$work/cwd")" ] || die "the commands wrote in the working directory: $(ls -A "$work/cwd")"
echo "ok: check, once --dry-run, once, status and state backup share /etc/ticketbridge/ticketbridge.env"
packaged check >"$work/p-check2" 2>&1 || { cat "$work/p-check2" >&2; die "check after once as root failed"; }
grep -q '^PASS  as the service' "$work/p-check2" || { cat "$work/p-check2" >&2; die "check does not judge as the service"; }

step "the daemon as the unit runs it, after once as root"
unit_run "after once as root"

step "the console token as the status page's guide makes it, the daemon run as the unit runs it"
# The guide's recipe, as root: the daemon finds the token by itself, as
# the unit's credential console-token.
recipe="sh -c 'umask 077; openssl rand -hex 32 > /etc/ticketbridge/console-token'"
grep -qF "sudo $recipe" docs/status-page.md || die "docs/status-page.md no longer makes the console token with: sudo $recipe"
eval "$recipe"
[ "$(stat -c '%U %a' /etc/ticketbridge/console-token)" = "root 600" ] ||
	die "the recipe made /etc/ticketbridge/console-token $(stat -c '%U %a' /etc/ticketbridge/console-token)"
console_token=$(cat /etc/ticketbridge/console-token)
grep -qx 'LoadCredential=console-token:/etc/ticketbridge/console-token' "$unit" || die "the unit does not pass the console token"
packaged check >"$work/p-check3" 2>&1 || { cat "$work/p-check3" >&2; die "check with the console token failed"; }

# http_post_bearer HOST:PORT PATH TOKEN prints the status code of a POST
# with the token as bearer credential.
http_post_bearer() {
	local host=${1%:*} port=${1##*:} resp
	resp=$( (exec 3<>"/dev/tcp/$host/$port" &&
		printf 'POST %s HTTP/1.0\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n\r\n' "$2" "$1" "$3" >&3 &&
		cat <&3) 2>/dev/null) || return 1
	resp=${resp%%$'\r'*}
	resp=${resp#* }
	printf '%s\n' "${resp%% *}"
}

unit_credentials
unit_start
unit_wait_ready "with the console token"
[ "$(http_get "127.0.0.1:$unit_port" /login | head -n1)" = 200 ] || die "the status page has no sign-in: the daemon did not take the console token"
[ "$(http_post_bearer "127.0.0.1:$unit_port" "/read-now?id=4c1f5b63-9d2e-4a4f-8b8c-6d7e8f9a0b12" "$console_token")" = 200 ] ||
	die "the console token does not act on the daemon run as the unit"
[ "$(http_post_bearer "127.0.0.1:$unit_port" "/read-now?id=4c1f5b63-9d2e-4a4f-8b8c-6d7e8f9a0b12" "not-$console_token")" = 403 ] ||
	die "a wrong console token is not refused"
if grep -qF "$console_token" "$work/unit.log" "$work/unit.out"; then
	die "the daemon logged the console token"
fi
unit_stop
echo "ok: the daemon runs as the service's user with the token of /etc/ticketbridge/console-token, and /readyz answers"

# The recipe of before, naming the root-owned file, is refused with the
# way out, by check first and by the daemon.
set +e
env "${unset_vars[@]}" TICKETBRIDGE_CONSOLE_TOKEN_FILE=/etc/ticketbridge/console-token /usr/bin/ticketbridge check \
	--env-file /etc/ticketbridge/ticketbridge.env >"$work/p-check4" 2>&1
code=$?
set -e
[ "$code" = 1 ] && grep -q '^FAIL  as the service' "$work/p-check4" || {
	cat "$work/p-check4" >&2
	die "check passes a console token file the service cannot read"
}
unit_credentials
[ ${#private_ns[@]} != 0 ] || chmod 0711 /var/lib/private
unit_start TICKETBRIDGE_CONSOLE_TOKEN_FILE=/etc/ticketbridge/console-token
set +e
wait "$unit_pid"
code=$?
set -e
[ ${#private_ns[@]} != 0 ] || chmod 0700 /var/lib/private
[ "$code" != 0 ] || die "the daemon started with a token file its user cannot read"
grep -q 'leave the variable unset' "$work/unit.log" || { cat "$work/unit.log" >&2; die "the refusal of an unreadable token file does not say what to do"; }
if grep -qF "$console_token" "$work/unit.log" "$work/unit.out"; then
	die "the refusal holds the console token"
fi
echo "ok: TICKETBRIDGE_CONSOLE_TOKEN_FILE naming root's file is refused with what to do, by check and the daemon"

# Without the token file the unit still starts (SetCredential= default),
# with a read-only page.
rm /etc/ticketbridge/console-token
unit_credentials
unit_start
unit_wait_ready "without a console token"
[ "$(http_get "127.0.0.1:$unit_port" /login | head -n1)" = 404 ] || die "without a console token the page offers a sign-in"
unit_stop
echo "ok: without /etc/ticketbridge/console-token the daemon starts with a read-only page"

step "two hotels, the first adopting the one hotel (docs/hotels.md)"
printf '%s\n' TICKETBRIDGE_HOTELS_DIR=/etc/ticketbridge/hotels.d >>/etc/ticketbridge/ticketbridge.env
for h in seaside airport; do
	hkey=$key
	[ "$h" = seaside ] || hkey=$airport_key
	printf '%s\n' "$hkey" >"/etc/ticketbridge/keys/$h.key"
	chown ticketbridge:ticketbridge "/etc/ticketbridge/keys/$h.key"
	chmod 600 "/etc/ticketbridge/keys/$h.key"
	printf '%s\n' "TICKETBRIDGE_API_KEY_FILE=/etc/ticketbridge/keys/$h.key" TICKETBRIDGE_ADAPTER=files \
		"TICKETBRIDGE_FILES_DIR=/srv/ticketbridge/helpdesk/$h" >"/etc/ticketbridge/hotels.d/$h.env"
	chgrp ticketbridge "/etc/ticketbridge/hotels.d/$h.env"
	chmod 640 "/etc/ticketbridge/hotels.d/$h.env"
done
packaged hotels adopt seaside >"$work/p-adopt" 2>&1 || { cat "$work/p-adopt" >&2; die "hotels adopt seaside failed"; }
cat "$work/p-adopt"
[ "$(find /srv/ticketbridge/helpdesk/seaside/tickets -name thread.md | wc -l)" = 1 ] || die "the one hotel's helpdesk folder did not move to seaside's"
[ ! -e /srv/ticketbridge/helpdesk/tickets ] || die "adopt left the one hotel's tickets behind"
[ "$(stat -c %U /var/lib/private/ticketbridge/hotels/seaside.db)" = ticketbridge ] || die "adopt left seaside's state not the service's"
packaged check >"$work/p-check5" 2>&1 || { cat "$work/p-check5" >&2; die "check of two hotels failed"; }
[ "$(grep -c '^PASS  as the service' "$work/p-check5")" = 2 ] || { cat "$work/p-check5" >&2; die "check does not judge each hotel as the service"; }
packaged once >"$work/p-once2" 2>&1 || { cat "$work/p-once2" >&2; die "once of two hotels failed"; }
[ "$(find /srv/ticketbridge/helpdesk/seaside/tickets -name thread.md | wc -l)" = 1 ] || die "seaside imported its requests again"
[ "$(find /srv/ticketbridge/helpdesk/airport/tickets -name thread.md | wc -l)" = 1 ] || die "once did not mirror airport's request"
unit_credentials
unit_start
unit_wait_ready "two hotels"
readyz=$(http_get "127.0.0.1:$unit_port" /readyz)
grep -q seaside <<<"$readyz" && grep -q airport <<<"$readyz" || die "/readyz does not list both hotels: $readyz"
unit_stop
echo "ok: two hotels, seaside with the one hotel's state and folder: once as root, check, then the daemon as the unit, ready"

cp "$work/packaged.env" /etc/ticketbridge/ticketbridge.env
rm -rf /var/lib/ticketbridge /var/lib/private/ticketbridge /etc/ticketbridge/api-key "$creds" \
	/etc/ticketbridge/hotels.d/*.env /etc/ticketbridge/keys/*.key /srv/ticketbridge/helpdesk/seaside /srv/ticketbridge/helpdesk/airport
[ -z "$made_private" ] || rmdir /var/lib/private

step "stop"
kill -TERM "$run_pid"
set +e
wait "$run_pid"
code=$?
set -e
[ "$code" = 0 ] || { cat "$work/run.log" >&2; die "ticketbridge run exited $code after SIGTERM"; }
echo "ticketbridge run stopped cleanly; its log:"
head -n 5 "$work/run.log"
echo "..."
tail -n 3 "$work/run.log"

step "remove"
dpkg -r ticketbridge
[ ! -e /usr/bin/ticketbridge ] || die "/usr/bin/ticketbridge left after dpkg -r"
dpkg -P ticketbridge
# Kept by the package for the operator; this machine gets them back clean.
userdel ci-staff
userdel ci-outsider
rm -rf /srv/ticketbridge /etc/ticketbridge/keys
rmdir /etc/ticketbridge
userdel ticketbridge
getent group ticketbridge >/dev/null && groupdel ticketbridge
echo "package checks passed"
