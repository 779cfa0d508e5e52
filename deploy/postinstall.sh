#!/bin/sh
# postinst of the ticketbridge .deb: make systemd see the unit, restart a
# running daemon after an upgrade, and tell a first installer what to do.
set -e

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
MSG
fi
exit 0
