#!/usr/bin/env bash
# Installs hearth as a systemd service, or upgrades an installed one:
#   sudo scripts/install.sh [ARCHIVE] [--binary PATH] [--no-start]
#   scripts/install.sh --root DIR [ARCHIVE] [--binary PATH]   (stage into DIR; no root, no systemctl)
#   sudo scripts/install.sh --check [--root DIR]   (only ask the running hearth, as below)
#
# ARCHIVE is a release archive's URL (http:// or https://), a file:// URL or a path, for example
# https://github.com/hearth-thermostat/hearth/releases/latest/download/hearth-aarch64.tar.gz:
# its checksum, ARCHIVE.sha256 beside it, is fetched the same way and must match before
# anything is unpacked or installed; then the binary, unit and example settings are the archive's.
# Puts the binary in /usr/local/bin/hearth (replaced atomically, so an upgrade never leaves a
# half-written file), the unit in /etc/systemd/system/hearth.service and an example
# /etc/default/hearth (never overwriting one that exists), reloads systemd, enables the service
# and (re)starts it, then prints the URL thermostats must be given. Running it again is safe, and
# the data directory (/var/lib/hearth) is never touched: an upgrade is this same command.
# Without ARCHIVE, the binary is ./hearth beside scripts/ (a release archive) or target/release/hearth.
# A binary built for another architecture than this system's userland is refused (the unit would
# kill it), with the archive to take instead. Last, the running hearth is asked for that URL on
# its device port (the address and port in the settings; no key needed): exit 0 when it answers.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: $0 [ARCHIVE] [--binary PATH] [--root DIR] [--no-start] [--check]" >&2; exit 2; }

given=("$@")
archive='' binary='' root='' start=yes check_only=no
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || usage; binary=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || usage; root=${2%/}; shift 2 ;;
    --no-start) start=no; shift ;;
    --check) check_only=yes; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [ -z "$archive" ] || usage; archive=$1; shift ;;
  esac
done
if [ -n "$archive" ] && [ -n "$binary" ]; then
  echo "install.sh: give a release archive or --binary, not both" >&2
  exit 2
fi
if [ "$check_only" = yes ] && { [ -n "$archive" ] || [ -n "$binary" ] || [ "$start" = no ]; }; then
  echo "install.sh: --check installs nothing: give it no archive, --binary or --no-start" >&2
  exit 2
fi

if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
  if [ "$check_only" = yes ]; then
    echo "install.sh --check reads /etc/default/hearth (mode 0600): run it as root" >&2
  else
    echo "install.sh writes /usr/local/bin, /etc/systemd/system and /etc/default: run it as root" >&2
  fi
  echo "  sudo $0 ${given[*]}" >&2
  exit 1
fi
if [ -n "$root" ] && [ ! -d "$root" ]; then
  echo "install.sh: --root $root is not a directory" >&2
  exit 1
fi

# The architecture the ELF file $1 is built for, as the archives name them (aarch64, armv7,
# x86_64; others by their ELF class and machine number), or nothing if $1 is not an ELF file.
elf_arch() {
  local b
  [ -f "$1" ] && [ -r "$1" ] || return 0
  read -ra b <<<"$(od -An -tu1 -N20 "$1" 2>/dev/null | tr -s ' \n' '  ')"
  [ "${#b[@]}" = 20 ] && [ "${b[*]:0:4}" = "127 69 76 70" ] || return 0
  case "${b[4]}:$((b[18] + 256 * b[19]))" in
    2:183) echo aarch64 ;;
    1:40) echo armv7 ;;
    2:62) echo x86_64 ;;
    1:3) echo x86 ;;
    *) echo "elf${b[4]}-machine-$((b[18] + 256 * b[19]))" ;;
  esac
}

# Words for an architecture elf_arch names.
arch_name() {
  case "$1" in
    aarch64) echo "64-bit ARM (aarch64, arm64)" ;;
    armv7) echo "32-bit ARM (armv7, armhf)" ;;
    x86_64) echo "64-bit x86 (x86_64, amd64)" ;;
    x86) echo "32-bit x86 (i386)" ;;
    *) echo "another architecture ($1)" ;;
  esac
}

bin_dst=$root/usr/local/bin/hearth
unit_dst=$root/etc/systemd/system/hearth.service
default_dst=$root/etc/default/hearth

# The value setting $1 has in the settings file, read as systemd's EnvironmentFile= reads it: the
# last VARIABLE=value line, without the spaces and the one pair of quotes around the value.
setting() {
  [ -f "$default_dst" ] || return 0
  sed -n "s/^[[:space:]]*$1=[[:space:]]*//p" "$default_dst" | tail -n1 |
    sed -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/' -e "s/^'\(.*\)'$/\1/"
}

