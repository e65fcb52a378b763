#!/usr/bin/env bash
# The performance figures and their budgets, measured on 127.0.0.1 with simulated thermostats:
# idle RSS; RSS with N held subscribes (default 1,000); POST /command -> push p50/p99/max over
# 1,000 commands from 4 concurrent clients spread across them; start-up with their state
# stored; durable commands/s, GET /status/s (with p99) and GET /health/s from 8 keep-alive
# clients for 10 s each, with the server's CPU time per request; CPU time over 60 idle seconds
# with 100 held subscribes. Builds the shipped binary and the developer tools' binary
# (hearth-dev, which runs the clients) first; prints one table; stops every process it started
# and removes its temporary data directories.
# Arguments go to `hearth-dev bench` (see `hearth-dev bench --help`), e.g.
#   scripts/bench.sh --json bench.json
#   scripts/bench.sh --thermostats 200 --commands 200 --load-seconds 3 --idle-seconds 10
# The server measured is the binary as it ships (scripts/build-static.sh: static, code in
# link order); `--server target/release/hearth` measures a plain `cargo build --release`.
# Set RUST_MIN_STACK=262144 MALLOC_ARENA_MAX=2 to measure with the systemd unit's settings.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(scripts/build-static.sh)
cargo build --release --locked --quiet --bin hearth-dev
case " $* " in
  *" --server "*) ;;
  *) set -- --server "$binary" "$@" ;;
esac
exec target/release/hearth-dev bench "$@"
