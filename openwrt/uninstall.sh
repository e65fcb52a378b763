#!/bin/sh
# Removes what openwrt/install.sh added, and keeps the data (docs/openwrt.md):
#   sh /usr/share/hearth/uninstall.sh
# Stops and disables the service, removes /usr/bin/hearth, /etc/init.d/hearth, /usr/share/hearth/
# and /lib/upgrade/keep.d/hearth, and removes /etc/default/hearth only if it is still the
# untouched example. The data (/etc/hearth, or the settings' DATA_DIR) and the user hearth that
# owns it are kept. Running it again is safe.
# Not set -u: under it, busybox 1.35's wget run from ash fails without a word.
set -e

case "${1:-}" in
  '') ;;
  -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "uninstall.sh removes files from /usr/bin, /etc/init.d and /etc/default: run it as root" >&2
  exit 1
fi

init=/etc/init.d/hearth
settings=/etc/default/hearth
share=/usr/share/hearth
data=/etc/hearth
# remove and remove_settings, shared with the systemd uninstaller (scripts/install-lib.sh): beside
# this script once installed, in the unpacked archive's scripts/ before.
lib=$(dirname "$0")/install-lib.sh
[ -f "$lib" ] || lib=$(dirname "$0")/../scripts/install-lib.sh
# shellcheck source=scripts/install-lib.sh
. "$lib"
if [ -f "$init" ]; then
  # shellcheck source=openwrt/hearth.init
  . "$init"
  data=$(hearth_setting DATA_DIR)
  data=${data:-$HEARTH_DATA_DIR}
  if [ -f /etc/rc.common ] && [ -x /sbin/procd ]; then
    "$init" stop || true
    "$init" disable || true
    echo "stopped and disabled hearth"
  fi
fi

remove "$init"
remove /usr/bin/hearth
remove /lib/upgrade/keep.d/hearth
remove_settings "$settings" "$share/hearth.default"
for f in install.sh uninstall.sh install-lib.sh hearth.default; do remove "$share/$f"; done
rmdir "$share" 2>/dev/null || true
echo "data kept in $data, owned by the user hearth (delete both yourself if you want them gone)"
