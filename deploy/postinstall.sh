#!/bin/sh
# postinst of the ticketbridge .deb: make the ticketbridge user and group
# and the staff's helpdesk folder, make systemd see the unit, restart a
# running daemon after an upgrade, and tell a first installer what to do.
set -e

# The service's user and group. The unit keeps DynamicUser=yes (its
# sandbox), and systemd runs it as this static user because it exists: so
# the files it makes belong to a group that front-desk staff can join.
if ! getent group ticketbridge >/dev/null; then
	groupadd --system ticketbridge
fi
if ! getent passwd ticketbridge >/dev/null; then
	useradd --system --gid ticketbridge --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin --comment "ticketbridge service" ticketbridge
fi

# The files helpdesk's folder (TICKETBRIDGE_FILES_DIR of the packaged env
# file): the service's, group ticketbridge, setgid so that what staff drop
# into outbox/ and what the service writes share the group. Staff join with
# "usermod -aG ticketbridge NAME". Existing folders keep what the operator
# set.
helpdesk=/srv/ticketbridge/helpdesk
if [ ! -d /srv/ticketbridge ]; then
	install -d -o root -g ticketbridge -m 2750 /srv/ticketbridge
fi
for d in "$helpdesk" "$helpdesk/tickets" "$helpdesk/outbox" "$helpdesk/outbox/processed" "$helpdesk/outbox/failed"; do
	if [ ! -d "$d" ]; then
		install -d -o ticketbridge -g ticketbridge -m 2770 "$d"
	fi
done

# Many hotels: the hotels' env files, readable by the service (group
# ticketbridge), and their API keys, readable by the service's user only
# (staff who join the group for the files helpdesk must not read keys).
chgrp ticketbridge /etc/ticketbridge/hotels.d
if [ ! -d /etc/ticketbridge/keys ]; then
	install -d -o ticketbridge -g ticketbridge -m 0700 /etc/ticketbridge/keys
fi

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
	# An upgrade: the running daemon picks up the new binary.
	if [ -n "$2" ]; then
		systemctl try-restart ticketbridge.service >/dev/null || true
	fi
fi

if [ "$1" = configure ] && [ -z "$2" ]; then
	cat <<'MSG'
ticketbridge is installed but not started. Next:
  1. edit /etc/ticketbridge/ticketbridge.env (at least TICKETBRIDGE_API_URL
     and TICKETBRIDGE_ADAPTER with its settings);
  2. put the API key in /etc/ticketbridge/api-key and run
     chmod 600 /etc/ticketbridge/api-key;
  3. run: ticketbridge check
  4. run: systemctl enable --now ticketbridge
With the files helpdesk (the default), staff read and answer requests in
/srv/ticketbridge/helpdesk; let them in with: usermod -aG ticketbridge NAME
MSG
fi
exit 0