# Asks the hearth that runs with these settings for the URL thermostats must be given, trying up
# to $1 times a second apart, and prints it; fails, saying so, when it does not answer. The
# device port's /info wants no key (CONTROL_REQUIRE_KEY guards the control port's), on the
# address the settings give it (SERVER_HOST; all addresses are asked on loopback) and in HTTPS
# when CERT_DIR is set (which needs curl).
check_running() {
  local tries=$1 i host port scheme=http where info="" url=""
  host=$(setting SERVER_HOST)
  port=$(setting SERVER_PORT)
  host=${host:-0.0.0.0} port=${port:-8000}
  case "$host" in
    0.0.0.0) host=127.0.0.1 ;;
    :: | '[::]') host=::1 ;;
  esac
  [ -z "$(setting CERT_DIR)" ] || scheme=https
  case "$host" in
    *:*) where="[$host]:$port" ;;
    *) where="$host:$port" ;;
  esac
  if [ "$scheme" = https ] && ! command -v curl >/dev/null 2>&1; then
    echo "hearth's ports speak HTTPS (CERT_DIR) and curl is not installed to ask $where/info for the URL" >&2
    return 1
  fi
  for ((i = 1; i <= tries; i++)); do
    if [ "$scheme" = https ]; then
      info=$(curl -sk --max-time 5 "https://$where/info" || true)
    else
      # shellcheck disable=SC2016 # expanded by the inner bash
      info=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2" &&
        printf "GET /info HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" "$3" >&3 &&
        cat <&3' _ "$host" "$port" "$where" 2>/dev/null || true)
    fi
    url=$(printf '%s' "$info" | grep -o '"cloudregisterurl":"[^"]*"' | cut -d'"' -f4 || true)
    [ -z "$url" ] && [ "$i" -lt "$tries" ] && sleep 1 && continue
    break
  done
  if [ -z "$url" ]; then
    echo "hearth did not answer on $scheme://$where/info (SERVER_HOST and SERVER_PORT in $default_dst)" >&2
    return 1
  fi
  echo "hearth answers on $scheme://$where"
  echo
  echo "Point each thermostat's cloudregisterurl at: $url"
  echo "(wrong address? set API_ORIGIN in $default_dst and run: systemctl restart hearth)"
}

if [ "$check_only" = yes ]; then
  check_running 1 || { echo "  see: journalctl -u hearth -n 50" >&2; exit 1; }
  exit 0
fi

if [ -n "$archive" ]; then
  # Downloads the URL $1 to the file $2 for fetch_checked: bounded in time and size.
  download() {
    command -v curl >/dev/null 2>&1 ||
      { echo "install.sh: curl is needed to download $1 (or download it yourself and give its path)" >&2; return 1; }
    # --max-filesize holds only when the server sends a length; head holds otherwise.
    curl -fsSL --proto '=http,https' --proto-redir '=https' --max-redirs 5 \
      --connect-timeout 20 --max-time 600 --max-filesize 104857600 "$1" |
      head -c 104857601 >"$2" || return 1
    [ "$(wc -c <"$2")" -le 104857600 ] ||
      { echo "install.sh: $1 is larger than 100 MiB" >&2; return 1; }
  }
  # shellcheck source=scripts/install-lib.sh
  . "$here/scripts/install-lib.sh"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  fetch_checked "$archive" "$work/archive.tar.gz" || exit
  here=$(unpack_release "$work/archive.tar.gz" "$work/unpacked" "$archive") || exit
  # The binary's own checksum, made when it was built.
  if ! (cd "$here" && sha256sum --quiet -c hearth.sha256); then
    echo "install.sh: the binary in $archive does not match its hearth.sha256; nothing was installed" >&2
    exit 1
  fi
  binary=$here/hearth
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
# The build this system can run as a service is the userland's, not the kernel's: a Pi 4 or 5
# with 32-bit Raspberry Pi OS has a 64-bit kernel (uname -m: aarch64) and a 32-bit ARM userland
# (dpkg --print-architecture: armhf). An aarch64 binary runs there, but the unit's
# SystemCallArchitectures=native (systemd's own architecture) kills it at its first system call.
# So the binary's ELF header is compared with systemd's (PID 1), else /bin/sh's; with --root,
# with those of the tree (a file that is not ELF, or a tree without them, is not compared).
userland=
if [ -z "$root" ]; then
  [ ! -d /run/systemd/system ] || userland=/proc/1/exe
fi
for f in ${userland:+"$userland"} "$root/usr/lib/systemd/systemd" "$root/lib/systemd/systemd" "$root/bin/sh"; do
  if [ -n "$(elf_arch "$f")" ]; then userland=$f; break; fi
done
native=$(elf_arch "$userland")
built=$(elf_arch "$binary")
if [ -n "$native" ] && [ -n "$built" ] && [ "$native" != "$built" ]; then
  echo "install.sh: $binary is built for $(arch_name "$built"), but this system's userland is $(arch_name "$native") ($userland): the service would be killed at its first system call; nothing was installed" >&2
  case "$native" in
    aarch64 | armv7 | x86_64) echo "  take hearth-$native.tar.gz (the $native build) instead" >&2 ;;
    *) echo "  hearth has no build for it: build one on this machine (docs/running.md)" >&2 ;;
  esac
  exit 1
fi
# On the real system, make sure the binary runs here (an aarch64 build on a 32-bit kernel does not).
if [ -z "$root" ] && ! version=$("$binary" --version 2>&1); then
  echo "install.sh: $binary does not run on this machine: $version" >&2
  echo "  (see which build your system takes: docs/running.md, \"Run it on a Raspberry Pi or router\")" >&2
  exit 1
fi

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

# Type=notify: hearth is serving once start returns; ask it for the URL.
check_running 10 || { echo "  see: journalctl -u hearth -n 50" >&2; exit 1; }
