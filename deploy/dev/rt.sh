#!/usr/bin/env bash
# rt.sh: a local Request Tracker 5 for developing and testing ticketbridge's
# rt adapter. Not for production: it runs RT's standalone server on SQLite,
# as Debian packages it, with the package's default root password.
#
#   deploy/dev/rt.sh start    install RT when missing (Debian/Ubuntu, as root),
#                             start it on ${RT_PORT:-8080}, create what the
#                             bridge needs, print the TICKETBRIDGE_RT_* lines
#   deploy/dev/rt.sh stop     stop the server started by `start`
#   deploy/dev/rt.sh status   say whether it runs and answers
#
# `start` is idempotent: run twice, it finds the server running, creates
# nothing twice and prints the same credentials (kept, readable by root
# only, next to the pid file, and renewed only when RT no longer accepts
# them). What it creates in RT (only when missing):
#   - the queue Housekeeping (the department mapping's example) next to General;
#   - the ticket custom fields "Guest Request ID" (one value) and
#     "Guest Request Sent" (many values), applied to all queues;
#   - the user ticketbridge with exactly the rights the adapter needs, on all
#     queues (so that tests can make queues of their own), and an auth token;
#   - the user agent, a second privileged user the tests act as in RT.
# The tests also get root's credentials, to make queues of their own.
#
# Variables: RT_PORT (8080), RT_RUN_DIR (/var/tmp/ticketbridge-rt: pid file
# and server log), RT_WAIT (120: seconds to wait for REST2 to answer),
# RT_BCRYPT_COST (4). RT checks the password or token of every REST2 request
# with bcrypt; at RT's default cost of 12 that is about a quarter of a second
# per request, which would make the tests crawl, so this development RT uses
# a cost of 4. Set RT_BCRYPT_COST=12 (before the first start, or stop first)
# to measure with a production RT's cost.
set -euo pipefail

RT_PORT="${RT_PORT:-8080}"
RT_RUN_DIR="${RT_RUN_DIR:-/var/tmp/ticketbridge-rt}"
RT_WAIT="${RT_WAIT:-120}"
RT_BCRYPT_COST="${RT_BCRYPT_COST:-4}"
SITE_CONFIG=/etc/request-tracker5/RT_SiteConfig.d/90-ticketbridge-dev.pm
RT_HOME=/usr/share/request-tracker5
RT_SERVER="$RT_HOME/libexec/rt-server"
PID_FILE="$RT_RUN_DIR/rt-$RT_PORT.pid"
LOG_FILE="$RT_RUN_DIR/rt-$RT_PORT.log"
BASE="http://127.0.0.1:$RT_PORT"

say() { printf 'rt.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

install_rt() {
  if [ -x "$RT_SERVER" ] && command -v curl >/dev/null; then
    return
  fi
  [ "$(id -u)" = 0 ] || die "Request Tracker is not installed and installing it needs root: run as root, or install request-tracker5 rt5-db-sqlite rt5-standalone curl yourself"
  command -v apt-get >/dev/null || die "Request Tracker is not installed and this is no Debian-like system: install Request Tracker 5 with SQLite and its standalone server yourself"
  say "installing Request Tracker 5 (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends request-tracker5 rt5-db-sqlite rt5-standalone curl >&2
  [ -x "$RT_SERVER" ] || die "apt-get finished but $RT_SERVER is missing"
}

running_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid=$(cat "$PID_FILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# answers prints REST2's HTTP status for an authenticated request, 000 when
# nothing answers.
answers() {
  curl -s -o /dev/null -m 10 -w '%{http_code}' -u root:password "$BASE/REST/2.0/rt" 2>/dev/null || true
}

wait_for_rest() {
  local deadline=$((SECONDS + RT_WAIT)) code
  while :; do
    code=$(answers)
    case "$code" in
      200) return 0 ;;
      401) die "RT answers on $BASE but refuses root with the default password; this script expects a fresh install" ;;
    esac
    if ! running_pid >/dev/null; then
      say "the RT server exited before REST2 answered; the end of $LOG_FILE:"
      tail -n 30 "$LOG_FILE" >&2 || true
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "REST2 did not answer on $BASE/REST/2.0 within ${RT_WAIT}s (last HTTP status: $code); the end of $LOG_FILE:"
      tail -n 30 "$LOG_FILE" >&2 || true
      exit 1
    fi
    sleep 1
  done
}

