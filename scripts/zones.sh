#!/usr/bin/env bash
# Writes src/zones.txt: every IANA time zone name (zones and links, `US/Eastern` too)
# with its current rule as a POSIX TZ string, the table hearth falls back on where the system has
# no tz database (its container images and Home Assistant add-on are FROM scratch; OpenWrt keeps
# none). The rule of each name is the footer of its TZif file (version 2 or later: the last
# line, e.g. `CET-1CEST,M3.5.0,M10.5.0/3`); the names are tzdata.zi's `Z` and `L` lines.
#   scripts/zones.sh [ZONEINFO]     (default: /usr/share/zoneinfo)
# Run it when tzdata changes and commit the table: the build never reads the build machine's
# zoneinfo. Rules that many names share are written once: one line per rule, the rule, a tab,
# then its names separated by spaces, lines sorted by rule and names sorted on each line.
set -euo pipefail
cd "$(dirname "$0")/.."
zoneinfo="${1:-/usr/share/zoneinfo}"
out=src/zones.txt
zi="$zoneinfo/tzdata.zi"
[ -f "$zi" ] || { echo "$zi is missing: is tzdata installed?" >&2; exit 1; }
version=$(sed -n '1s/^# version //p' "$zi")
[ -n "$version" ] || { echo "$zi names no version on its first line" >&2; exit 1; }
# Where the files came from, for the table's header: Debian's package and its version if so.
package=$(dpkg-query -W -f '${Package} ${Version}' tzdata 2>/dev/null || true)

pairs=$(mktemp)
trap 'rm -f "$pairs"' EXIT
awk '$1 == "Z" { print $2 } $1 == "L" { print $3 }' "$zi" | LC_ALL=C sort -u | while read -r name; do
  file="$zoneinfo/$name"
  [ "$(head -c 4 "$file")" = TZif ] || { echo "$file is not a TZif file" >&2; exit 1; }
  v=$(head -c 5 "$file" | tail -c 1)
  case "$v" in 2|3|4) ;; *) echo "$file is TZif version '$v', which has no footer" >&2; exit 1 ;; esac
  rule=$(tail -n 1 "$file")
  [ -n "$rule" ] || { echo "$file has an empty footer (no POSIX rule for its future)" >&2; exit 1; }
  case "$rule" in *[[:space:]]*) echo "$file: a footer with white space: '$rule'" >&2; exit 1 ;; esac
  printf '%s\t%s\n' "$rule" "$name"
done > "$pairs"

{
  echo "# IANA time zone names and their current rules as POSIX TZ strings, from tzdata $version"
  echo "# (${package:-tzdata} in $zoneinfo: the footers of its TZif files). Written by"
  echo "# scripts/zones.sh: do not edit. One line per rule: the rule, a tab, its names."
  LC_ALL=C sort -t "$(printf '\t')" -k1,1 -k2,2 "$pairs" | awk -F '\t' '
    $1 != rule { if (NR > 1) printf "\n"; rule = $1; printf "%s\t%s", $1, $2; next }
    { printf " %s", $2 }
    END { printf "\n" }'
} > "$out"
echo "$out: $(grep -vc '^#' "$out") rules, $(wc -l < "$pairs") names, $(wc -c < "$out") bytes"
