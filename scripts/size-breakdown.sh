#!/usr/bin/env bash
# What a shipped ARM binary is made of: cargo-bloat's largest crates and hearth's own largest
# functions, for the build cross/build.sh makes (Debian's rustc 1.85, cross/config.toml) with
# two differences that do not change what is linked: symbols are kept (cargo-bloat reads
# them), and the link order is off (it moves the hot code into .text.hearth_hot, which
# cargo-bloat does not count; without it the binary is 80 bytes smaller).
#   scripts/size-breakdown.sh [aarch64|armv7] [N]     (default: aarch64, the top 25)
# Needs cross/setup-toolchain.sh and cargo-bloat (cargo install cargo-bloat --locked). Builds
# into target/size-breakdown; prints the stripped size of the shipped build if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-aarch64}" in
  aarch64) t=aarch64-unknown-linux-gnu ;;
  armv7) t=armv7-unknown-linux-gnueabihf ;;
  *) echo "usage: $0 [aarch64|armv7] [N]" >&2; exit 2 ;;
esac
n=${2:-25}
command -v cargo-bloat >/dev/null || { echo "cargo-bloat is missing: cargo install cargo-bloat --locked" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# cargo-bloat finds std through `rustc --print sysroot` and runs the `cargo` on PATH: make both
# Debian's, with the cross sysroot.
mkdir "$work/bin"
printf '#!/bin/sh\nexec /usr/bin/rustc --sysroot /opt/rust-cross/usr "$@"\n' > "$work/bin/rustc"
chmod +x "$work/bin/rustc"
ln -s /usr/bin/cargo "$work/bin/cargo"
# A --config file beats cargo-bloat's own "keep the symbols" setting, so drop strip there.
sed -e '/^strip = /d' \
    -e 's|"-C", "link-arg=-Wl,-T,cross/link-order.ld"\]|"-C", "target-feature=+crt-static"]|' \
    cross/config.toml > "$work/config.toml"
# The settings only: cross/config.toml's comments name the link order's file too.
if sed -e 's/#.*//' "$work/config.toml" | grep -q link-order.ld; then
  echo "$0: could not take the link order out of cross/config.toml (its format changed?)" >&2
  exit 1
fi
bloat() {
  env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_RUSTFLAGS PATH="$work/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc \
    cargo bloat --config "$work/config.toml" --release --locked --target "$t" \
    --target-dir target/size-breakdown --bin hearth "$@"
}
if [ -f "target/$t/release/hearth" ]; then
  echo "shipped build: target/$t/release/hearth, $(stat -c %s "target/$t/release/hearth") bytes"
fi
echo "== crates (.text)"
bloat --crates -n "$n"
echo "== hearth's own functions"
bloat --filter hearth -n "$n"
