#!/usr/bin/env bash
# postgres.sh: a local PostgreSQL for developing and testing ticketbridge's
# PostgreSQL state. Not for production: a throw-away cluster in a temporary
# data directory, listening on 127.0.0.1 only.
#
#   deploy/dev/postgres.sh start    install PostgreSQL when missing (Debian/
#                                   Ubuntu, as root), start a cluster on a
#                                   free port as an unprivileged user, create
#                                   the role and database ticketbridge with a
#                                   random password, print the lines to use
#   deploy/dev/postgres.sh stop     stop the cluster and delete its data
#   deploy/dev/postgres.sh status   say whether it runs and answers
#
# Installing (as root, when initdb is missing) runs apt-get update and
# installs postgresql and postgresql-client; a drop-in in
# /etc/postgresql-common/createcluster.d keeps the package from making and
# starting its own cluster on port 5432.
#
# `start` is idempotent: run twice, it finds the cluster running and prints
# the same lines (the password is kept, readable by the invoking user only,
# next to the data directory). Run as root, the cluster runs as the system
# user postgres (made by Debian's package); run as another user, as that
# user.
#
# Variables: PG_PORT (the first free port from 15432), PG_RUN_DIR
# (/var/tmp/ticketbridge-pg: data directory, socket, log, credentials),
# PG_WAIT (30: seconds to wait for the server to answer).
set -euo pipefail

PG_RUN_DIR="${PG_RUN_DIR:-/var/tmp/ticketbridge-pg}"
PG_WAIT="${PG_WAIT:-30}"
DATA="$PG_RUN_DIR/data"
SOCK="$PG_RUN_DIR/socket"
LOG_FILE="$PG_RUN_DIR/postgres.log"
CREDS="$PG_RUN_DIR/credentials"
PORT_FILE="$PG_RUN_DIR/port"

say() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# bindir finds the newest installed PostgreSQL's programs.
bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then
    echo "$d"
    return 0
  fi
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

