#!/usr/bin/env bash
# The OpenWrt install (docs/openwrt.md) for real, in a chroot that holds nothing but Debian's
# busybox-static (its applets are the only commands) and a release archive; the x86_64 archive
# stands in for armv7, so nothing is emulated. In the chroot, with busybox alone, the archive is
# checked (sha256sum -c), unpacked (tar) and installed (openwrt/install.sh); then the command the
# init script gives procd is started as procd starts it: the installed /etc/init.d/hearth's own
# start_service runs against a stand-in for procd's procd_* functions, which records the command,
# environment and user it is given, and that command runs with that environment as that user.
# /health must answer on loopback (busybox wget), `install.sh --check` must find the URL, an
# upgrade from the archive's file:// URL must change nothing, a tampered archive must be refused,
# and the uninstaller must keep the data. It runs in a network namespace of its own (only
# loopback, up), so nothing leaves the machine.
#   cross/openwrt-smoke.sh [ARCHIVE]     (as root; default: target/hearth-VERSION-x86_64.tar.gz)
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "openwrt-smoke: chroot and namespaces need root" >&2; exit 1; }
busybox=/bin/busybox
if ! [ -x "$busybox" ] || readelf -l "$busybox" 2>/dev/null | grep -q INTERP; then
  echo "openwrt-smoke: $busybox is missing or not static: apt-get install busybox-static" >&2
  exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
archive=$(realpath "${1:-target/hearth-$version-x86_64.tar.gz}")
[ -f "$archive" ] || { echo "openwrt-smoke: no $archive: run cross/build.sh amd64" >&2; exit 1; }
if [ -z "${HEARTH_OPENWRT_NETNS:-}" ]; then
  HEARTH_OPENWRT_NETNS=1 exec unshare --net bash "$PWD/cross/openwrt-smoke.sh" "$archive"
fi
"$busybox" ip link set lo up

root=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
fail() { echo "openwrt-smoke: $*" >&2; echo "--- hearth's log:" >&2; cat "$root/tmp/hearth.log" >&2 || true; exit 1; }
in_root() { chroot "$root" /bin/sh -c "$1"; }

# What every OpenWrt has before any package: busybox's applets, root in /etc/passwd and
# /etc/group, /tmp and /dev/null. Then the archive and its checksum, as downloaded to /tmp.
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/dev"
chmod 0755 "$root"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
chroot "$root" /bin/busybox --install -s /bin
echo 'root:x:0:0:root:/root:/bin/ash' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
mknod -m 666 "$root/dev/null" c 1 3
name=$(basename "$archive")
cp "$archive" "$root/tmp/$name"
(cd "$root/tmp" && sha256sum "$name" >"$name.sha256")

echo "== install, as docs/openwrt.md does it"
in_root "cd /tmp && sha256sum -c $name.sha256 && tar xzf $name && sh hearth-*/openwrt/install.sh" |
  tee "$root/tmp/install.out"
grep -q "^installed  /usr/bin/hearth" "$root/tmp/install.out" || fail "install.sh installed no binary"
grep -q "^added      the user hearth" "$root/tmp/install.out" || fail "install.sh added no user"

# The owner's settings: loopback only, free ports, nothing that reaches out (no HomeKit
# advertisement, no weather).
cat >"$root/etc/default/hearth" <<'EOF'
SERVER_HOST=127.0.0.1
SERVER_PORT=0
CONTROL_PORT=0
API_ORIGIN=http://127.0.0.1
HOMEKIT=false
WEATHER_PROVIDER=off
EOF

echo "== the command /etc/init.d/hearth gives procd, started as procd starts it"
cat >"$root/tmp/procd-standin.sh" <<'EOF'
# procd's side of start_service: each procd_set_param is recorded, one value a line.
mkdir -p /tmp/procd
procd_open_instance() { :; }
procd_close_instance() { :; }
procd_set_param() {
  key=$1
  shift
  printf '%s\n' "$@" >"/tmp/procd/$key"
}
. /etc/init.d/hearth
start_service
# Then what procd does with them: the command, with exactly that environment, as that user.
set --
while IFS= read -r line; do set -- "$@" "$line"; done </tmp/procd/env
set -- "$@" su -p -s /bin/sh -c 'exec "$0" "$@"' -- "$(cat /tmp/procd/user)"
while IFS= read -r line; do set -- "$@" "$line"; done </tmp/procd/command
exec env -i "$@"
EOF
chroot "$root" /bin/sh /tmp/procd-standin.sh >"$root/tmp/hearth.log" 2>&1 &
pid=$!
for _ in $(seq 150); do
  grep -q "control port 127.0.0.1:" "$root/tmp/hearth.log" && break
  kill -0 "$pid" 2>/dev/null || fail "hearth stopped"
  sleep 0.2