# configure writes this development RT's own settings (read at start).
configure() {
  if ! [[ "$RT_BCRYPT_COST" =~ ^[0-9]+$ ]] || [ "$RT_BCRYPT_COST" -lt 4 ] || [ "$RT_BCRYPT_COST" -gt 31 ]; then
    die "RT_BCRYPT_COST=$RT_BCRYPT_COST: want a number from 4 to 31"
  fi
  local want
  want=$(printf '# Written by ticketbridge deploy/dev/rt.sh: a development RT only.\nSet($BcryptCost, %d);\n' "$RT_BCRYPT_COST")
  if [ "$(cat "$SITE_CONFIG" 2>/dev/null)" != "$want" ]; then
    [ -w "$(dirname "$SITE_CONFIG")" ] || die "cannot write $SITE_CONFIG: run as root"
    printf '%s\n' "$want" >"$SITE_CONFIG"
    if running_pid >/dev/null; then
      say "RT's settings changed; restarting it"
      cmd_stop
    fi
  fi
}

start_server() {
  mkdir -p "$RT_RUN_DIR"
  if pid=$(running_pid); then
    say "RT already runs on $BASE (pid $pid)"
    wait_for_rest
    return
  fi
  if [ "$(answers)" != "000" ]; then
    die "something else answers on port $RT_PORT; stop it or choose another RT_PORT"
  fi
  say "starting RT on $BASE (log: $LOG_FILE)"
  # setsid: the server and its prefork workers form one process group that
  # stop can end together.
  setsid "$RT_SERVER" --port "$RT_PORT" >"$LOG_FILE" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  wait_for_rest
  say "RT answers on $BASE/REST/2.0"
}

