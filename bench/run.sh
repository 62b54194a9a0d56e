#!/usr/bin/env bash
# Runs troupe's benchmarks on this machine and prints their figures:
#  1. rollout throughput at 1/16/256 concurrent Red-Black episodes on one model
#     (ratios against the 1-episode run of the same process) and forward calls
#     per game round;
#  2. troupe's message path against raw libzmq (inproc and tcp, 64 B-64 KiB);
#  3. the default training run (the README's main job), its wall time and peak
#     resident memory, read from the kernel's accounting of the process;
#  4. the QA retriever: index build time, queries/s and recall@k (JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
echo "== rollout throughput (workflows/shipped/red_black.textproto, untrained model)"
./build/bench/rollout_bench workflows/shipped/red_black.textproto
echo
echo "== transport: troupe frames vs raw libzmq (ratios against references measured in this run)"
./build/bench/transport_bench
echo
echo "== default training run"
out=$(mktemp -d)
/usr/bin/env python3 - "$out" <<'PY'
import resource, subprocess, sys, time
out = sys.argv[1]
t0 = time.time()
subprocess.run(["./build/workflows/troupe", "train", "workflows/shipped/red_black.textproto", "--out", out + "/run", "--quiet"],
               check=True)
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"wall time {time.time() - t0:.0f} s, peak resident memory {peak_kib / 1024:.0f} MiB")
PY
echo
echo "== QA retriever (Xapian BM25 over the Factbook passages; recall@4 on the test split)"
./build/bench/retrieval_bench
