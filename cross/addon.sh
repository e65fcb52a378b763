#!/usr/bin/env bash
# The Home Assistant add-on and one OCI image per architecture, from static binaries:
#   cross/addon.sh [--out DIR] [--name IMAGE] ARCH=BINARY...    ARCH: amd64, aarch64 or armv7
# cross/build.sh runs it with the binaries it built. Output, under DIR (default target/):
#   addon/                      a local add-on repository: repository.yaml (the root's) and
#                               hearth/ (the manifest without image: and listing the
#                               architectures given, Dockerfile, documentation, changelog,
#                               icon, logo, translations, bin/ARCH/hearth). Copy addon/hearth
#                               into Home Assistant's /addons: Home Assistant builds the image
#                               from it (FROM scratch: nothing to download but its own builder).
#                               The repository itself is the published add-on (its manifest
#                               pulls the images CI pushes).
#   hearth-VERSION-ARCH.oci.tar the same image, built with podman from scratch (the binary
#                               and an empty /data), as an OCI archive named IMAGE:VERSION-ARCH
#                               (default localhost/hearth, also left in podman's store): load it
#                               with `podman load -i FILE`, or push it with
#                               `skopeo copy oci-archive:FILE docker://REGISTRY/...` (as it is:
#                               converting it to another manifest format may drop the health
#                               check again). Its image configuration carries the Dockerfile's
#                               HEALTHCHECK, which OCI has no field for but Docker reads.
# Fails when an image holds anything but the binary, unpacks to more than the binary and
# 64 KiB (tar headers), or has no health check.
set -euo pipefail
usage() { echo "usage: $0 [--out DIR] [--name IMAGE] ARCH=BINARY..." >&2; exit 2; }

out=target
name=localhost/hearth
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ -n "${2:-}" ] || usage; out=$(realpath -m "$2"); shift 2 ;;
    --name) [ -n "${2:-}" ] || usage; name=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || usage
# Binaries and --out as given from where the script was run; everything else from the repo.
declare -A binary
for pair in "$@"; do
  arch=${pair%%=*}
  case "$arch" in amd64|aarch64|armv7) ;; *) echo "unknown architecture: $arch" >&2; exit 2 ;; esac
  binary[$arch]=$(realpath -m "${pair#*=}")
  [ -x "${binary[$arch]}" ] || { echo "not an executable: ${binary[$arch]}" >&2; exit 1; }
done
cd "$(dirname "$0")/.."
look=$(mktemp -d)
trap 'rm -rf "$look"' EXIT
command -v podman >/dev/null || { echo "podman is needed for the images (apt-get install podman)" >&2; exit 1; }

# restore_healthcheck ARCHIVE HEALTHCHECK_JSON: puts the health check into the configuration of
# the one image in an OCI archive; the configuration's, manifest's and index's digests follow.
restore_healthcheck() {
  local archive=$1 health=$2 dir digest size old new old_size
  dir=$(mktemp -d -p "$look")
  tar -xf "$archive" -C "$dir"
  # blob FILE: stores FILE as a blob, prints its digest and size.
  blob() {
    local d
    d=$(sha256sum "$1" | cut -d' ' -f1)
    mv "$1" "$dir/blobs/sha256/$d"
    echo "$d $(stat -c %s "$dir/blobs/sha256/$d")"
  }
  # point FILE OLD NEW_DIGEST NEW_SIZE: FILE's reference to blob OLD names the new one.
  point() {
    local old_size
    old_size=$(stat -c %s "$dir/blobs/sha256/$2")
    grep -q "\"digest\":\"sha256:$2\",\"size\":$old_size" "$1" ||
      { echo "$archive: unexpected layout (no reference to $2 in $1)" >&2; exit 1; }
    sed -i "s|\"digest\":\"sha256:$2\",\"size\":$old_size|\"digest\":\"sha256:$3\",\"size\":$4|" "$1"
    rm "$dir/blobs/sha256/$2"
  }
  local manifest config
  manifest=$(sed -n 's/.*"digest":"sha256:\([0-9a-f]*\)".*/\1/p' "$dir/index.json")
  config=$(sed 's/.*"config":{[^}]*"digest":"sha256:\([0-9a-f]*\)".*/\1/' "$dir/blobs/sha256/$manifest")
  sed '0,/"config":{/s||"config":{"Healthcheck":'"$health"',|' "$dir/blobs/sha256/$config" > "$dir/config.json"
  grep -q '"Healthcheck"' "$dir/config.json" || { echo "$archive: no image configuration" >&2; exit 1; }
  read -r new size < <(blob "$dir/config.json")
  cp "$dir/blobs/sha256/$manifest" "$dir/manifest.json"
  point "$dir/manifest.json" "$config" "$new" "$size"
  read -r new size < <(blob "$dir/manifest.json")
  point "$dir/index.json" "$manifest" "$new" "$size"
  rm -f "$archive"
  tar -cf "$archive" -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    oci-layout index.json blobs
  rm -rf "$dir"
}

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
grep -qx "version: \"$version\"" cross/addon/hearth/config.yaml ||
  { echo "cross/addon/hearth/config.yaml's version is not $version (Cargo.toml)" >&2; exit 1; }