install_pg() {
  if bindir >/dev/null; then
    return
  fi
  [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed and installing it needs root: run as root, or install postgresql yourself"
  command -v apt-get >/dev/null || die "PostgreSQL is not installed and this is no Debian-like system: install PostgreSQL (initdb, pg_ctl, psql) yourself"
  say "installing PostgreSQL (apt-get)"
  # This script runs clusters of its own: the package need not make and
  # start its "main" cluster on port 5432.
  mkdir -p /etc/postgresql-common/createcluster.d
  printf '# Written by ticketbridge deploy/dev/postgres.sh.\ncreate_main_cluster = false\n' \
    >/etc/postgresql-common/createcluster.d/90-ticketbridge-dev.conf
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql postgresql-client >&2
  bindir >/dev/null || die "apt-get finished but initdb is missing"
}

# as_owner runs a command as the cluster's unprivileged owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port() { cat "$PORT_FILE" 2>/dev/null || true; }

running() {
  [ -f "$DATA/postmaster.pid" ] || return 1
  local pid
  pid=$(head -n 1 "$DATA/postmaster.pid")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

answers() {
  local p
  p=$(port)
  [ -n "$p" ] && as_owner "$BIN/pg_isready" -q -h "$SOCK" -p "$p" 2>/dev/null
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() {
  if [ -n "${PG_PORT:-}" ]; then
    [[ "$PG_PORT" =~ ^[0-9]+$ ]] && [ "$PG_PORT" -ge 1024 ] && [ "$PG_PORT" -le 65535 ] || die "PG_PORT=$PG_PORT: want a port from 1024 to 65535"
    port_free "$PG_PORT" || die "something else listens on port $PG_PORT; stop it or choose another PG_PORT"
    echo "$PG_PORT"
    return
  fi
  local p
  for p in $(seq 15432 15531); do
    if port_free "$p"; then
      echo "$p"
      return
    fi
  done
  die "no free port from 15432 to 15531; set PG_PORT"
}

psql_admin() {
  as_owner "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$(port)" -U postgres -d postgres "$@"
}

start_server() {
  mkdir -p "$PG_RUN_DIR"
  chmod 0755 "$PG_RUN_DIR"
  if running; then
    say "PostgreSQL already runs on 127.0.0.1:$(port) (data: $DATA)"
  else
    local p
    p=$(pick_port)
    echo "$p" >"$PORT_FILE"
    if [ ! -f "$DATA/PG_VERSION" ]; then
      rm -rf "$DATA" "$SOCK"
      mkdir -p "$DATA" "$SOCK"
      chmod 0700 "$DATA"
      if [ "$(id -u)" = 0 ]; then chown postgres: "$DATA" "$SOCK"; fi
      say "creating a cluster in $DATA"
      # Local socket connections of the owner need no password (peer);
      # TCP connections need one (scram-sha-256).
      as_owner "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
        --auth-local=peer --auth-host=scram-sha-256 >>"$LOG_FILE" 2>&1 ||
        { tail -n 20 "$LOG_FILE" >&2; die "initdb failed (log: $LOG_FILE)"; }
    fi
    touch "$LOG_FILE"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$LOG_FILE"; fi
    say "starting PostgreSQL on 127.0.0.1:$p (log: $LOG_FILE)"
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG_FILE" -w -t "$PG_WAIT" \
      -o "-p $p -k $SOCK -c listen_addresses=127.0.0.1" start >&2 ||
      { tail -n 20 "$LOG_FILE" >&2; die "PostgreSQL did not start (log: $LOG_FILE)"; }
  fi
  local deadline=$((SECONDS + PG_WAIT))
  until answers; do
    [ "$SECONDS" -lt "$deadline" ] || die "PostgreSQL does not answer on port $(port) within ${PG_WAIT}s (log: $LOG_FILE)"
    sleep 0.5
  done
}

# setup creates the role and database when missing and (re)sets the role's
# password to the kept one, or to a new random one.
setup() {
  local pw=""
  [ -f "$CREDS" ] && pw=$(sed -n 's/^password=//p' "$CREDS")
  if [ -z "$pw" ]; then
    pw=$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')
    (umask 077 && printf 'password=%s\n' "$pw" >"$CREDS")
  fi
  # The password reaches psql on stdin, never on a command line.
  psql_admin -v pw="$pw" <<'SQL'
SELECT format('CREATE ROLE ticketbridge LOGIN PASSWORD %L', :'pw')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ticketbridge') \gexec
SELECT format('ALTER ROLE ticketbridge LOGIN PASSWORD %L', :'pw') \gexec
SELECT 'CREATE DATABASE ticketbridge OWNER ticketbridge'
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'ticketbridge') \gexec
SQL
  PW="$pw"
}

cmd_start() {
  install_pg
  BIN=$(bindir)
  start_server
  setup
  local url="postgres://ticketbridge:$PW@127.0.0.1:$(port)/ticketbridge"
  local version
  version=$(as_owner "$BIN/postgres" --version | awk '{print $3}')
  cat <<EOF
# PostgreSQL $version on 127.0.0.1:$(port) (data: $DATA); paste into the env file.
TICKETBRIDGE_STATE=$url
# For the state tests (each makes and drops a schema of its own):
TICKETBRIDGE_TEST_POSTGRES=$url
EOF
}

cmd_stop() {
  BIN=$(bindir) || die "PostgreSQL is not installed"
  if running; then
    say "stopping PostgreSQL on port $(port)"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t "$PG_WAIT" stop >&2 || true
  else
    say "PostgreSQL is not running (no live postmaster in $DATA)"
  fi
  if running; then
    die "PostgreSQL still runs; its data stays in $DATA"
  fi
  rm -rf "$DATA" "$SOCK" "$CREDS" "$PORT_FILE"
}

cmd_status() {
  BIN=$(bindir) || { say "PostgreSQL is not installed"; return 1; }
  if running && answers; then
    say "PostgreSQL runs on 127.0.0.1:$(port) and answers (data: $DATA)"
  elif running; then
    say "PostgreSQL runs (data: $DATA) but does not answer on port $(port)"
    return 1
  else
    say "PostgreSQL is not running"
    return 1
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
