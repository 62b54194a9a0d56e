#!/usr/bin/env bash
# Interleaved rounds of short main-job runs, one per variant per round, so a
# machine whose speed drifts from minute to minute drifts under every variant
# alike. Each variant is LABEL=OVERRIDES (a space-separated list of --set
# values, or "-" for none); LABEL@BINARY=... runs another troupe build (the
# build before a change, say). Per run: the medians over iterations 2..N of
# update seconds, generation seconds and episodes/s including training, and
# the update's positions per episode; then each variant's median over rounds.
#   bash bench/update_rounds.sh OUT ROUNDS ITERATIONS VARIANT...
#   bash bench/update_rounds.sh runs/rounds 3 9 trees=- per_call=trainer.tree_row_positions=0
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1 rounds=$2 iterations=$3
shift 3
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for variant in "$@"; do
    label=${variant%%=*} overrides=${variant#*=} binary=./build/workflows/troupe
    if [[ $label == *@* ]]; then binary=${label#*@} label=${label%%@*}; fi
    sets=()
    if [[ $overrides != - ]]; then for o in $overrides; do sets+=(--set "$o"); done; fi
    dir=$out/$label-$round
    rm -rf "$dir"
    "$binary" train workflows/shipped/red_black.textproto --set trainer.iterations="$iterations" \
      --set trainer.max_minutes=0 "${sets[@]}" --out "$dir" --quiet --no-eval > "$dir.log" 2>&1
    echo "round $round: $label done" >&2
  done
done
python3 - "$out" "$rounds" "$@" <<'PY'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
keys = [("time/update_s", "update s"), ("time/generate_s", "generation s"),
        ("time/episodes_per_s", "episodes/s"), ("update_positions_per_episode", "update positions/episode")]
print("| variant | " + " | ".join(name for _, name in keys) + " |")
print("|---|" + "---:|" * len(keys))
for v in variants:
    label = v.split("=", 1)[0].split("@", 1)[0]
    per_round = []
    for r in range(1, rounds + 1):
        rows = [json.loads(l) for l in open(f"{out}/{label}-{r}/metrics.jsonl")][1:]
        # A build older than a metric has none of it: its cell says "-".
        per_round.append([statistics.median(row[k] for row in rows) if k in rows[0] else None for k, _ in keys])
    fmt = lambda x: f"{x:,.0f}" if x >= 1000 else f"{x:.3g}"
    cells = []
    for i in range(len(keys)):
        values = [p[i] for p in per_round]
        if None in values:
            cells.append("-")
            continue
        cells.append(f"{fmt(statistics.median(values))} ({' / '.join(fmt(x) for x in values)})")
    print(f"| {label} | " + " | ".join(cells) + " |")
PY