repo="$out/addon"
rm -rf "$repo"
mkdir -p "$repo"
cp repository.yaml "$repo/"
cp -r cross/addon/hearth "$repo/hearth"
# The local add-on: no image: (Home Assistant would pull the published image instead of building
# this folder), and the architectures there are binaries for. armv7 among them is for old 32-bit
# installs whose Supervisor (from before 2026.03) still runs and builds it; current Supervisors
# run only on aarch64 and amd64, and log that armv7 is deprecated.
awk -v have=" ${!binary[*]} " '
  /^image:/ { next }
  /^arch:/ {
    in_arch = 1; print
    split("aarch64 amd64 armv7", all, " ")
    for (i = 1; i <= 3; i++) if (index(have, " " all[i] " ")) print "  - " all[i]
    next
  }
  in_arch && /^  - / { next }
  { in_arch = 0; print }
' cross/addon/hearth/config.yaml > "$repo/hearth/config.yaml"
for arch in "${!binary[@]}"; do
  install -D -m 0755 "${binary[$arch]}" "$repo/hearth/bin/$arch/hearth"
done

for arch in amd64 aarch64 armv7; do
  [ -n "${binary[$arch]:-}" ] || continue
  case "$arch" in
    amd64) platform=linux/amd64 ;;
    aarch64) platform=linux/arm64 ;;
    armv7) platform=linux/arm/v7 ;;
  esac
  image="$out/hearth-$version-$arch.oci.tar"
  # --timestamp 0: the same binary gives the same image, byte for byte; --layers=false: one
  # layer, and no intermediate images left in podman's store.
  podman build --quiet --layers=false --format docker --platform "$platform" --timestamp 0 \
    --build-arg "BUILD_ARCH=$arch" --build-arg "BUILD_VERSION=$version" \
    -t "$name:$version-$arch" "$repo/hearth" >/dev/null
  rm -f "$image"
  podman save --quiet --format oci-archive -o "$image" "$name:$version-$arch"
  # The Dockerfile's HEALTHCHECK is Docker's, not OCI's: podman keeps it in the image (built
  # --format docker) but drops it converting to OCI, so it goes back into the archive's image
  # configuration, where Docker (the Supervisor's, or docker pull on a NAS) reads it.
  health=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$name:$version-$arch")
  case "$health" in '{"Test":["CMD",'*) ;; *) echo "$name:$version-$arch has no HEALTHCHECK: $health" >&2; exit 1 ;; esac
  restore_healthcheck "$image" "$health"

  # What is in it: /hearth and the empty /data (WORKDIR), nothing else.
  rm -rf "${look:?}"/*
  tar -xf "$image" -C "$look"
  manifest=$(sed -n 's/.*"digest":"sha256:\([0-9a-f]*\)".*/\1/p' "$look/index.json")
  layers=$(sed 's/.*"layers":\[\([^]]*\)\].*/\1/' "$look/blobs/sha256/$manifest" |
    grep -o 'sha256:[0-9a-f]*' | cut -d: -f2)
  files=$(for l in $layers; do tar -tf "$look/blobs/sha256/$l"; done | sort | tr '\n' ' ')
  content=$(for l in $layers; do gzip -dcf "$look/blobs/sha256/$l"; done | wc -c)
  [ "$files" = "data/ hearth " ] || { echo "$image holds more than the binary: $files" >&2; exit 1; }
  bin_size=$(stat -c %s "${binary[$arch]}")
  size=$(stat -c %s "$image")
  [ "$content" -le $((bin_size + 65536)) ] ||
    { echo "$image unpacks to $content bytes, more than its binary ($bin_size) and 64 KiB" >&2; exit 1; }
  echo "$image: $size bytes (unpacked $content; the binary is $bin_size)"
done
echo "$repo: the add-on repository (architectures: ${!binary[*]})"
