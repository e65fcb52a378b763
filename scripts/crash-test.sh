#!/usr/bin/env bash
# Kills the release server with SIGKILL during mixed writes (thermostat PUTs, commands, API
# key creation), restarts it on the same data directory and checks that every acknowledged
# write is there. TRIALS kills and restarts (default 100); 127.0.0.1 only; prints lost/total
# and exits non-zero on any loss. Cleans up its processes and temporary data directory.
# The test is the developer tools' binary, hearth-dev; the server is the hearth beside it.
#   scripts/crash-test.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-100}
case $trials in ''|*[!0-9]*) echo "usage: scripts/crash-test.sh [TRIALS]" >&2; exit 2 ;; esac
cargo build --release --locked --quiet --bin hearth --bin hearth-dev
exec target/release/hearth-dev crash-test --trials "$trials"
