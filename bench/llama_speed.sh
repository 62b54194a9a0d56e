#!/usr/bin/env bash
# troupe's Llama-family decoder against the same model in PyTorch, side by
# side in one command, same thread count: training tokens/s and KV-cached
# greedy generation tokens/s at batch 1 and 64, and training and batch-64
# generation again with the forward pass under bfloat16 autocast (troupe: a
# model's `precision: BF16`). Needs Debian's python3-torch (the same version
# as libtorch-dev): apt-get install python3-torch.
# Usage: bash bench/llama_speed.sh [THREADS] [ROUNDS]   (rounds alternate the two; medians are shown)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
rounds=${2:-3}
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || { echo "needs python3-torch: apt-get install python3-torch" >&2; exit 2; }
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  ./build/bench/llama_bench "$threads" >> "$out/troupe.jsonl"
  "$python" bench/llama_reference_bench.py "$threads" >> "$out/pytorch.jsonl"
done
"$python" - "$out" "$threads" <<'PY'
import json, statistics, sys
out, threads = sys.argv[1], sys.argv[2]
load = lambda n: [json.loads(l) for l in open(f"{out}/{n}.jsonl")]
t, p = load("troupe"), load("pytorch")
print(f"| measure ({threads} threads, median of {len(t)}) | troupe | PyTorch | ratio | per-round ratios |")
print("|---|---|---|---|---|")
for key, label in [("train_tokens_per_s", "training tokens/s"), ("generate_b1_tokens_per_s", "generation tokens/s, batch 1"),
                   ("generate_b64_tokens_per_s", "generation tokens/s, batch 64"),
                   ("train_tokens_per_s_bf16", "training tokens/s, bf16 autocast"),
                   ("generate_b64_tokens_per_s_bf16", "generation tokens/s, batch 64, bf16 autocast")]:
    a, b = statistics.median(x[key] for x in t), statistics.median(x[key] for x in p)
    rounds = sorted(x[key] / y[key] for x, y in zip(t, p))
    print(f"| {label} | {a:.0f} | {b:.0f} | {a / b:.2f}x | {rounds[0]:.2f}-{rounds[-1]:.2f} |")
for name, rows in (("troupe", t), ("PyTorch", p)):
    tr = statistics.median(x["train_tokens_per_s_bf16"] / x["train_tokens_per_s"] for x in rows)
    ge = statistics.median(x["generate_b64_tokens_per_s_bf16"] / x["generate_b64_tokens_per_s"] for x in rows)
    print(f"{name}: bf16 autocast over float32: training {tr:.2f}x, generation at batch 64 {ge:.2f}x")
PY
