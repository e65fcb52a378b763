#!/usr/bin/env bash
# Runs every cargo fuzz target in tests/fuzz (docs/development.md#fuzzing lists them and what
# each checks), or only the TARGETs named, one after another, each as one niced fuzzer process
# (-jobs=1 -workers=1) with the nightly toolchain, for SECONDS each (default 60) or for RUNS
# inputs each (--runs), and prints a table: inputs run, seconds taken, corpus size, crashes.
# Installs cargo-fuzz (and nightly) if missing. Crashes are saved under tests/fuzz/artifacts/;
# the corpus grows under tests/fuzz/corpus/ (both ignored by git). Exits non-zero if a target
# crashed.
#   scripts/fuzz.sh [SECONDS | --runs RUNS] [TARGET...]
# e.g. scripts/fuzz.sh 60; scripts/fuzz.sh --runs 1000000; scripts/fuzz.sh 300 tlv8 query
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: scripts/fuzz.sh [SECONDS | --runs RUNS] [TARGET...]" >&2
  exit 2
}
limit=(-max_total_time=60)
case ${1:-} in
  --runs)
    case ${2:-} in ''|*[!0-9]*) usage ;; esac
    limit=(-runs="$2")
    shift 2
    ;;
  '') ;;
  -*) usage ;;
  *[!0-9]*) ;; # a target's name
  *)
    limit=(-max_total_time="$1")
    shift
    ;;
esac
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
dir=$PWD/tests/fuzz
# libFuzzer's job writes its output to fuzz-0.log in its working directory: a scratch one.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$dir")
# Built first, so that the seconds below are fuzzing only.
if [ $# -gt 0 ]; then
  for target in "${targets[@]}"; do
    nice -n 19 cargo +nightly fuzz build --fuzz-dir "$dir" "$target"
  done
else
  nice -n 19 cargo +nightly fuzz build --fuzz-dir "$dir"
fi
echo "| Target | Inputs | Seconds | Corpus | Crashes |"
echo "|---|---:|---:|---:|---|"
for target in "${targets[@]}"; do
  mkdir -p "$dir/artifacts/$target"
  before=$(find "$dir/artifacts/$target" -type f | wc -l)
  start=$(date +%s)
  rm -f "$work/fuzz-0.log"
  if (cd "$work" && nice -n 19 cargo +nightly fuzz run --fuzz-dir "$dir" "$target" -- \
      "${limit[@]}" -jobs=1 -workers=1 -rss_limit_mb=2048 -print_final_stats=1) \
      >"$work/cargo.log" 2>&1; then
    status=0
  else
    status=1
  fi
  took=$(($(date +%s) - start))
  crashes=$(($(find "$dir/artifacts/$target" -type f | wc -l) - before))
  corpus=$(find "$dir/corpus/$target" -type f 2>/dev/null | wc -l)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz-0.log" 2>/dev/null | tail -n1)
  # The handlers' targets keep their server's data, the HomeKit targets their identities, in
  # /dev/shm (or the temp dir), and cannot remove them.
  rm -rf /dev/shm/hearth-fuzz-* "${TMPDIR:-/tmp}"/hearth-fuzz-*
  outcome=$crashes
  [ "$status" = 0 ] && [ "$crashes" = 0 ] || outcome="$crashes, FAILED (see $dir/artifacts/$target)"
  printf '| `%s` | %s | %s | %s | %s |\n' "$target" "${runs:-?}" "$took" "$corpus" "$outcome"
  if [ "$outcome" != 0 ]; then
    failed=1
    tail -n 30 "$work/fuzz-0.log" 2>/dev/null || tail -n 30 "$work/cargo.log"
  fi
done
exit $failed
