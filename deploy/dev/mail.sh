#!/usr/bin/env bash
# mail.sh: a local Postfix and Dovecot for developing and testing
# ticketbridge's email helpdesk. Not for production: a throw-away
# configuration, certificates and mailboxes in one state folder, listening on
# 127.0.0.1 only, for the made-up domain hotel.test.
#
#   deploy/dev/mail.sh start    install Postfix and Dovecot when missing
#                               (Debian/Ubuntu, as root), make a CA and a
#                               server certificate, the users and their
#                               passwords, start both servers, print the
#                               lines to use
#   deploy/dev/mail.sh stop     stop both servers and delete their state
#   deploy/dev/mail.sh status   say what runs
#
# The servers, on fixed loopback ports:
#   127.0.0.1:10025  SMTP as the internet delivers it: no AUTH, any sender,
#                    recipients at hotel.test only (STARTTLS offered)
#   127.0.0.1:10587  submission: STARTTLS required, then AUTH
#   127.0.0.1:10465  submissions: implicit TLS, AUTH
#   127.0.0.1:10143  IMAP (STARTTLS offered; Dovecot counts loopback as
#                    secure, so a login without TLS works here)
#   127.0.0.1:10993  IMAPS (implicit TLS)
# The users bridge, frontdesk, housekeeping, maintenance and agent each have
# a mailbox (Maildir, delivered by Postfix over LMTP to Dovecot) and a
# password made at the first start, kept in a file readable by root only,
# one "user=password" line each. They log in with the bare name (agent) or
# the address (agent@hotel.test). Sub-addressing: mail to
# bridge+abc@hotel.test lands in bridge's INBOX, with the whole address in
# its Delivered-To header. A user submits as itself only: the envelope
# sender must be the user's address or one of its sub-addresses. Mail
# to an unknown user at hotel.test is accepted and then bounced (a DSN to the
# sender); a recipient at any other domain is refused at RCPT: nothing
# leaves this machine. Dovecot offers CONDSTORE and QRESYNC.
#
# `start` is idempotent: run twice, it finds both servers running and prints
# the same lines. It never touches the system's own Postfix or Dovecot
# instance (postfix -c and dovecot -c with files of its own); when
# installing starts them, it stops them again.
#
# Variables: MAIL_RUN_DIR (/var/tmp/ticketbridge-mail: configuration,
# certificates, mailboxes, queue, logs, passwords), MAIL_WAIT (30: seconds
# to wait for the servers to answer).
set -euo pipefail

MAIL_RUN_DIR="${MAIL_RUN_DIR:-/var/tmp/ticketbridge-mail}"
MAIL_WAIT="${MAIL_WAIT:-30}"
DOMAIN=hotel.test
USERS="bridge frontdesk housekeeping maintenance agent"
SMTP_PORT=10025
SUBMISSION_PORT=10587
SUBMISSIONS_PORT=10465
IMAP_PORT=10143
IMAPS_PORT=10993
PORTS="$SMTP_PORT $SUBMISSION_PORT $SUBMISSIONS_PORT $IMAP_PORT $IMAPS_PORT"

PF_DIR="$MAIL_RUN_DIR/postfix"       # main.cf, master.cf, maps
PF_QUEUE="$MAIL_RUN_DIR/spool"       # Postfix's queue
PF_DATA="$MAIL_RUN_DIR/postfix-data" # Postfix's data_directory
DC_DIR="$MAIL_RUN_DIR/dovecot"       # dovecot.conf, the users' file
DC_CONF="$DC_DIR/dovecot.conf"
DC_BASE="$MAIL_RUN_DIR/dovecot-run" # Dovecot's base_dir: sockets, pid
TLS_DIR="$MAIL_RUN_DIR/tls"
MAILBOXES="$MAIL_RUN_DIR/mailboxes"
PASSWORDS="$MAIL_RUN_DIR/passwords"
PF_LOG="$MAIL_RUN_DIR/postfix.log"
DC_LOG="$MAIL_RUN_DIR/dovecot.log"

say() { printf 'mail.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "$1 needs root (Postfix's master and Dovecot start as root and drop their rights): run as root"
}

installed() {
  [ -x /usr/sbin/postfix ] && [ -x /usr/sbin/dovecot ] && [ -x /usr/lib/dovecot/imap ] &&
    [ -x /usr/lib/dovecot/lmtp ] && command -v openssl >/dev/null
}

