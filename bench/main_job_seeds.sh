#!/usr/bin/env bash
# The README's main job over many seeds, one after the other on this machine:
# for each seed, `troupe train workflows/shipped/red_black.textproto --seed S`
# within the workflow's time budget, then `troupe eval --episodes 200` of the
# trained model. Writes OUT/seeds.json (one object per seed) and OUT/seeds.md
# (a table with the share of the best score, the mean with its 95% interval,
# and how many seeds reach 85%), and prints the table.
#
#   bash bench/main_job_seeds.sh [OUT] [SEEDS] [-- extra train/eval options]
#   bash bench/main_job_seeds.sh runs/seeds "1 2 3 4 5 6 7 8 9 10"
#   bash bench/main_job_seeds.sh runs/seeds_independent "1 2" -- --set trainer.correlated_team_sampling=false
#
# Run it on an otherwise idle machine: the budget is wall-clock time, so other
# work on the cores means fewer iterations. Takes about 5.5 minutes per seed.
# (The same study as an experiment file, intervals over games and seeds together:
#  troupe experiment workflows/experiments/main_job_seeds.textproto.)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/main_job_seeds}
seeds=${2:-"1 2 3 4 5 6 7 8 9 10"}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
extra=("$@")
workflow=workflows/shipped/red_black.textproto
troupe=./build/workflows/troupe
[ -x "$troupe" ] || bash scripts/build.sh >/dev/null
mkdir -p "$out"
: >"$out/seeds.jsonl"
for s in $seeds; do
  run="$out/seed$s"
  rm -rf "$run"
  start=$(date +%s.%N)
  "$troupe" train "$workflow" --seed "$s" --out "$run" --quiet --no-eval "${extra[@]}" >"$out/seed$s.train.log" 2>&1
  end=$(date +%s.%N)
  "$troupe" eval "$workflow" --seed "$s" --checkpoint "$run" --episodes 200 --json "${extra[@]}" >"$out/seed$s.eval.json"
  python3 - "$s" "$start" "$end" "$run" "$out/seed$s.eval.json" >>"$out/seeds.jsonl" <<'PY'
import json, sys
seed, start, end, run, eval_file = sys.argv[1:]
metrics = [json.loads(l) for l in open(run + "/metrics.jsonl") if l.strip()]
iterations = max((m.get("iteration", 0) for m in metrics), default=0)
e = json.load(open(eval_file))
print(json.dumps({"seed": int(seed), "train_seconds": round(float(end) - float(start), 1), "iterations": iterations,
                  "team_a_score": e["team_a_score"], "team_a_cooperation": e["team_a_cooperation"],
                  "invalid_outputs": e["invalid_outputs"], "episodes": e["episodes"]}))
PY
  tail -n 1 "$out/seeds.jsonl"
done
python3 - "$out" <<'PY'
import json, math, statistics, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(out + "/seeds.jsonl") if l.strip()]
best = 111.0  # the best score team A can make against tit_for_tat (the train command's table)
lines = ["| seed | iterations | train s | team A score (200 episodes) | % of best | cooperation |",
         "|---:|---:|---:|---:|---:|---:|"]
shares = []
for r in rows:
    share = 100 * r["team_a_score"] / best
    shares.append(share)
    lines.append(f"| {r['seed']} | {r['iterations']} | {r['train_seconds']:.0f} | {r['team_a_score']:.1f} | "
                 f"{share:.1f} | {r['team_a_cooperation']:.3f} |")
n = len(shares)
mean = statistics.mean(shares)
half = 1.96 * statistics.stdev(shares) / math.sqrt(n) if n > 1 else float("nan")
reach = sum(s >= 85 for s in shares)
summary = (f"{n} seeds: mean {mean:.1f}% of best [{mean - half:.1f}, {mean + half:.1f}] (95% interval over seeds), "
           f"lowest {min(shares):.1f}%, {reach} of {n} at 85% or more")
table = "\n".join(lines) + "\n\n" + summary + "\n"
open(out + "/seeds.md", "w").write(table)
json.dump({"seeds": rows, "mean_share_of_best": mean, "interval": [mean - half, mean + half],
           "lowest_share_of_best": min(shares), "seeds_at_85": reach}, open(out + "/seeds.json", "w"), indent=1)
print(table)
PY
