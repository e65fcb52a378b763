#!/usr/bin/env bash
# Runs each ARM binary built by cross/build.sh under qemu-user on 127.0.0.1: /health, /info,
# then two simulated thermostats (entry, full upload, held subscribe) from the host build.
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
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

for entry in "${targets[@]}"; do
  read -r triple qemu <<<"$entry"
  bin=target/$triple/release/hearth
  [ -x "$bin" ] || { echo "$bin is missing: run cross/build.sh" >&2; exit 1; }
  echo "== $triple ($(stat -c %s "$bin") bytes)"
  "$qemu" "$bin" serve --bind 127.0.0.1 --device-port 18600 --control-port 18682 \
    --api-origin http://127.0.0.1 --data-dir "$work/$triple" --watchdog-interval-seconds 0 \
    2>"$work/$triple.log" &
  server_pid=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18682/health >/dev/null && break; sleep 0.2; done
  curl -sf http://127.0.0.1:18682/health; echo
  curl -sf http://127.0.0.1:18600/info | grep -q '"cloudregisterurl":"http://127.0.0.1:18600/entry"'
  "$host" simulate --server http://127.0.0.1:18600 --devices 2 --seconds 4 | tee "$work/sim.txt"
  for n in 1 2; do
    grep -q "02AA01AC5100000$n uploaded full state" "$work/sim.txt"
    [ "$(grep -c "02AA01AC5100000$n subscribe held" "$work/sim.txt")" -ge 2 ]
  done
  kill -TERM "$server_pid"; wait "$server_pid"; server_pid=
  echo "== $triple ok"
done
