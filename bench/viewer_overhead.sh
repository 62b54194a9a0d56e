#!/usr/bin/env bash
# Does a live viewer slow a training run? The same short Red-Black training
# (publishing its session events) runs (1) without a subscriber, (2) with a
# subscriber that is stopped (SIGSTOP) and never reads: backpressure, if there
# were any, would show here, and (3) with troupe-view following it (headless
# under Xvfb, about 25 frames/s), which also competes for the CPU. Prints the
# run's episodes/s each way and the ratios to (1).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
port=$((22000 + RANDOM % 20000))
train() {
  ./build/workflows/troupe train workflows/shipped/red_black.textproto --quiet --no-eval --out "$work/$1" \
    --set trainer.iterations=${ITERATIONS:-8} --set trainer.episodes_per_iteration=32 \
    --publish "tcp://127.0.0.1:$port" > /dev/null
  python3 -c "import json,sys; v=[json.loads(l)['time/episodes_per_s'] for l in open('$work/$1/metrics.jsonl')]; print(sum(v[1:])/len(v[1:]))"
}
# Interleaved and repeated: runs on this machine vary by 5-10% from one to the next.
alone=(); stalled=(); watched=()
for round in 1 2; do
  alone+=($(train alone$round))
  ./build/workflows/troupe record --connect "tcp://127.0.0.1:$port" --out "$work/stalled.session" > /dev/null &
  recorder=$!
  sleep 1
  kill -STOP $recorder
  stalled+=($(train stalled$round))
  kill -CONT $recorder; kill $recorder; wait $recorder 2>/dev/null || true
  xvfb-run -a -s "-screen 0 1280x800x24" ./build/viewer/troupe-view --connect "tcp://127.0.0.1:$port" \
    --screenshot "$work/live.png" --seconds 600 > "$work/viewer.log" 2>&1 &
  viewer=$!
  sleep 2
  watched+=($(train watched$round))
  wait $viewer || true
done
mean() { python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; print(round(sum(v)/len(v), 2))" "$@"; }
alone=$(mean "${alone[@]}"); stalled=$(mean "${stalled[@]}"); watched=$(mean "${watched[@]}")
echo "episodes/s without a subscriber: $alone"
echo "episodes/s with a stopped subscriber: $stalled"
echo "episodes/s with troupe-view following: $watched"
python3 -c "print(f'ratios to no subscriber: stopped subscriber {$stalled/$alone:.3f}, troupe-view {$watched/$alone:.3f}')"
tail -1 "$work/viewer.log"
echo "viewer screenshot: $work/live.png"
