#!/usr/bin/env bash
# Runs each ARM binary built by cross/build.sh under qemu-user on 127.0.0.1 and checks that it
# works end to end: /health and /info, then two simulated thermostats (host build) register at
# /entry, upload their state with PUT, hold subscribes, and receive a command pushed from
# POST /command, which they apply and acknowledge. Then the server is stopped with SIGTERM.
# Last, the release archive's own scripts/install.sh stages it into a temporary root, and the
# installed binary must match its checksum and run.
#   cross/smoke.sh [aarch64|armv7|all]     (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-all}" in
  aarch64) targets=("aarch64-unknown-linux-gnu qemu-aarch64-static") ;;
  armv7)   targets=("armv7-unknown-linux-gnueabihf qemu-arm-static") ;;
  all)     targets=("aarch64-unknown-linux-gnu qemu-aarch64-static" "armv7-unknown-linux-gnueabihf qemu-arm-static") ;;
  *) echo "usage: $0 [aarch64|armv7|all]" >&2; exit 2 ;;
esac

cargo build --quiet --locked
host=target/debug/hearth
work=$(mktemp -d)
server_pid=
sim_pid=
cleanup() {
  for pid in $sim_pid $server_pid; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "smoke: $*" >&2; echo "--- server log:" >&2; cat "$work"/*.log >&2 || true; exit 1; }
# Waits up to 30 s (emulation is slow) for a line matching $2 in file $1.
wait_for() { for _ in $(seq 150); do grep -q "$2" "$1" && return 0; sleep 0.2; done; fail "no '$2' in $1"; }

for entry in "${targets[@]}"; do
  read -r triple qemu <<<"$entry"
  bin=target/$triple/release/hearth
  [ -x "$bin" ] || fail "$bin is missing: run cross/build.sh"
  echo "== $triple ($(stat -c %s "$bin") bytes)"
  "$qemu" "$bin" serve --bind 127.0.0.1 --device-port 0 --control-port 0 \
    --api-origin http://127.0.0.1 --data-dir "$work/$triple" --watchdog-interval-seconds 0 \
    2>"$work/$triple.log" &
  server_pid=$!
  # Free ports, read back from the startup line "device port 127.0.0.1:D, control port ...:C".
  wait_for "$work/$triple.log" "control port 127.0.0.1:"
  D=$(sed -n 's/.*device port 127.0.0.1:\([0-9]*\),.*/\1/p' "$work/$triple.log" | head -n1)
  C=$(sed -n 's/.*control port 127.0.0.1:\([0-9]*\);.*/\1/p' "$work/$triple.log" | head -n1)
  for _ in $(seq 150); do curl -sf http://127.0.0.1:$C/health >/dev/null && break; sleep 0.2; done
  curl -sf http://127.0.0.1:$C/health | grep -q '"ok"' || fail "no /health"
  curl -sf http://127.0.0.1:$D/info | grep -q "\"cloudregisterurl\":\"http://127.0.0.1:$D/entry\"" || fail "bad /info"

  sim="$work/$triple.sim"
  "$host-dev" simulate --server http://127.0.0.1:$D --devices 2 --seconds 25 >"$sim" &
  sim_pid=$!
  for n in 1 2; do
    s=02AA01AC5100000$n
    wait_for "$sim" "$s registered"
    wait_for "$sim" "$s uploaded full state"
    wait_for "$sim" "$s subscribe held"
  done
  # Let the post-upload subscribes settle, then push a command to thermostat 1.
  sleep 2
  s=02AA01AC51000001
  answer=$(curl -sf http://127.0.0.1:$C/command -d "{\"serial\":\"$s\",\"command\":\"set_temperature\",\"value\":22.5}")
  echo "$answer" | grep -q '"success":true' || fail "command refused: $answer"
  wait_for "$sim" "$s applied shared.$s .*target_temperature"
  wait_for "$sim" "$s acknowledged target_change_pending"
  curl -sf "http://127.0.0.1:$C/status?serial=$s" | grep -q '"target_temperature":22.5' || fail "status after the command"
  kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; sim_pid=
  grep -E "problem|rejected|echoed" "$sim" && fail "the simulated thermostats saw a protocol problem"

  kill -TERM "$server_pid"; wait "$server_pid" || fail "the server did not exit cleanly"; server_pid=

  archive=$(ls target/hearth-*-"${triple%%-*}".tar.gz 2>/dev/null | head -n1)
  [ -n "$archive" ] || fail "no release archive for $triple: run cross/build.sh"
  mkdir -p "$work/pkg-$triple" "$work/root-$triple"
  tar -C "$work/pkg-$triple" -xzf "$archive"
  bash "$work/pkg-$triple"/hearth-*/scripts/install.sh --root "$work/root-$triple" >/dev/null ||
    fail "install.sh from $archive"
  installed="$work/root-$triple/usr/local/bin/hearth"
  [ "$(sha256sum <"$installed" | cut -d' ' -f1)" = "$(cut -d' ' -f1 "target/$triple/release/hearth.sha256")" ] ||
    fail "the installed binary does not match hearth.sha256"
  "$qemu" "$installed" --version | grep -q '^hearth ' || fail "the installed binary does not run"
  echo "== $triple ok"
done
