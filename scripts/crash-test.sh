#!/usr/bin/env bash
# Kills the release server with SIGKILL during mixed writes (thermostat PUTs, commands, API
# key creation), restarts it on the same data directory and checks that every acknowledged
# write is there. TRIALS kills and restarts (default 100); 127.0.0.1 only; prints lost/total
# and exits non-zero on any loss. Cleans up its processes and temporary data directory.
#   scripts/crash-test.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-100}
case $trials in ''|*[!0-9]*) echo "usage: scripts/crash-test.sh [TRIALS]" >&2; exit 2 ;; esac
cargo build --release --quiet
exec target/release/hearth crash-test --trials "$trials"
