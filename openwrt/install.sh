#!/bin/sh
# Installs hearth on OpenWrt, or upgrades it, with nothing but busybox (ash, uclient-fetch or
# wget, sha256sum, tar) and procd (docs/openwrt.md):
#   sh openwrt/install.sh [--no-start]                  (from an unpacked release archive)
#   sh /usr/share/hearth/install.sh ARCHIVE [--no-start] (an upgrade, once installed)
#   sh /usr/share/hearth/install.sh --check              (only ask the running hearth, as below)
# ARCHIVE is a release archive's URL (https:// or http://), a file:// URL or a path, for example
# https://github.com/hearth-thermostat/hearth/releases/latest/download/hearth-armv7.tar.gz: its
# checksum, ARCHIVE.sha256 beside it, is read the same way and must match before anything is
# unpacked, and the binary inside must match its own hearth.sha256 and run here.
# Puts the binary in /usr/bin/hearth (through a temporary file and a rename), the init script in
# /etc/init.d/hearth, example settings in /etc/default/hearth (never overwriting one that exists),
# this script, the uninstaller and their functions (install-lib.sh) in /usr/share/hearth/, and
# /lib/upgrade/keep.d/hearth, so that a sysupgrade keeps the settings and the data (/etc/hearth);
# adds the user hearth that the service runs as; enables and (re)starts the service and prints
# the URL thermostats must be given. Running it again is safe, and the data is never touched.
# Not set -u: under it, busybox 1.35's wget run from ash fails without a word.
set -e

usage() { echo "usage: $0 [ARCHIVE] [--no-start] [--check]" >&2; exit 2; }
archive='' start=yes check_only=no
while [ $# -gt 0 ]; do
  case "$1" in
    --no-start) start=no ;;
    --check) check_only=yes ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [ -z "$archive" ] || usage; archive=$1 ;;
  esac
  shift
done
if [ "$check_only" = yes ] && { [ -n "$archive" ] || [ "$start" = no ]; }; then
  echo "install.sh: --check installs nothing: give it no archive or --no-start" >&2
  exit 2
fi
if [ "$(id -u)" != 0 ]; then
  echo "install.sh writes /usr/bin, /etc/init.d and /etc/default: run it as root" >&2
  exit 1
fi

bin_dst=/usr/bin/hearth
init_dst=/etc/init.d/hearth
default_dst=/etc/default/hearth
share=/usr/share/hearth

# Asks the hearth that runs with the settings of $default_dst (read by the init script's own
# hearth_setting) for the URL thermostats must be given, trying up to $1 times a second apart
# (procd starts it in the background), and prints it; fails, saying so, when it does not answer.
# The device port's /info wants no key, on the address the settings give it (SERVER_HOST; all
# addresses are asked on loopback), in HTTPS when CERT_DIR is set.
check_running() {
  [ -f "$init_dst" ] || { echo "hearth is not installed here ($init_dst is missing)" >&2; return 1; }
  # shellcheck source=openwrt/hearth.init
  . "$init_dst"
  host=$(hearth_setting SERVER_HOST)
  port=$(hearth_setting SERVER_PORT)
  host=${host:-0.0.0.0} port=${port:-8000} scheme=http url=''
  case "$host" in
    0.0.0.0) host=127.0.0.1 ;;
    :: | '[::]') host=::1 ;;
  esac
  case "$host" in
    *:*) where="[$host]:$port" ;;
    *) where="$host:$port" ;;
  esac
  # Our own HTTPS port: its certificate (the owner's, for a name) is not checked for an address.
  insecure=
  [ -z "$(hearth_setting CERT_DIR)" ] || scheme=https insecure=--no-check-certificate
  tries=$1
  while [ "$tries" -gt 0 ]; do
    tries=$((tries - 1))
    url=$(download "$scheme://$where/info" - 5 ${insecure:+"$insecure"} 2>/dev/null |
      sed -n 's/.*"cloudregisterurl":"\([^"]*\)".*/\1/p' || true)
    [ -z "$url" ] || break
    [ "$tries" = 0 ] || sleep 1
  done
  if [ -z "$url" ]; then
    echo "hearth did not answer on $scheme://$where/info (SERVER_HOST and SERVER_PORT in $default_dst)" >&2
    echo "  see: logread -e hearth" >&2
    return 1
  fi
  echo "hearth answers on $scheme://$where"
  echo
  echo "Point each thermostat's cloudregisterurl at: $url"
  echo "(wrong address? set API_ORIGIN in $default_dst and run: /etc/init.d/hearth restart)"
}

# Downloads the URL $1 to the file $2 (- for the output) with uclient-fetch (waiting at most $3
# seconds for the server, 30 if not given) or wget (busybox's may have no timeout); $4, if given,
# is another option for either. fetch_checked (install-lib.sh) downloads an archive with it.
download() {
  if command -v uclient-fetch >/dev/null 2>&1; then
    uclient-fetch -q -T "${3:-30}" ${4:+"$4"} -O "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q ${4:+"$4"} -O "$2" "$1"
  else
    echo "install.sh: neither uclient-fetch nor wget is here to download $1" >&2
    return 1
  fi
}

