#!/usr/bin/env bash
# A release archive, byte for byte the same whenever it is made from the same binary and tree:
#   cross/archive.sh DIR ARCHIVE        (cross/build.sh runs it for each build)
# DIR holds the binary `hearth` and its `hearth.sha256`; ARCHIVE is .../hearth-VERSION-ARCH.tar.gz,
# whose one folder hearth-VERSION-ARCH/ holds them with LICENSE, README.md, docs/*.md (the README's
# links, offline), the systemd installer and uninstaller, unit and example settings (scripts/,
# systemd/), the OpenWrt installer, uninstaller and init script (openwrt/) and the functions
# the scripts share (scripts/install-lib.sh). Names are sorted, every file's time is
# SOURCE_DATE_EPOCH (else the last commit's time), owner and group are 0 by number, modes are
# 0755 (the binary, the scripts) or 0644 whatever the umask, and gzip stores no name or time.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# = 2 ] || { echo "usage: $0 DIR ARCHIVE" >&2; exit 2; }
dir=$1 archive=$2
name=$(basename "$archive" .tar.gz)
case "$archive" in
  */hearth-*.tar.gz | hearth-*.tar.gz) ;;
  *) echo "archive.sh: $archive is not named hearth-VERSION-ARCH.tar.gz" >&2; exit 2 ;;
esac
for f in "$dir/hearth" "$dir/hearth.sha256"; do
  [ -f "$f" ] || { echo "archive.sh: $f is missing" >&2; exit 1; }
done
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || true)}
case "$epoch" in
  '' | *[!0-9]*) echo "archive.sh: no commit to take the files' time from: set SOURCE_DATE_EPOCH" >&2; exit 1 ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
top=$stage/$name
mkdir -p "$top/scripts" "$top/systemd" "$top/openwrt" "$top/docs"
cp "$dir/hearth" "$dir/hearth.sha256" LICENSE README.md "$top/"
cp docs/*.md "$top/docs/"   # not the screenshots
cp scripts/install.sh scripts/uninstall.sh scripts/install-lib.sh "$top/scripts/"
cp systemd/hearth.service systemd/hearth.default "$top/systemd/"
cp openwrt/install.sh openwrt/uninstall.sh openwrt/hearth.init "$top/openwrt/"
chmod -R u=rwX,go=rX "$top"
chmod 0755 "$top/hearth" "$top"/scripts/*.sh "$top"/openwrt/*.sh "$top/openwrt/hearth.init"
tar -C "$stage" --format=gnu --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  -cf - "$name" | gzip -9n >"$archive.new.$$"
mv -f "$archive.new.$$" "$archive"
