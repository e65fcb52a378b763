#!/usr/bin/env bash
# Measures hearth with simulated thermostats on 127.0.0.1: idle RSS, RSS with N held
# subscribes, POST /command -> push latency, and GET /status throughput with 8 keep-alive
# clients. Builds the release binary first.
# Arguments are passed to `hearth bench` (see `hearth bench --help`), e.g.
#   scripts/bench.sh --thermostats 100 --pushes 200 --status-seconds 10 --json bench.json
# Set RUST_MIN_STACK=262144 MALLOC_ARENA_MAX=2 to measure with the systemd unit's settings.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec target/release/hearth bench "$@"
