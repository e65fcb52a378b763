# shellcheck shell=sh
# What the installers and uninstallers share, sourced by each: scripts/install.sh and
# scripts/uninstall.sh (bash, systemd) and openwrt/install.sh and openwrt/uninstall.sh (busybox
# ash; the OpenWrt installer keeps this file beside its own copy in /usr/share/hearth/). So POSIX
# sh only: no bash-isms, nothing busybox lacks. Functions only, and the messages are the same
# whichever script runs them. fetch_checked and unpack_release run in a subshell each (nothing of
# theirs is left in the caller's variables) and say themselves what went wrong, without relying on
# the caller's set -e: call them as `fetch_checked ... || exit`.

# A release archive, fetched and checked (installers). Each installer gives `download URL FILE`,
# which downloads an http:// or https:// URL to FILE with the tool it has (curl, bounded in time
# and size; uclient-fetch or wget), fails when it cannot, and may say why.

# Copies the archive or its checksum ($1) to the file $2: a download, a file:// URL or a path.
fetch() {
  case "$1" in
    http://* | https://*) download "$1" "$2" ;;
    file://*) [ -f "${1#file://}" ] && cp "${1#file://}" "$2" ;;
    *) [ -f "$1" ] && cp "$1" "$2" ;;
  esac
}

# Fetches the release archive $1 (hearth-...tar.gz: a URL, a file:// URL or a path) to the file
# $2 and its checksum, ARCHIVE.sha256 beside it (.sha256 before any query string, which is kept
# after it), to $2.sha256, and checks one against the other; exits, saying why and that nothing
# was installed, unless the archive matches (2 for a name that is not an archive's, 1 otherwise).
fetch_checked() (
  name=${1##*/}
  name=${name%%\?*}
  case "$name" in
    *.tar.gz) ;;
    *) echo "install.sh: $1 is not a release archive (hearth-...tar.gz)" >&2; exit 2 ;;
  esac
  fetch "$1" "$2" ||
    { echo "install.sh: could not read $1; nothing was installed" >&2; exit 1; }
  # The checksum's address: the archive's, with .sha256 before any query string.
  base=${1%%\?*}
  fetch "$base.sha256${1#"$base"}" "$2.sha256" ||
    { echo "install.sh: could not read its checksum, $1.sha256; nothing was installed" >&2; exit 1; }
  expected=$(awk 'NR == 1 { print tolower($1) }' "$2.sha256")
  case "$expected" in
    *[!0-9a-f]* | "") expected=bad ;;
  esac
  if [ "${#expected}" != 64 ]; then
    echo "install.sh: $1.sha256 holds no SHA-256 checksum; nothing was installed" >&2
    exit 1
  fi
  actual=$(sha256sum "$2" | cut -d' ' -f1)
  if [ "$actual" != "$expected" ]; then
    echo "install.sh: $1 does not match its checksum (expected $expected, got $actual); nothing was installed" >&2
    exit 1
  fi
  echo "checked    $name (sha256 $actual)"
)

# Unpacks the checked archive $1 into the new directory $2 (the files owned by whoever runs it,
# whatever the archive says) and prints its one folder, hearth-VERSION-ARCH/, which holds the
# binary; exits, saying why (naming the archive as given, $3), when it holds anything else.
unpack_release() (
  from=$3
  if ! { mkdir "$2" && tar -xzof "$1" -C "$2"; }; then
    echo "install.sh: could not unpack $from; nothing was installed" >&2
    exit 1
  fi
  set -- "$2"/*
  if [ $# != 1 ] || [ ! -f "$1/hearth" ]; then
    echo "install.sh: $from does not hold one hearth-VERSION-ARCH/ folder with the binary; nothing was installed" >&2
    exit 1
  fi
  printf '%s\n' "$1"
)

# Removing what an install added (uninstallers).

# Removes the file $1, saying so, or that it was not there.
remove() {
  if [ -e "$1" ] || [ -L "$1" ]; then
    rm -f "$1"
    echo "removed    $1"
  else
    echo "absent     $1"
  fi
}

# Removes the settings file $1 only if it is still, byte for byte, the example $2 it was
# installed from; keeps it otherwise, saying so.
remove_settings() {
  if [ ! -e "$1" ]; then
    echo "absent     $1"
  elif [ -f "$2" ] && [ "$(sha256sum <"$2")" = "$(sha256sum <"$1")" ]; then
    remove "$1"
  else
    echo "kept       $1 (it holds your settings)"
  fi
}