# setup creates (when missing) the queues, custom fields, users and rights,
# renews the token and the agent's password, and prints the variables.
setup() {
  perl -I"$RT_HOME/lib" - 2>>"$LOG_FILE" <<'PERL'
use strict;
use warnings;
use RT;
RT::LoadConfig();
RT::Init();

my $sys = RT->SystemUser;
sub check { my ($ok, $msg, $what) = @_; die "rt.sh: $what: $msg\n" unless $ok; }

# Queues: General exists on a fresh install; Housekeeping shows the
# department mapping.
my @queues;
for my $name ('General', 'Housekeeping') {
    my $q = RT::Queue->new($sys);
    $q->Load($name);
    unless ($q->id) {
        my ($ok, $msg) = $q->Create(Name => $name, Description => 'Guest requests from ticketbridge');
        check($ok, $msg, "create queue $name");
    }
    push @queues, $q;
}

# Ticket custom fields, applied to each queue.
my %cf_spec = (
    'Guest Request ID'   => [1, 'The guest request this ticket mirrors (set by ticketbridge)'],
    'Guest Request Sent' => [0, 'Replies and status changes ticketbridge delivered to the guest request'],
);
for my $name (sort keys %cf_spec) {
    my ($max, $desc) = @{ $cf_spec{$name} };
    my $cf = RT::CustomField->new($sys);
    $cf->LoadByName(Name => $name, LookupType => RT::Ticket->CustomFieldLookupType);
    unless ($cf->id) {
        my ($ok, $msg) = $cf->Create(Name => $name, Type => 'Freeform', MaxValues => $max,
            LookupType => RT::Ticket->CustomFieldLookupType, Description => $desc);
        check($ok, $msg, "create custom field $name");
    }
    # Applied to all queues, so that the tests can make queues of their
    # own; a production RT applies them to the bridge's queues only.
    unless ($cf->IsGlobal) {
        my ($ok, $msg) = $cf->AddToObject(RT::Queue->new($sys));
        check($ok, $msg, "apply custom field $name to all queues");
    }
}

sub user {
    my ($name, $real) = @_;
    my $u = RT::User->new($sys);
    $u->Load($name);
    unless ($u->id) {
        my ($ok, $msg) = $u->Create(Name => $name, RealName => $real, Privileged => 1,
            EmailAddress => "$name\@ticketbridge.invalid");
        check($ok, $msg, "create user $name");
    }
    return $u;
}

# Rights are granted on all queues (RT's global level), so that the tests
# can make queues of their own; a production RT grants them on the
# bridge's queues only.
sub grant {
    my ($u, @rights) = @_;
    for my $right (@rights) {
        next if $u->PrincipalObj->HasRight(Right => $right, Object => RT->System);
        my ($ok, $msg) = $u->PrincipalObj->GrantRight(Right => $right, Object => RT->System);
        check($ok, $msg, "grant $right to " . $u->Name);
    }
}

sub password {
    my @c = ('a'..'z', 'A'..'Z', 0..9);
    return join '', map { $c[rand @c] } 1..24;
}

# The bridge: see and create tickets in its queues, reply and comment, read
# comments, set the status, read and set the custom fields. Nothing else.
my $bridge = user('ticketbridge', 'ticketbridge');
grant($bridge, qw(SeeQueue ShowTicket CreateTicket ModifyTicket ReplyToTicket
    CommentOnTicket ShowTicketComments SeeCustomField ModifyCustomField));

# A support agent for the tests: what a person in the support team has.
my $agent = user('agent', 'Alex Agent');
grant($agent, qw(SeeQueue ShowTicket CreateTicket ModifyTicket ReplyToTicket
    CommentOnTicket ShowTicketComments SeeCustomField ModifyCustomField OwnTicket
    DeleteTicket));

# The credentials handed out by an earlier start are kept while RT still
# accepts them, so that a second start never pulls them from under a test
# run or a bridge that uses them. (RT keeps only a hash of a token: the
# value itself lives in the credentials file next to the pid file.)
my ($auth, $bridge_pw, $agent_pw) = @ENV{qw(RT_SH_TOKEN RT_SH_BRIDGE_PASSWORD RT_SH_AGENT_PASSWORD)};
my ($token_user) = $auth ? RT::Authen::Token->UserForAuthString($auth) : ();
unless ($token_user && $token_user->id == $bridge->id) {
    # A fresh token; older ones of this script are revoked.
    my $tokens = RT::AuthTokens->new($sys);
    $tokens->LimitOwner(VALUE => $bridge->id);
    while (my $t = $tokens->Next) {
        $t->Delete if ($t->Description // '') eq 'ticketbridge (deploy/dev/rt.sh)';
    }
    my $token = RT::AuthToken->new($sys);
    my ($tid, $tmsg);
    ($tid, $tmsg, $auth) = $token->Create(Owner => $bridge->id, Description => 'ticketbridge (deploy/dev/rt.sh)');
    check($tid, $tmsg, 'create auth token');
}
for my $who ([$bridge, \$bridge_pw], [$agent, \$agent_pw]) {
    my ($u, $pw) = @$who;
    next if $$pw && $u->IsPassword($$pw);
    $$pw = password();
    my ($ok, $msg) = $u->SetPassword($$pw);
    check($ok, $msg, 'set the password of ' . $u->Name);
}

print "TICKETBRIDGE_RT_TOKEN=$auth\n";
print "TICKETBRIDGE_RT_TEST_BRIDGE_USER=ticketbridge\n";
print "TICKETBRIDGE_RT_TEST_BRIDGE_PASSWORD=$bridge_pw\n";
print "TICKETBRIDGE_RT_TEST_AGENT_USER=agent\n";
print "TICKETBRIDGE_RT_TEST_AGENT_PASSWORD=$agent_pw\n";
print "TICKETBRIDGE_RT_TEST_ADMIN_USER=root\n";
print "TICKETBRIDGE_RT_TEST_ADMIN_PASSWORD=password\n";
PERL
}

cmd_start() {
  install_rt
  configure
  start_server
  local vars creds="$RT_RUN_DIR/credentials"  # one RT database, whatever the port
  local RT_SH_TOKEN="" RT_SH_BRIDGE_PASSWORD="" RT_SH_AGENT_PASSWORD=""
  if [ -f "$creds" ]; then
    RT_SH_TOKEN=$(sed -n 's/^TICKETBRIDGE_RT_TOKEN=//p' "$creds")
    RT_SH_BRIDGE_PASSWORD=$(sed -n 's/^TICKETBRIDGE_RT_TEST_BRIDGE_PASSWORD=//p' "$creds")
    RT_SH_AGENT_PASSWORD=$(sed -n 's/^TICKETBRIDGE_RT_TEST_AGENT_PASSWORD=//p' "$creds")
  fi
  if ! vars=$(RT_SH_TOKEN="$RT_SH_TOKEN" RT_SH_BRIDGE_PASSWORD="$RT_SH_BRIDGE_PASSWORD" RT_SH_AGENT_PASSWORD="$RT_SH_AGENT_PASSWORD" setup); then
    say "setting up users, custom fields and rights failed; the end of $LOG_FILE:"
    tail -n 30 "$LOG_FILE" >&2 || true
    exit 1
  fi
  (umask 077 && printf '%s\n' "$vars" >"$creds")
  cat <<EOF
# Request Tracker on $BASE (pid $(cat "$PID_FILE")); paste into the env file.
TICKETBRIDGE_ADAPTER=rt
TICKETBRIDGE_RT_URL=$BASE
$(grep '^TICKETBRIDGE_RT_TOKEN=' <<<"$vars")
TICKETBRIDGE_RT_QUEUE=General
TICKETBRIDGE_RT_QUEUES=housekeeping=Housekeeping
# For the adapter's tests only (the agent acts in RT as a person would):
$(grep '^TICKETBRIDGE_RT_TEST_' <<<"$vars")
# RT's web UI: $BASE/rt/ (root / password; agent / the password above)
EOF
}

cmd_stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$PID_FILE"
    say "RT is not running on port $RT_PORT (no live pid in $PID_FILE)"
    return 0
  fi
  say "stopping RT (pid $pid)"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "RT did not stop within 20s; killing it"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$PID_FILE"
}

cmd_status() {
  local pid
  if pid=$(running_pid); then
    say "RT runs on $BASE (pid $pid); REST2 answers with HTTP $(answers)"
  else
    say "RT is not running on port $RT_PORT"
    return 1
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