# system_running reports whether the system's own instance of Postfix or
# Dovecot runs (the one a package's install may start).
system_running() {
  case "$1" in
    postfix) /usr/sbin/postfix status >/dev/null 2>&1 ;;
    dovecot) [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null ;;
  esac
}

install_mail() {
  if installed; then
    return
  fi
  need_root "installing Postfix and Dovecot"
  command -v apt-get >/dev/null || die "Postfix and Dovecot are not installed and this is no Debian-like system: install postfix, dovecot-imapd, dovecot-lmtpd and openssl yourself"
  say "installing Postfix and Dovecot (apt-get)"
  local was_postfix="" was_dovecot=""
  system_running postfix && was_postfix=1
  system_running dovecot && was_dovecot=1
  # "No configuration": the package writes no main.cf, so its own instance
  # has nothing to run; this script's instance has a folder of its own.
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postfix dovecot-imapd dovecot-lmtpd openssl >&2
  installed || die "apt-get finished but postfix, dovecot's imap or lmtp, or openssl is missing"
  # Where the packages started the system's instances, stop them again:
  # this script runs instances of its own.
  if [ -z "$was_dovecot" ] && system_running dovecot; then
    say "stopping the system's Dovecot the package started"
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
      systemctl stop dovecot.service dovecot.socket >&2 || true
    else
      /usr/sbin/dovecot stop >&2 || true
    fi
  fi
  if [ -z "$was_postfix" ] && system_running postfix; then
    say "stopping the system's Postfix the package started"
    /usr/sbin/postfix stop >&2 || true
  fi
}

pf() { /usr/sbin/postfix -c "$PF_DIR" "$@"; }

postfix_running() { [ -f "$PF_DIR/main.cf" ] && pf status >/dev/null 2>&1; }

dovecot_pid() {
  [ -f "$DC_BASE/master.pid" ] || return 1
  local pid
  pid=$(cat "$DC_BASE/master.pid")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# make_tls makes a CA and a server certificate it signs, for mail.hotel.test,
# localhost and 127.0.0.1.
make_tls() {
  [ -f "$TLS_DIR/server.pem" ] && [ -f "$TLS_DIR/ca.pem" ] && return
  mkdir -p "$TLS_DIR"
  chmod 0755 "$TLS_DIR"
  say "making a CA and a server certificate in $TLS_DIR"
  (
    cd "$TLS_DIR"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -sha256 \
      -subj "/CN=ticketbridge development mail CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout ca.key -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=mail.$DOMAIN" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:mail.%s,DNS:localhost,IP:127.0.0.1\n' "$DOMAIN" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -sha256 \
      -extfile server.ext -out server.pem 2>/dev/null
    rm -f server.csr server.ext ca.srl
    chmod 0644 ca.pem server.pem
  ) || die "openssl could not make the certificates in $TLS_DIR"
}

# make_users makes each user's password (kept across starts) and Dovecot's
# users file.
make_users() {
  local u pw
  mkdir -p "$DC_DIR" "$MAILBOXES"
  (umask 077 && touch "$PASSWORDS")
  for u in $USERS; do
    if ! grep -q "^$u=" "$PASSWORDS"; then
      pw=$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy')
      printf '%s=%s\n' "$u" "$pw" >>"$PASSWORDS"
    fi
  done
  chmod 0600 "$PASSWORDS"
  # Dovecot's auth process runs as the user dovecot: the file is its.
  (
    umask 077
    sed -E 's/^([^=]+)=(.*)$/\1:{PLAIN}\2/' "$PASSWORDS" >"$DC_DIR/users"
  )
  chown dovecot: "$DC_DIR/users"
  chown mail:mail "$MAILBOXES"
  chmod 0700 "$MAILBOXES"
}

write_dovecot_conf() {
  mkdir -p "$DC_BASE"
  local dh=""
  [ -f /usr/share/dovecot/dh.pem ] && dh="ssl_dh = </usr/share/dovecot/dh.pem"
  cat >"$DC_CONF" <<EOF
# Written by ticketbridge deploy/dev/mail.sh: a development server only.
instance_name = ticketbridge-mail
hostname = mail.$DOMAIN
base_dir = $DC_BASE
state_dir = $DC_BASE/state
log_path = $DC_LOG
protocols = imap lmtp
listen = 127.0.0.1
ssl = yes
ssl_cert = <$TLS_DIR/server.pem
ssl_key = <$TLS_DIR/server.key
ssl_min_protocol = TLSv1.2
$dh
auth_mechanisms = plain login
# Users log in as "agent" or "agent@hotel.test"; the mailbox is agent's.
auth_username_format = %Ln
recipient_delimiter = +
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%n $DC_DIR/users
}
userdb {
  driver = static
  args = uid=mail gid=mail home=$MAILBOXES/%n
}
first_valid_uid = 8
first_valid_gid = 8
mail_location = maildir:~/Maildir
namespace inbox {
  inbox = yes
  separator = /
  mailbox Sent {
    special_use = \\Sent
    auto = create
  }
}
# Delivered-To carries the address as Postfix gave it: bridge+abc@hotel.test.
lmtp_hdr_delivery_address = final
lmtp_save_to_detail_mailbox = no
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $IMAP_PORT
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = $IMAPS_PORT
    ssl = yes
  }
}
service lmtp {
  unix_listener lmtp-postfix {
    mode = 0600
    user = postfix
    group = postfix
  }
}
service auth {
  unix_listener auth-postfix {
    mode = 0600
    user = postfix
    group = postfix
  }
}
EOF
}

