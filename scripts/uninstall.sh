#!/usr/bin/env bash
# Removes what scripts/install.sh added, and keeps the data:
#   sudo scripts/uninstall.sh
#   scripts/uninstall.sh --root DIR            (a staged tree; no root, no systemctl)
#
# Stops and disables the service, removes /usr/local/bin/hearth and the unit, and removes
# /etc/default/hearth only if it is still the untouched example (your settings stay otherwise).
# The thermostats' state, users and keys in /var/lib/hearth are never touched. Running it
# again is safe.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: $0 [--root DIR]" >&2; exit 2; }

root=
while [ $# -gt 0 ]; do
  case "$1" in
    --root) [ $# -ge 2 ] || usage; root=${2%/}; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done

if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
  echo "uninstall.sh removes files from /usr/local/bin, /etc/systemd/system and /etc/default: run it as root" >&2
  echo "  sudo $0 $*" >&2
  exit 1
fi
if [ -n "$root" ] && [ ! -d "$root" ]; then
  echo "uninstall.sh: --root $root is not a directory" >&2
  exit 1
fi

# remove and remove_settings, shared with the OpenWrt uninstaller.
# shellcheck source=scripts/install-lib.sh
. "$here/scripts/install-lib.sh"

bin_dst=$root/usr/local/bin/hearth
unit_dst=$root/etc/systemd/system/hearth.service
default_dst=$root/etc/default/hearth
systemd_live=no
if [ -z "$root" ] && [ -d /run/systemd/system ]; then systemd_live=yes; fi

if [ "$systemd_live" = yes ] && systemctl cat hearth.service >/dev/null 2>&1; then
  systemctl disable --now hearth.service 2>&1 | sed 's/^/  /' || true
  echo "stopped and disabled hearth"
fi

remove "$unit_dst"
remove "$bin_dst"
remove_settings "$default_dst" "$here/systemd/hearth.default"

if [ "$systemd_live" = yes ]; then
  systemctl daemon-reload
  systemctl reset-failed hearth.service >/dev/null 2>&1 || true
fi
echo "data kept in $root/var/lib/private/hearth, reached as /var/lib/hearth (delete it yourself if you want it gone)"
