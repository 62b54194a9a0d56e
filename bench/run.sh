#!/usr/bin/env bash
# Runs troupe's benchmarks and writes OUT/report.json and OUT/report.md
# (default OUT: runs/bench), every ratio measured in the same run:
#  1. rollout episodes/s at 1/16/256 concurrent Red-Black episodes, with and
#     without prefix reuse, and the positions the model encodes per episode;
#  2. the main job's training loop against the same loop written plainly in
#     PyTorch (bench/red_black_reference.py; needs Debian's python3-torch),
#     with troupe's iteration split into generation, environment, credit, update;
#  3. a scaling table: team size, model width, concurrent episodes;
#  4. troupe's message path against raw libzmq;
#  5. the QA retriever: index build time, queries/s and recall@k;
#  6. the update scoring each episode's calls as prefix trees against scoring
#     every call on its own: positions per episode, update s, episodes/s.
# Takes about 10 minutes on 2 cores; `--quick` checks the report in about 5.
#   bash bench/run.sh [OUT] [--quick] [--no-transport] [--no-retrieval]
set -euo pipefail
cd "$(dirname "$0")/.."
out=runs/bench
options=()
for a in "$@"; do
  case "$a" in --*) options+=("$a") ;; *) out=$a ;; esac
done
/usr/bin/python3 -c "import torch" 2>/dev/null || {
  echo "bench/run.sh needs Debian's python3-torch for its reference loop: apt-get install python3-torch" >&2
  exit 2
}
bash scripts/build.sh >/dev/null
/usr/bin/python3 bench/report.py "$out" "${options[@]}"
