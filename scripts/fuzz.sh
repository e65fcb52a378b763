#!/usr/bin/env bash
# Runs every cargo fuzz target (tests/fuzz/fuzz_targets: thermostat PUT and subscribe bodies,
# /command bodies, /api/v1 bodies, schedules, paths and serials; the HTTP edge's request heads,
# bodies and query strings; HomeKit's TLV8, request heads, encrypted frames, pair-setup and
# pair-verify), or only the TARGETs named, for SECONDS each (default 60) with the nightly
# toolchain, and prints how many inputs each ran and whether it found a crash. Installs
# cargo-fuzz (and nightly) if missing. Crashes are saved under tests/fuzz/artifacts/; the
# corpus grows under tests/fuzz/corpus/ (both ignored by git).
#   scripts/fuzz.sh [SECONDS [TARGET...]]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
case $seconds in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS [TARGET...]]" >&2; exit 2 ;; esac
shift $(($# > 0 ? 1 : 0))
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
dir=tests/fuzz
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$dir")
for target in "${targets[@]}"; do
  if cargo +nightly fuzz run --fuzz-dir "$dir" "$target" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    outcome=ok
  else
    outcome="FOUND A CRASH (see $dir/artifacts/$target)"
    failed=1
  fi
  # The targets keep their server's data and HomeKit identities in /dev/shm (or the temp dir)
  # and cannot remove them.
  rm -rf /dev/shm/hearth-fuzz-* "${TMPDIR:-/tmp}"/hearth-fuzz-*
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  printf '%-18s %12s inputs in %ss  %s\n' "$target" "${runs:-?}" "$seconds" "$outcome"
  [ "$outcome" = ok ] || tail -n 30 "$log"
done
exit $failed
