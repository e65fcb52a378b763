#!/usr/bin/env bash
# Installs hearth as a systemd service, or upgrades an installed one:
#   sudo scripts/install.sh [--binary PATH] [--no-start]
#   scripts/install.sh --root DIR [--binary PATH]     (stage into DIR; no root, no systemctl)
#
# Puts the binary in /usr/local/bin/hearth (replaced atomically, so an upgrade never leaves a
# half-written file), the unit in /etc/systemd/system/hearth.service and an example
# /etc/default/hearth (never overwriting one that exists), reloads systemd, enables the service
# and (re)starts it, then prints the URL thermostats must be given. Running it again is safe.
# The binary defaults to ./hearth beside scripts/ (a release archive) or target/release/hearth.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: $0 [--binary PATH] [--root DIR] [--no-start]" >&2; exit 2; }

binary= root= start=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || usage; binary=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || usage; root=${2%/}; shift 2 ;;
    --no-start) start=no; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
done

if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
  echo "install.sh writes /usr/local/bin, /etc/systemd/system and /etc/default: run it as root" >&2
  echo "  sudo $0 $*" >&2
  exit 1
fi
if [ -n "$root" ] && [ ! -d "$root" ]; then
  echo "install.sh: --root $root is not a directory" >&2
  exit 1
fi

if [ -z "$binary" ]; then
  for candidate in "$here/hearth" "$here/target/release/hearth"; do
    if [ -f "$candidate" ]; then binary=$candidate; break; fi
  done
fi
if [ -z "$binary" ] || [ ! -f "$binary" ]; then
  echo "install.sh: no hearth binary${binary:+ at $binary}; pass --binary PATH" >&2
  echo "  (build one with 'cargo build --release' or 'cross/build.sh')" >&2
  exit 1
fi
unit_src=$here/systemd/hearth.service
default_src=$here/systemd/hearth.default
for f in "$unit_src" "$default_src"; do
  [ -f "$f" ] || { echo "install.sh: $f is missing (run the script from hearth's tree)" >&2; exit 1; }
done
# On the real system, make sure the binary runs here (an aarch64 build on a 32-bit OS does not).
if [ -z "$root" ] && ! version=$("$binary" --version 2>&1); then
  echo "install.sh: $binary does not run on this machine: $version" >&2
  echo "  (64-bit OS: the aarch64 build; 32-bit ARM OS: the armv7 build; see the README)" >&2
  exit 1
fi

bin_dst=$root/usr/local/bin/hearth
unit_dst=$root/etc/systemd/system/hearth.service
default_dst=$root/etc/default/hearth

# Copies $1 to $2 with mode $3 through a temporary file and a rename (atomic on one filesystem).
place() {
  local src=$1 dst=$2 mode=$3
  if [ -f "$dst" ] && cmp -s "$src" "$dst"; then
    echo "unchanged  $dst"
    return
  fi
  mkdir -p "$(dirname "$dst")"
  install -m "$mode" "$src" "$dst.new.$$"
  mv -f "$dst.new.$$" "$dst"
  echo "installed  $dst"
}

place "$binary" "$bin_dst" 0755
place "$unit_src" "$unit_dst" 0644
if [ -e "$default_dst" ]; then
  echo "kept       $default_dst (your settings)"
else
  # 0600: it may hold MQTT_PASSWORD. systemd reads it as root before starting the service.
  place "$default_src" "$default_dst" 0600
fi

if [ -n "$root" ]; then
  echo "staged into $root; on the target: systemctl daemon-reload && systemctl enable --now hearth"
  exit 0
fi
if [ ! -d /run/systemd/system ]; then
  echo "systemd is not running here: start hearth with '$bin_dst serve --data-dir /var/lib/hearth'"
  exit 0
fi

systemctl daemon-reload
systemctl enable hearth.service 2>&1 | sed 's/^/  /'
if [ "$start" = no ]; then
  echo "enabled; start it with: systemctl start hearth"
  exit 0
fi
if systemctl is-active --quiet hearth.service; then
  systemctl restart hearth.service && echo "restarted hearth"
else
  systemctl start hearth.service && echo "started hearth"
fi

# Ask the running server (Type=notify: it is serving once start returns) for the URL.
port=$(sed -n 's/^[[:space:]]*CONTROL_PORT=[[:space:]]*"\{0,1\}\([0-9]*\).*/\1/p' "$default_dst" | tail -n1)
port=${port:-8082}
info=
for _ in 1 2 3 4 5 6 7 8 9 10; do
  if info=$(exec 3<>"/dev/tcp/127.0.0.1/$port" &&
      printf 'GET /info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3 &&
      cat <&3); then
    break
  fi
  sleep 1
done
url=$(printf '%s' "$info" | grep -o '"cloudregisterurl":"[^"]*"' | cut -d'"' -f4 || true)
if [ -n "$url" ]; then
  echo
  echo "Point each thermostat's cloudregisterurl at: $url"
  echo "(wrong address? set API_ORIGIN in $default_dst and run: systemctl restart hearth)"
else
  echo "hearth did not answer on port $port; see: journalctl -u hearth -n 50" >&2
  exit 1
fi