write_postfix_conf() {
  mkdir -p "$PF_DIR" "$PF_QUEUE" "$PF_DATA"
  chown postfix: "$PF_DATA"
  # A user may send as itself (and its sub-addresses) only.
  printf '/^([^@+]+)(\\+[^@]*)?@%s$/ ${1}\n' "${DOMAIN//./\\.}" >"$PF_DIR/sender_logins"
  cat >"$PF_DIR/main.cf" <<EOF
# Written by ticketbridge deploy/dev/mail.sh: a development server only.
compatibility_level = 3.6
config_directory = $PF_DIR
queue_directory = $PF_QUEUE
data_directory = $PF_DATA
maillog_file = $PF_LOG
myhostname = mail.$DOMAIN
mydomain = $DOMAIN
myorigin = $DOMAIN
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
biff = no
# No local delivery, so no aliases.
alias_maps =
alias_database =
local_recipient_maps =
recipient_delimiter = +
# hotel.test's mailboxes are Dovecot's, over LMTP; Dovecot refuses an
# unknown user, so Postfix bounces that mail to its sender.
virtual_mailbox_domains = $DOMAIN
virtual_transport = lmtp:unix:$DC_BASE/lmtp-postfix
# Nothing leaves this machine: other domains are refused at RCPT.
default_transport = error:this development server delivers to $DOMAIN only
relay_transport = error:this development server delivers to $DOMAIN only
smtpd_relay_restrictions = permit_sasl_authenticated, reject_unauth_destination
smtpd_tls_chain_files = $TLS_DIR/server.key, $TLS_DIR/server.pem
smtpd_tls_security_level = may
smtpd_tls_auth_only = yes
smtpd_sasl_type = dovecot
smtpd_sasl_path = $DC_BASE/auth-postfix
smtpd_sender_login_maps = regexp:$PF_DIR/sender_logins
smtp_tls_security_level = none
# Bounces within seconds, not days.
maximal_queue_lifetime = 1h
bounce_queue_lifetime = 1h
EOF
  # No chroot (the sockets live in the state folder), no local delivery.
  cat >"$PF_DIR/master.cf" <<EOF
# Written by ticketbridge deploy/dev/mail.sh: a development server only.
127.0.0.1:$SMTP_PORT inet n - n - - smtpd
127.0.0.1:$SUBMISSION_PORT inet n - n - - smtpd
  -o syslog_name=postfix/submission
  -o smtpd_tls_security_level=encrypt
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_client_restrictions=permit_sasl_authenticated,reject
  -o smtpd_sender_restrictions=reject_sender_login_mismatch
  -o smtpd_relay_restrictions=permit_sasl_authenticated,reject
127.0.0.1:$SUBMISSIONS_PORT inet n - n - - smtpd
  -o syslog_name=postfix/submissions
  -o smtpd_tls_wrappermode=yes
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_client_restrictions=permit_sasl_authenticated,reject
  -o smtpd_sender_restrictions=reject_sender_login_mismatch
  -o smtpd_relay_restrictions=permit_sasl_authenticated,reject
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
EOF
}

start_dovecot() {
  local pid
  if pid=$(dovecot_pid); then
    say "Dovecot already runs (pid $pid)"
    return
  fi
  touch "$DC_LOG"
  chown dovecot: "$DC_LOG" 2>/dev/null || true
  /usr/sbin/dovecot -c "$DC_CONF" >&2 ||
    { tail -n 20 "$DC_LOG" >&2 || true; die "Dovecot did not start (log: $DC_LOG)"; }
}

