#!/usr/bin/env bash
# Does a live viewer slow a training run? The same short Red-Black training
# (publishing its session events) runs without a subscriber and with
# troupe-view following it (headless under Xvfb, ~30 frames/s); prints the
# run's episodes/s both ways and their ratio. The publisher never waits for a
# subscriber (it drops and counts instead), so what remains is CPU shared with
# the viewer's software rendering on this 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
port=$((22000 + RANDOM % 20000))
train() {
  ./build/workflows/troupe train workflows/red_black.textproto --quiet --no-eval --out "$work/$1" \
    --set trainer.iterations=${ITERATIONS:-8} --set trainer.episodes_per_iteration=32 \
    --publish "tcp://127.0.0.1:$port" > /dev/null
  python3 -c "import json,sys; v=[json.loads(l)['time/episodes_per_s'] for l in open('$work/$1/metrics.jsonl')]; print(sum(v[1:])/len(v[1:]))"
}
alone=$(train alone)
xvfb-run -a -s "-screen 0 1280x800x24" ./build/viewer/troupe-view --connect "tcp://127.0.0.1:$port" \
  --screenshot "$work/live.png" --seconds 600 > "$work/viewer.log" 2>&1 &
viewer=$!
sleep 2
watched=$(train watched)
wait $viewer || true
echo "episodes/s without a viewer: $alone"
echo "episodes/s with troupe-view following: $watched"
python3 -c "print(f'ratio (with / without): {$watched/$alone:.3f}')"
tail -1 "$work/viewer.log"
echo "viewer screenshot: $work/live.png"
