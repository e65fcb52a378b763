#!/usr/bin/env bash
# Static, stripped release binaries for ARM with Debian's cargo/rustc 1.85:
#   cross/build.sh [aarch64|armv7|all]     (default: all)
# Output: target/<triple>/release/hearth and hearth.sha256 beside it, and a release archive
# target/hearth-<version>-<arch>.tar.gz (the binary, its checksum, scripts/install.sh,
# scripts/uninstall.sh, the systemd unit and example settings, the README) to copy to the board.
# Prerequisites: cross/setup-toolchain.sh (as root).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-all}" in
  aarch64) triples=(aarch64-unknown-linux-gnu) ;;
  armv7)   triples=(armv7-unknown-linux-gnueabihf) ;;
  all)     triples=(aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf) ;;
  *) echo "usage: $0 [aarch64|armv7|all]" >&2; exit 2 ;;
esac

# Debian's toolchain, not rustup's (which comes first on PATH); RUSTFLAGS would
# override the rustflags in cross/config.toml, so drop it.
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS

for t in "${triples[@]}"; do
  [ -d "/opt/rust-cross/usr/lib/rustlib/$t/lib" ] || { echo "no std for $t: run cross/setup-toolchain.sh" >&2; exit 1; }
  /usr/bin/cargo --config cross/config.toml build --release --locked --target "$t"
  out="target/$t/release"
  if readelf -l "$out/hearth" | grep -q INTERP; then echo "$out/hearth is not static" >&2; exit 1; fi
  (cd "$out" && sha256sum hearth > hearth.sha256 && cat hearth.sha256)
  ls -l "$out/hearth"

  version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
  name="hearth-$version-${t%%-*}"
  stage=$(mktemp -d)
  mkdir -p "$stage/$name/scripts" "$stage/$name/systemd"
  cp "$out/hearth" "$out/hearth.sha256" README.md "$stage/$name/"
  cp scripts/install.sh scripts/uninstall.sh "$stage/$name/scripts/"
  cp systemd/hearth.service systemd/hearth.default "$stage/$name/systemd/"
  tar -C "$stage" --owner=0 --group=0 -czf "target/$name.tar.gz" "$name"
  rm -rf "$stage"
  ls -l "target/$name.tar.gz"
done