done
echo "procd would run: $(tr '\n' ' ' <"$root/tmp/procd/command")(as $(cat "$root/tmp/procd/user"))"
[ "$(head -n2 "$root/tmp/procd/command" | tr '\n' ' ')" = "/usr/bin/hearth serve " ] || fail "not hearth serve"
D=$(sed -n 's/.*device port 127.0.0.1:\([0-9]*\),.*/\1/p' "$root/tmp/hearth.log" | head -n1)
C=$(sed -n 's/.*control port 127.0.0.1:\([0-9]*\);.*/\1/p' "$root/tmp/hearth.log" | head -n1)
[ -n "$D" ] && [ -n "$C" ] || fail "no ports in the log"
health=$(in_root "wget -q -O - http://127.0.0.1:$C/health") || fail "no /health"
echo "/health: $health"
case "$health" in *'"ok"'*) ;; *) fail "/health answered $health" ;; esac
owner=$(in_root "ls -lnd /etc/hearth /etc/hearth/LOCK | awk '{ print \$3 }' | sort -u")
[ "$owner" = "$(sed -n 's/^hearth:[^:]*:\([0-9]*\):.*/\1/p' "$root/etc/passwd")" ] ||
  fail "the data is not the user hearth's: $owner"

echo "== install.sh --check, with the ports the server took written in the settings"
sed -i -e "s/^SERVER_PORT=0$/SERVER_PORT=$D/" -e "s/^CONTROL_PORT=0$/CONTROL_PORT=$C/" "$root/etc/default/hearth"
in_root "sh /usr/share/hearth/install.sh --check" | tee "$root/tmp/check.out"
grep -qx "Point each thermostat's cloudregisterurl at: http://127.0.0.1:$D/entry" "$root/tmp/check.out" ||
  fail "--check did not find the URL"

echo "== an upgrade from the archive's file:// URL, then a tampered archive"
in_root "sh /usr/share/hearth/install.sh file:///tmp/$name" | tee "$root/tmp/upgrade.out"
grep -q "^unchanged  /usr/bin/hearth" "$root/tmp/upgrade.out" || fail "the upgrade did not find the same binary"
grep -q "^kept       /etc/default/hearth" "$root/tmp/upgrade.out" || fail "the upgrade did not keep the settings"
in_root "cp /tmp/$name /tmp/bad.tar.gz && cp /tmp/$name.sha256 /tmp/bad.tar.gz.sha256 && echo >>/tmp/bad.tar.gz"
if in_root "sh /usr/share/hearth/install.sh /tmp/bad.tar.gz" 2>"$root/tmp/bad.err"; then fail "a tampered archive was installed"; fi
cat "$root/tmp/bad.err"
grep -q "does not match its checksum" "$root/tmp/bad.err" || fail "no reason given"

echo "== stop (SIGTERM), uninstall, the data kept"
kill -TERM "$pid"
wait "$pid" || fail "hearth did not exit cleanly"
pid=
in_root "sh /usr/share/hearth/uninstall.sh"
for gone in usr/bin/hearth etc/init.d/hearth usr/share/hearth lib/upgrade/keep.d/hearth; do
  [ ! -e "$root/$gone" ] || fail "/$gone is still there"
done
# The store is kept: its journal (a stop with nothing journaled since the last snapshot, as
# here, writes no snapshot: Store::snapshot_due_at_stop).
ls "$root/etc/hearth"/journal-* >/dev/null 2>&1 || fail "the data is gone"
[ -f "$root/etc/default/hearth" ] || fail "the changed settings were removed"
echo "--- hearth's log:"
cat "$root/tmp/hearth.log"
echo "== openwrt ok"
