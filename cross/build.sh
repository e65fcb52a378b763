#!/usr/bin/env bash
# Static, stripped release binaries, release archives, the Home Assistant add-on and its images:
#   cross/build.sh [aarch64|armv7|amd64|all|router]     (default: all)
# ARM binaries come from Debian's cargo/rustc 1.85; amd64 from scripts/build-static.sh (this
# machine's toolchain, the same static, link-ordered build). For each: target/<triple>/release/
# hearth and hearth.sha256 beside it, and a release archive target/hearth-<version>-<arch>.tar.gz
# (cross/archive.sh says what it holds) to copy to the board. Then cross/addon.sh makes, from the
# binaries built, the add-on repository target/addon/ and one OCI image archive per
# architecture, target/hearth-<version>-<amd64|aarch64|armv7>.oci.tar.
# `router` is the armv7 build without HomeKit (`--no-default-features`), for a router where
# nothing speaks to Apple Home: target/router/<triple>/release/hearth and its checksum only.
# Prerequisites: cross/setup-toolchain.sh (as root; it also installs podman).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's toolchain, not rustup's (which comes first on PATH); RUSTFLAGS would
# override the rustflags in cross/config.toml, so drop it.
debian_cargo() {
  RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc /usr/bin/cargo "$@"
}
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS

if [ "${1:-}" = router ]; then
  t=armv7-unknown-linux-gnueabihf
  debian_cargo --config cross/config.toml build --release --locked --bin hearth --target "$t" \
    --no-default-features --target-dir target/router
  out="target/router/$t/release"
  if readelf -l "$out/hearth" | grep -q INTERP; then echo "$out/hearth is not static" >&2; exit 1; fi
  (cd "$out" && sha256sum hearth > hearth.sha256 && cat hearth.sha256)
  ls -l "$out/hearth"
  exit 0
fi

case "${1:-all}" in
  aarch64) triples=(aarch64-unknown-linux-gnu) ;;
  armv7)   triples=(armv7-unknown-linux-gnueabihf) ;;
  amd64)   triples=(x86_64-unknown-linux-gnu) ;;
  all)     triples=(aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf x86_64-unknown-linux-gnu) ;;
  *) echo "usage: $0 [aarch64|armv7|amd64|all|router]" >&2; exit 2 ;;
esac

addon=()
for t in "${triples[@]}"; do
  case "$t" in
    x86_64-*)
      [ "$(uname -m)" = x86_64 ] || { echo "amd64 is built on an x86_64 machine" >&2; exit 1; }
      built=$(scripts/build-static.sh)   # its own line: a failure stops the script (set -e)
      out=$(dirname "$built") ;;
    *)
      [ -d "/opt/rust-cross/usr/lib/rustlib/$t/lib" ] || { echo "no std for $t: run cross/setup-toolchain.sh" >&2; exit 1; }
      debian_cargo --config cross/config.toml build --release --locked --bin hearth --target "$t"
      out="target/$t/release" ;;
  esac
  if readelf -l "$out/hearth" | grep -q INTERP; then echo "$out/hearth is not static" >&2; exit 1; fi
  (cd "$out" && sha256sum hearth > hearth.sha256 && cat hearth.sha256)
  ls -l "$out/hearth"
  case "$t" in
    x86_64-*) addon+=("amd64=$out/hearth") ;;
    aarch64-*) addon+=("aarch64=$out/hearth") ;;
    armv7-*) addon+=("armv7=$out/hearth") ;;
  esac

  version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
  name="hearth-$version-${t%%-*}"
  bash cross/archive.sh "$out" "target/$name.tar.gz"   # the same bytes from the same binary
  ls -l "target/$name.tar.gz"
done

bash cross/addon.sh "${addon[@]}"
