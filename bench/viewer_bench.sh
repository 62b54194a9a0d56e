#!/usr/bin/env bash
# troupe-view frame time in replay at 1280x800 (headless, Mesa llvmpipe under
# Xvfb) with a session of 10,000 iterations loaded: a short Red-Black training
# is recorded, repeated to 10,000 iterations (bench/make_session), and the
# viewer draws 300 frames of the full layout and of each heavy panel. Prints
# mean / p50 / p95 / max frame times in ms; the target is a mean under 16 ms.
# Then the Sugarscape view: a recorded g1mt world (50 x 50, 200 steps) drawn
# whole every frame (2,500 cells, the traders and their trades).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
./build/workflows/troupe train workflows/shipped/red_black.textproto --quiet --no-eval --out "$work/run" \
  --set trainer.iterations=6 --set trainer.episodes_per_iteration=16 --record "$work/short.session" > /dev/null
./build/bench/make_session "$work/short.session" "$work/long.session" 10000 50
for panel in "" training messages episode graph; do
  args=("$work/long.session" --bench-frames 300 --iteration 9950 --episode 0 --message 300)
  [ -n "$panel" ] && args+=(--panel "$panel")
  printf '%-10s ' "${panel:-all}"
  xvfb-run -a -s "-screen 0 1280x800x24" ./build/viewer/troupe-view "${args[@]}" | tail -1
done
./build/workflows/troupe run workflows/shipped/sugarscape_g1mt.textproto --quiet --record "$work/sugarscape.session" > /dev/null
printf '%-10s ' "sugarscape"
xvfb-run -a -s "-screen 0 1280x800x24" ./build/viewer/troupe-view "$work/sugarscape.session" --bench-frames 300 \
  --iteration 1 --episode 0 --panel episode | tail -1
# Negotiated trade: a snapshot per decision round, the dialogue panel.
./build/workflows/troupe run bench/sugarscape_negotiate_reference.textproto --quiet --record "$work/negotiation.session" > /dev/null
printf '%-10s ' "negotiate"
xvfb-run -a -s "-screen 0 1280x800x24" ./build/viewer/troupe-view "$work/negotiation.session" --bench-frames 300 \
  --iteration 1 --episode 0 --panel episode | tail -1
