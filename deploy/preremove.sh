#!/bin/sh
# prerm of the ticketbridge .deb: stop the daemon when the package is
# removed (not on upgrade: postinst restarts it then).
set -e

if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl disable --now ticketbridge.service >/dev/null 2>&1 || true
fi
exit 0
