#!/usr/bin/env bash
# The files a GitHub release carries, from the archives cross/build.sh wrote:
#   .github/scripts/release-assets.sh [--from DIR] [--out DIR] VERSION ARCH...
# For each ARCH, DIR/hearth-VERSION-ARCH.tar.gz (default DIR: target) is copied to OUT (default:
# target/release-assets) under its own name and under hearth-ARCH.tar.gz, the name that stays
# the same from release to release (so .../releases/latest/download/hearth-ARCH.tar.gz always
# reaches the newest), each with a FILE.sha256 beside it in `sha256sum` format, which
# scripts/install.sh and `sha256sum -c` check. The release workflow runs it; tests/it/workflows.rs
# runs it on fake archives and checks the README's download links against what it makes.
set -euo pipefail
usage() { echo "usage: $0 [--from DIR] [--out DIR] VERSION ARCH..." >&2; exit 2; }

from=target
out=target/release-assets
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ -n "${2:-}" ] || usage; from=$2; shift 2 ;;
    --out) [ -n "${2:-}" ] || usage; out=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
version=$1
shift
case "$version" in
  *[!0-9A-Za-z.+-]* | "") echo "release-assets.sh: not a version: $version" >&2; exit 2 ;;
esac

# Every archive first: a missing one stops the script before anything is written.
for arch in "$@"; do
  case "$arch" in
    *[!0-9A-Za-z_]* | "") echo "release-assets.sh: not an architecture: $arch" >&2; exit 2 ;;
  esac
  [ -f "$from/hearth-$version-$arch.tar.gz" ] ||
    { echo "release-assets.sh: $from/hearth-$version-$arch.tar.gz is missing (cross/build.sh all makes it)" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out"
for arch in "$@"; do
  for name in "hearth-$version-$arch.tar.gz" "hearth-$arch.tar.gz"; do
    cp "$from/hearth-$version-$arch.tar.gz" "$out/$name"
    (cd "$out" && sha256sum "$name" > "$name.sha256")
  done
done
(cd "$out" && ls -l && cat ./*.sha256)
