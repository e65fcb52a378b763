#!/usr/bin/env bash
# One-time install (as root, Debian 12) for cross/build.sh and cross/smoke.sh: Debian's
# rustc/cargo 1.85 (pinned: bookworm-security has a newer rustc-web for amd64), the GNU cross
# linkers, qemu-user-static, podman (cross/addon.sh builds the images), and the arm64/armhf
# std rlibs of the *same* rustc build, unpacked into a private sysroot (/opt/rust-cross). No
# rustup download; apt only. Idempotent.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "cross/setup-toolchain.sh installs Debian packages: run it as root (sudo)" >&2
  exit 1
fi
VER=1.85.0+dfsg3-1~deb12u3
export DEBIAN_FRONTEND=noninteractive

for a in arm64 armhf; do
  dpkg --print-foreign-architectures | grep -qx "$a" || dpkg --add-architecture "$a"
done
# A foreign security index may be mid-sync on the mirror; what we need is in bookworm main.
apt-get update -qq || true
apt-get install -y -qq "rustc-web=$VER" "cargo-web=$VER" \
  "libstd-rust-web-dev=$VER" "libstd-rust-web-1.85=$VER" \
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
  gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user-static curl podman

# Only the rlibs are needed (std links statically); installing the :arm64/:armhf packages
# would pull in conflicting multiarch libraries, so download and unpack them instead.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "libstd-rust-web-dev:arm64=$VER" "libstd-rust-web-dev:armhf=$VER")
rm -rf /opt/rust-cross
for deb in "$work"/*.deb; do dpkg -x "$deb" /opt/rust-cross; done
ls /opt/rust-cross/usr/lib/rustlib
