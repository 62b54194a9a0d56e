#!/usr/bin/env bash
# Sugarscape engine speed in agent-steps/s (live traders summed over steps,
# divided by wall time), in one command:
#  1. g1mt, 200 traders, 200 steps, with and without trade, one thread: troupe
#     against the same rules in plain Python (bench/sugarscape_reference.py,
#     one object per trader) measured in this run, and against Mesa 3.2's
#     figure on this machine as the issue quotes it (Mesa itself is not
#     installable here: no PyPI);
#  2. the same seeds' statistics from both, side by side (same rules, different
#     random streams: they should agree within their intervals);
#  3. scale: 1000 x 1000 (the classic map tiled), 250,000 traders, per step;
#  4. many worlds: 64 g1mt worlds on 1 and on 2 threads;
#  5. the cost of an agent-step as population and vision grow.
# Usage: bash bench/sugarscape_speed.sh [ROUNDS] [REFERENCE_SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
ref_seeds=${2:-5}
out=$(mktemp -d)
map=games/sugarscape/data/sugar-map.txt
./build/bench/sugarscape_bench g1mt "$rounds" > "$out/g1mt.jsonl"
/usr/bin/env python3 bench/sugarscape_reference.py "$map" "$ref_seeds" 200 > "$out/ref_trade.jsonl"
/usr/bin/env python3 bench/sugarscape_reference.py "$map" "$ref_seeds" 200 --no-trade > "$out/ref_notrade.jsonl"
./build/workflows/troupe run workflows/shipped/sugarscape_g1mt.textproto --seeds 20 --json > "$out/stats.jsonl"
/usr/bin/env python3 bench/sugarscape_reference.py "$map" 20 200 > "$out/ref_stats.jsonl"
./build/bench/sugarscape_bench scale 10 > "$out/scale.jsonl"
./build/bench/sugarscape_bench worlds 64 1 > "$out/worlds.jsonl"
./build/bench/sugarscape_bench worlds 64 2 >> "$out/worlds.jsonl"
./build/bench/sugarscape_bench grid > "$out/grid.jsonl"
/usr/bin/env python3 - "$out" <<'PY'
import json, math, statistics, sys
out = sys.argv[1]
load = lambda n: [json.loads(l) for l in open(f"{out}/{n}.jsonl") if l.strip()]
mesa = {True: 1.7e4, False: 2.3e4}
print("| g1mt, 200 traders, 200 steps, 1 thread | troupe agent-steps/s (median, range) | plain Python (same run) | troupe / Python | troupe / Mesa 3.2 (quoted) |")
print("|---|---|---|---|---|")
ref = {True: load("ref_trade"), False: load("ref_notrade")}
for row in load("g1mt"):
    trade = row["trade"]
    py = statistics.median(r["agent_steps"] / r["seconds"] for r in ref[trade])
    print(f"| {'with' if trade else 'without'} trade | {row['agent_steps_per_s']:.3g} ({row['min']:.3g}-{row['max']:.3g}) "
          f"| {py:.3g} | {row['agent_steps_per_s'] / py:.0f}x | {row['agent_steps_per_s'] / mesa[trade]:.0f}x |")
print()
def spread(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    m = statistics.mean(v)
    t = {20: 2.093}.get(len(v), 1.96)
    return f"{m:.4g} +- {t * statistics.stdev(v) / math.sqrt(len(v)):.2g}"
stats, ref_stats = load("stats"), load("ref_stats")
print(f"| g1mt after 200 steps, mean +- 95% interval over {len(stats)} seeds | troupe | plain Python reference |")
print("|---|---|---|")
for key in ["population_end", "trades", "mean_price", "gini_end"]:
    print(f"| {key} | {spread(stats, key)} | {spread(ref_stats, key)} |")
print()
s = load("scale")[0]
print(f"scale: 1000 x 1000, 250,000 traders: {s['seconds_per_step'] * 1e3:.0f} ms per step, "
      f"{s['agent_steps_per_s']:.3g} agent-steps/s (one thread; a world's step is sequential by its rules)")
for w in load("worlds"):
    print(f"many worlds: {w['worlds']} g1mt worlds on {w['threads']} thread(s): {w['agent_steps_per_s']:.3g} agent-steps/s in all")
print()
grid = load("grid")
visions = sorted({g["vision"] for g in grid})
print("| ns per agent-step (g1mt, 100 steps) | " + " | ".join(f"vision {v}" for v in visions) + " |")
print("|---|" + "---|" * len(visions))
for p in sorted({g["population"] for g in grid}):
    cells = {g["vision"]: g["ns_per_agent_step"] for g in grid if g["population"] == p}
    print(f"| {p} traders | " + " | ".join(f"{cells[v]:.0f}" for v in visions) + " |")
PY
rm -rf "$out"
