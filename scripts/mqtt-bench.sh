#!/usr/bin/env bash
# What MQTT costs: a release server with N thermostats in its store (default 1,000), measured
# with MQTT off and then on against a local mosquitto: RSS after the start, and how long the
# first full publication (discovery and state of every thermostat) takes and how many messages
# it is. Needs mosquitto and mosquitto-clients (Debian packages). Touches only 127.0.0.1; every
# process it starts is stopped at the end.
#
#   bash scripts/mqtt-bench.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}
exe=target/release/hearth
cargo build --release --quiet
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss() { awk '/^(VmRSS|RssAnon):/ {printf "%s %s kB  ", $1, $2}' "/proc/$1/status"; }
serve() { # serve LOG [options...]: starts a server on free ports, sets $server
  local log=$1; shift
  "$exe" serve --data-dir "$work/data" --bind 127.0.0.1 --device-port "$device" \
    --control-port "$control" --api-origin "http://127.0.0.1:$device" \
    --watchdog-interval-seconds 0 "$@" 2>"$log" &
  server=$!; pids+=("$server")
  until grep -q "device port" "$log" 2>/dev/null; do sleep 0.05; done
}

device=$(free_port); control=$(free_port)
echo "== storing $count simulated thermostats"
# Every simulated thermostat comes from 127.0.0.1: more new ones than one address may add.
serve "$work/fill.log" --max-new-thermostats-per-client 0
"$exe-dev" simulate --server "http://127.0.0.1:$device" --devices "$count" --seconds 15 >/dev/null 2>&1 || true
kill "$server"; wait "$server" 2>/dev/null || true

echo "== MQTT off"
serve "$work/off.log"
sleep 3
echo "$(rss "$server")"
kill "$server"; wait "$server" 2>/dev/null || true

broker=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$broker" >"$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" >/dev/null 2>&1 & pids+=($!)
sleep 0.5
mosquitto_sub -p "$broker" -v -t 'nolongerevil/#' -t 'homeassistant/#' >"$work/messages" 2>/dev/null & pids+=($!)
sleep 0.5

echo "== MQTT on"
start=$(date +%s%N)
serve "$work/on.log" --mqtt-host 127.0.0.1 --mqtt-port "$broker"
# The first publication is over when no message has arrived for a second.
last=-1
sleep 1
while true; do
  n=$(wc -l <"$work/messages")
  [ "$n" -gt 0 ] && [ "$n" = "$last" ] && break
  last=$n; sleep 1
done
end=$(date +%s%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", (b - a) / 1e9 - 1 }')
echo "$(rss "$server")"
echo "first publication: $last messages in about ${secs} s (start included; resolution 1 s)"
