#!/usr/bin/env bash
# Builds hearth as it ships, for this machine: the release profile, statically linked (no
# shared libraries to load or map), with the code it runs at start-up, while idle and while
# serving thermostats placed first in the binary (cross/link-order.ld, made by
# scripts/link-order.py), so that an idle server maps 1.5 MB less of it. The ARM binaries
# (cross/build.sh) are built the same way. Prints the binary's path:
#   scripts/build-static.sh      ->  target/<this machine's triple>/release/hearth
# It sets the compiler flags itself: RUSTFLAGS from the environment is not used.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
flags=(-C target-feature=+crt-static -C "link-arg=-Wl,-T,$PWD/cross/link-order.ld")
unset RUSTFLAGS
CARGO_ENCODED_RUSTFLAGS=$(IFS=$'\x1f'; echo "${flags[*]}") \
  cargo build --release --locked --quiet --bin hearth --target "$host" >&2
echo "target/$host/release/hearth"
