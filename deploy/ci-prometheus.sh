#!/usr/bin/env bash
# What CI runs to prove the monitoring files: deploy/prometheus/alerts.yml
# (promtool check rules, and the unit tests in alerts_test.yml) and
# deploy/grafana/ticketbridge.json (valid, and naming only metrics the
# daemon exports), then a real Prometheus scraping a real daemon: the
# reference server, `ticketbridge run` against it with the files helpdesk,
# and Prometheus loading the rules. It waits for a successful scrape, runs
# every dashboard query there, checks that no alert is pending or firing
# on the healthy daemon, and stops both.
#
# Uses Debian's prometheus package (promtool and prometheus), installing it
# when missing, which needs root; the package's own service is not
# started. Everything else runs on loopback ports nothing listens on, and
# everything it starts is stopped at the end. Exit status 0 only when every
# step passed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'ci-prometheus: FAILED: %s\n' "$*" >&2; exit 1; }

work=$(mktemp -d)
pids=()
policy_added=
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$policy_added" ]; then
		rm -f /usr/sbin/policy-rc.d
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=deploy/ci-lib.sh
. "$(dirname "$0")/ci-lib.sh"

step "Debian's prometheus package"
if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
	echo "installed: $(dpkg-query -W -f='${Package} ${Version}' prometheus 2>/dev/null || command -v prometheus)"
else
	[ "$(id -u)" = 0 ] || die "promtool and prometheus are missing; install Debian's prometheus package or run this as root"
	# Keep the package's service from starting: policy-rc.d answers 101
	# ("action forbidden") to invoke-rc.d and deb-systemd-invoke.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy_added=1
	fi
	apt-get update -q -o DPkg::Lock::Timeout=300
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 --no-install-recommends prometheus
	if [ -n "$policy_added" ]; then
		rm -f /usr/sbin/policy-rc.d
		policy_added=
	fi
	if [ -d /run/systemd/system ] && systemctl is-active --quiet prometheus; then
		die "the package's prometheus service started despite policy-rc.d"
	fi
fi
promtool --version | head -n1

step "promtool check rules"
promtool check rules deploy/prometheus/alerts.yml

step "promtool test rules"
promtool test rules deploy/prometheus/alerts_test.yml

step "dashboard and rules name only metrics the daemon declares"
go test -count=1 -run 'TestDashboardShape|TestAlertsHaveRunbooks|TestNamesAreDeclared' -v ./deploy/prometheus/ |
	grep -v '^=== RUN'

step "reference server and ticketbridge run"
go build -o "$work/ticketbridge" ./cmd/ticketbridge
seed=guestapi/refserver/testdata/seed.json
key=$(grep -m1 -o '"value": "rta_[A-Za-z0-9_]*", "platform": "[a-z]*", "tickets": "write"' "$seed" | cut -d'"' -f4) ||
	die "$seed has no key with tickets write"
api_port=$(free_port)
"$work/ticketbridge" refserver --seed "$seed" --addr "127.0.0.1:$api_port" --console-token ci-prometheus \
	--log-format json >"$work/refserver.out" 2>"$work/refserver.log" &
pids+=($!)
wait_for 20 listening "$api_port" || {
	cat "$work/refserver.log" >&2
	die "the reference server did not listen on port $api_port within 20s"
}

listen_port=$(free_port)
printf '%s\n' "$key" >"$work/api-key"
chmod 600 "$work/api-key"
cat >"$work/ticketbridge.env" <<EOF
TICKETBRIDGE_API_URL=http://127.0.0.1:$api_port
TICKETBRIDGE_API_KEY_FILE=$work/api-key
TICKETBRIDGE_ADAPTER=files
TICKETBRIDGE_FILES_DIR=$work/helpdesk
TICKETBRIDGE_STATE=$work/state.db
TICKETBRIDGE_LISTEN=127.0.0.1:$listen_port
TICKETBRIDGE_SCHEDULE=@every 2s
TICKETBRIDGE_LOG_FORMAT=json
EOF
"$work/ticketbridge" run --env-file "$work/ticketbridge.env" >"$work/run.out" 2>"$work/run.log" &
run_pid=$!
pids+=($run_pid)
wait_for 30 listening "$listen_port" || {
	cat "$work/run.log" >&2
	die "ticketbridge run did not listen on $listen_port within 30s"
}
echo "daemon metrics on 127.0.0.1:$listen_port, API on 127.0.0.1:$api_port"

step "prometheus scraping the daemon, with the rules loaded"
prom_port=$(free_port)
prom=http://127.0.0.1:$prom_port
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 3s
  scrape_timeout: 3s
  evaluation_interval: 1s
rule_files:
  - $PWD/deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: ticketbridge
    static_configs:
      - targets: ["127.0.0.1:$listen_port"]
EOF
promtool check config "$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)

# has RESULT-OF-QUERY: the instant query returns at least one series.
has() { [ -n "$(promtool query instant "$prom" "$1" 2>/dev/null)" ]; }

wait_for 60 has 'up{job="ticketbridge"} == 1' || {
	tail -n 20 "$work/prometheus.log" >&2
	promtool query instant "$prom" '{__name__=~"up|scrape_duration_seconds"}' >&2 || true
	tail -n 5 "$work/run.log" >&2
	die "Prometheus did not scrape the daemon successfully within 60s"
}
has 'count({__name__=~"ticketbridge_.+", job="ticketbridge"}) > 0' || die "Prometheus holds no ticketbridge_ series"
promtool query instant "$prom" 'up{job="ticketbridge"}'
# The series the state file feeds appear after the first cycle.
wait_for 60 has 'ticketbridge_ready{job="ticketbridge"} == 1' || {
	tail -n 20 "$work/run.log" >&2
	die "the daemon was not ready in Prometheus within 60s"
}
# rate() in the dashboard's queries needs two samples after that.
wait_for 30 has 'rate(ticketbridge_cycle_duration_seconds_count{job="ticketbridge"}[1m]) > 0' ||
	die "Prometheus saw no cycles for 30s"
promtool query instant "$prom" 'ticketbridge_cycles_total{job="ticketbridge"}'

step "every dashboard query runs, every named metric was scraped"
CI_PROMETHEUS_URL=$prom go test -count=1 -run '^TestLive$' -v ./deploy/prometheus/ | grep -v '^=== RUN'

step "no alert on the healthy daemon"
# Rules are evaluated every second: a NotReady left pending from before
# the first cycle clears at the next evaluation.
no_alerts() {
	local out
	out=$(promtool query instant "$prom" 'ALERTS') || return 1
	[ -z "$out" ]
}
wait_for 20 no_alerts || {
	promtool query instant "$prom" 'ALERTS' >&2
	die "alerts pending or firing on a healthy daemon"
}
echo "none pending or firing"

step "stop"
kill -TERM "$run_pid"
set +e
wait "$run_pid"
code=$?
set -e
[ "$code" = 0 ] || { tail -n 20 "$work/run.log" >&2; die "ticketbridge run exited $code after SIGTERM"; }
echo "prometheus checks passed"
