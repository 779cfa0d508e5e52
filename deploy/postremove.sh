#!/bin/sh
# postrm of the ticketbridge .deb: forget the unit. The state in
# /var/lib/private/ticketbridge, the keys in /etc/ticketbridge/api-key and
# /etc/ticketbridge/keys, the hotels in /etc/ticketbridge/hotels.d, the
# helpdesk folder /srv/ticketbridge and the ticketbridge user and group are
# kept, also on purge: they are the operator's to delete.
set -e

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null || true
fi
if [ "$1" = purge ] && [ -d /run/systemd/system ]; then
	systemctl reset-failed ticketbridge.service >/dev/null 2>&1 || true
fi
exit 0