start_postfix() {
  if postfix_running; then
    say "Postfix already runs"
    return
  fi
  # set-permissions makes the queue's folders with their owners.
  pf set-permissions >>"$PF_LOG" 2>&1 || true
  pf check >>"$PF_LOG" 2>&1 || { tail -n 20 "$PF_LOG" >&2; die "postfix check failed (log: $PF_LOG)"; }
  pf start >>"$PF_LOG" 2>&1 || { tail -n 20 "$PF_LOG" >&2; die "Postfix did not start (log: $PF_LOG)"; }
}

wait_for_ports() {
  local deadline=$((SECONDS + MAIL_WAIT)) p
  for p in $PORTS; do
    until port_open "$p"; do
      [ "$SECONDS" -lt "$deadline" ] || die "nothing answers on 127.0.0.1:$p within ${MAIL_WAIT}s (logs: $PF_LOG, $DC_LOG)"
      sleep 0.2
    done
  done
}

cmd_start() {
  install_mail
  need_root "starting Postfix and Dovecot"
  mkdir -p "$MAIL_RUN_DIR"
  chmod 0755 "$MAIL_RUN_DIR"
  if ! dovecot_pid >/dev/null || ! postfix_running; then
    local p
    for p in $PORTS; do
      if port_open "$p" && ! dovecot_pid >/dev/null && ! postfix_running; then
        die "something else listens on 127.0.0.1:$p; stop it first"
      fi
    done
    make_tls
    make_users
    write_dovecot_conf
    write_postfix_conf
    say "starting Dovecot and Postfix for $DOMAIN on 127.0.0.1 (state: $MAIL_RUN_DIR)"
  fi
  start_dovecot
  start_postfix
  wait_for_ports
  cat <<EOF
# Postfix $(/usr/sbin/postconf -c "$PF_DIR" -h mail_version) and Dovecot $(/usr/sbin/dovecot --version | cut -d' ' -f1) for $DOMAIN on 127.0.0.1 (state: $MAIL_RUN_DIR).
# Users: $USERS; passwords ("user=password") in the file below.
# Delivery as from the internet (no AUTH): 127.0.0.1:$SMTP_PORT
TICKETBRIDGE_TEST_MAIL_SMTP=127.0.0.1:$SUBMISSION_PORT
TICKETBRIDGE_TEST_MAIL_SMTPS=127.0.0.1:$SUBMISSIONS_PORT
TICKETBRIDGE_TEST_MAIL_IMAP=127.0.0.1:$IMAP_PORT
TICKETBRIDGE_TEST_MAIL_IMAPS=127.0.0.1:$IMAPS_PORT
TICKETBRIDGE_TEST_MAIL_DELIVERY=127.0.0.1:$SMTP_PORT
TICKETBRIDGE_TEST_MAIL_DOMAIN=$DOMAIN
TICKETBRIDGE_TEST_MAIL_PASSWORD_FILE=$PASSWORDS
TICKETBRIDGE_TEST_MAIL_CA=$TLS_DIR/ca.pem
EOF
}

cmd_stop() {
  local pid stopped=""
  if [ -f "$PF_DIR/main.cf" ] && postfix_running; then
    say "stopping Postfix"
    pf stop >>"$PF_LOG" 2>&1 || true
    stopped=1
  fi
  if pid=$(dovecot_pid); then
    say "stopping Dovecot (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 20))
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        die "Dovecot (pid $pid) did not stop within 20s; its state stays in $MAIL_RUN_DIR"
      fi
      sleep 0.2
    done
    stopped=1
  fi
  [ -n "$stopped" ] || say "neither Postfix nor Dovecot of $MAIL_RUN_DIR runs"
  if postfix_running; then
    die "Postfix still runs; its state stays in $MAIL_RUN_DIR"
  fi
  rm -rf "$MAIL_RUN_DIR"
}

cmd_status() {
  local pid rc=0
  if postfix_running; then
    say "Postfix runs: SMTP 127.0.0.1:$SMTP_PORT, submission :$SUBMISSION_PORT, submissions :$SUBMISSIONS_PORT"
  else
    say "Postfix is not running"
    rc=1
  fi
  if pid=$(dovecot_pid); then
    say "Dovecot runs (pid $pid): IMAP 127.0.0.1:$IMAP_PORT, IMAPS :$IMAPS_PORT"
  else
    say "Dovecot is not running"
    rc=1
  fi
  return "$rc"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