if [ "$check_only" = yes ]; then
  check_running 1
  exit
fi

# The archive (or this script's own folder, an unpacked archive) to install from.
if [ -n "$archive" ]; then
  # What both installers share (scripts/install-lib.sh): beside this script once installed, in
  # the unpacked archive's scripts/ before.
  lib=$(dirname "$0")/install-lib.sh
  [ -f "$lib" ] || lib=$(dirname "$0")/../scripts/install-lib.sh
  # shellcheck source=scripts/install-lib.sh
  . "$lib"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  fetch_checked "$archive" "$work/archive.tar.gz" || exit
  here=$(unpack_release "$work/archive.tar.gz" "$work/unpacked" "$archive") || exit
else
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ ! -f "$here/hearth" ]; then
    echo "install.sh: no hearth binary at $here/hearth: run the install.sh of an unpacked release archive, or give one:" >&2
    echo "  sh $0 https://github.com/hearth-thermostat/hearth/releases/latest/download/hearth-armv7.tar.gz" >&2
    exit 1
  fi
fi
for f in openwrt/hearth.init openwrt/install.sh openwrt/uninstall.sh scripts/install-lib.sh systemd/hearth.default \
  hearth.sha256; do
  [ -f "$here/$f" ] || { echo "install.sh: $here/$f is missing; nothing was installed" >&2; exit 1; }
done
# The binary's own checksum, made when it was built.
if ! (cd "$here" && sha256sum -c hearth.sha256 >/dev/null 2>&1); then
  echo "install.sh: $here/hearth does not match its hearth.sha256; nothing was installed" >&2
  exit 1
fi
if ! version=$("$here/hearth" --version 2>&1); then
  echo "install.sh: $here/hearth does not run on this router: $version" >&2
  echo "  (which build a router takes: docs/openwrt.md; uname -m says $(uname -m))" >&2
  exit 1
fi

# Copies $1 to $2 with mode $3 through a temporary file and a rename (atomic on one filesystem).
place() {
  if [ -f "$2" ] && [ "$(sha256sum <"$1")" = "$(sha256sum <"$2")" ]; then
    echo "unchanged  $2"
    return
  fi
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2.new.$$"
  chmod "$3" "$2.new.$$"
  mv -f "$2.new.$$" "$2"
  echo "installed  $2"
}

# The service's user and group, hearth, at the first id from 8082 up that neither file uses
# (OpenWrt's busybox has no adduser; its own packages write these lines the same way).
if ! grep -q '^hearth:' /etc/group 2>/dev/null || ! grep -q '^hearth:' /etc/passwd 2>/dev/null; then
  id=8082
  while cut -d: -f3 /etc/passwd /etc/group 2>/dev/null | grep -qx "$id"; do id=$((id + 1)); done
  if ! grep -q '^hearth:' /etc/group 2>/dev/null; then
    echo "hearth:x:$id:" >>/etc/group
  fi
  gid=$(sed -n 's/^hearth:[^:]*:\([0-9]*\):.*/\1/p' /etc/group)
  if ! grep -q '^hearth:' /etc/passwd 2>/dev/null; then
    echo "hearth:x:$id:$gid:hearth:/var/run/hearth:/bin/false" >>/etc/passwd
    [ ! -f /etc/shadow ] || echo "hearth:*:0:0:99999:7:::" >>/etc/shadow
  fi
  echo "added      the user hearth ($id)"
fi

place "$here/hearth" "$bin_dst" 0755
place "$here/openwrt/hearth.init" "$init_dst" 0755
if [ -e "$default_dst" ]; then
  echo "kept       $default_dst (your settings)"
else
  # 0600: it may hold MQTT_PASSWORD.
  place "$here/systemd/hearth.default" "$default_dst" 0600
fi
place "$here/openwrt/install.sh" "$share/install.sh" 0755
place "$here/openwrt/uninstall.sh" "$share/uninstall.sh" 0755
place "$here/scripts/install-lib.sh" "$share/install-lib.sh" 0644
place "$here/systemd/hearth.default" "$share/hearth.default" 0644
keep=$(mktemp)
printf '%s\n' "$default_dst" /etc/hearth/ >"$keep"
place "$keep" /lib/upgrade/keep.d/hearth 0644
rm -f "$keep"

if [ ! -f /etc/rc.common ] || [ ! -x /sbin/procd ]; then
  echo "procd is not running here: start hearth with the command $init_dst gives procd"
  exit 0
fi
"$init_dst" enable
if [ "$start" = no ]; then
  echo "enabled; start it with: $init_dst start"
  exit 0
fi
"$init_dst" restart && echo "(re)started hearth"
check_running 10
