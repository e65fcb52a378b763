#!/usr/bin/env bash
# Draws the page's icons from src/dashboard/ui/icon.svg with headless Chromium and writes them
# next to it, where src/dashboard/assets.rs serves them:
#   icon-192.png, icon-512.png    the manifest's icons (rounded, transparent corners)
#   icon-maskable-512.png         the manifest's maskable icon (square, full bleed: the
#                                 launcher cuts its own shape; the ring stays in the safe circle)
#   apple-touch-icon.png          180 px, square (iOS rounds it and would fill clear corners black)
#   favicon-32.png                the favicon for browsers without SVG favicons
# Run it after changing icon.svg and commit the PNGs: the build never runs it. With pngquant and
# optipng installed (Debian packages of those names) the files are a fifth of the size.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
ui="$here/src/dashboard/ui"
chromium="${CHROMIUM:-/usr/bin/chromium}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$ui/icon.svg" "$work/round.svg"
# The square variant: the same drawing without the rounded corners.
sed 's/ rx="112"//' "$ui/icon.svg" > "$work/square.svg"
grep -q 'rx="112"' "$work/round.svg" || { echo "icon.svg has no rx=\"112\" to square off" >&2; exit 1; }

draw() { # source.svg size out.png
  local source="$1" size="$2" out="$3"
  cat > "$work/page.html" <<HTML
<!doctype html><html><head><style>html,body{margin:0;background:transparent}img{display:block}</style></head>
<body><img src="$source" width="$size" height="$size"></body></html>
HTML
  "$chromium" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --force-color-profile=srgb \
    --default-background-color=00000000 --window-size="$size,$size" \
    --screenshot="$work/out.png" "file://$work/page.html" >/dev/null 2>&1
  # Five flat colours and their edges: 16 palette entries keep each file a few kilobytes (they are
  # compiled into the binary, whose aarch64 build grows in 64 KiB steps).
  if command -v pngquant >/dev/null; then
    pngquant 16 --speed 1 --strip --force --output "$work/small.png" "$work/out.png" \
      && mv "$work/small.png" "$work/out.png"
  fi
  if command -v optipng >/dev/null; then optipng -quiet -o7 "$work/out.png"; fi
  mv "$work/out.png" "$ui/$out"
  echo "$out: $(wc -c < "$ui/$out") bytes"
}

draw round.svg 192 icon-192.png
draw round.svg 512 icon-512.png
draw square.svg 512 icon-maskable-512.png
draw square.svg 180 apple-touch-icon.png
draw round.svg 32 favicon-32.png
