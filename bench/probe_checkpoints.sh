#!/usr/bin/env bash
# The reading probes of a pretraining run's checkpoints, as the curve tables
# in docs/language_models.md show them:
#   bash bench/probe_checkpoints.sh RUN [STEP...]
# RUN is a `troupe pretrain` run folder; with no steps, every checkpoint and
# the final model (whose probes the run's summary.json already holds: taken
# from there, not probed again). Probes two models at a time on one thread each (a probe is
# about a minute and a half of one core for the base model's shape), writes
# each one's JSON beside the run (RUN/probes/STEP.json, kept: a second call
# only probes what is new) and prints a markdown table: the scores, the
# evidence gains in brackets, and the held-out perplexity metrics.jsonl logged
# at that step.
set -euo pipefail
run=${1:?usage: bash bench/probe_checkpoints.sh RUN [STEP...]}
shift
troupe=${TROUPE:-./build/workflows/troupe}
[ -x "$troupe" ] || { echo "no $troupe: build first (bash scripts/build.sh)" >&2; exit 2; }
[ -d "$run/checkpoints" ] || { echo "$run is not a pretraining run folder (no checkpoints/)" >&2; exit 2; }
mkdir -p "$run/probes"

declare -A model_of
if [ $# -gt 0 ]; then
  for step in "$@"; do
    dir=$(printf '%s/checkpoints/iter-%06d/model' "$run" "$step")
    [ -d "$dir" ] || { echo "no checkpoint at step $step ($dir)" >&2; exit 2; }
    model_of[$step]=$dir
  done
else
  for dir in "$run"/checkpoints/iter-*/model; do
    step=$(basename "$(dirname "$dir")"); step=$((10#${step#iter-}))
    model_of[$step]=$dir
  done
  if [ -f "$run/summary.json" ] && [ -d "$run/model" ]; then
    model_of[final]=$run/model
    # The run probed its final model as `troupe lm probe` does (the same defaults).
    [ -s "$run/probes/final.json" ] ||
      python3 -c 'import json, sys; p = json.load(open(sys.argv[1])).get("probes"); p and json.dump(p, open(sys.argv[2], "w"))' \
        "$run/summary.json" "$run/probes/final.json"
  fi
fi

pending=()
for step in "${!model_of[@]}"; do
  [ -s "$run/probes/$step.json" ] || pending+=("$step")
done
for step in "${pending[@]}"; do
  # Two at a time: wait for a slot.
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
  echo "probing step $step" >&2
  ( "$troupe" lm probe --model "${model_of[$step]}" --json --threads 1 --quiet > "$run/probes/$step.json.tmp" &&
      mv "$run/probes/$step.json.tmp" "$run/probes/$step.json" ) &
done
wait

python3 - "$run" "${!model_of[@]}" <<'EOF'
import json, os, sys
run, steps = sys.argv[1], sys.argv[2:]
perplexity = {}
with open(os.path.join(run, "metrics.jsonl")) as f:
    for line in f:
        j = json.loads(line)
        if "heldout_perplexity" in j and "step" in j:
            perplexity[str(j["step"])] = j["heldout_perplexity"]
summary_path = os.path.join(run, "summary.json")
summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
if "final" in steps:
    perplexity["final"] = summary.get("heldout_perplexity")
order = lambda s: summary.get("steps", 0) + 0.5 if s == "final" else int(s)
print("| step | induction | copy | needle | held-out perplexity |")
print("|---|---|---|---|---|")
for s in sorted(steps, key=order):
    by = json.load(open(os.path.join(run, "probes", s + ".json")))
    cells = [f'{by[n]["score"]:.3f} ({by[n]["evidence_gain"]:+.2f})' for n in ("induction", "copy", "needle")]
    label = f'{summary.get("steps")} (final)' if s == "final" else s
    ppl = perplexity.get(s)
    cells.append(f"{ppl:.1f}" if ppl else "")
    print(f"| {label} | " + " | ".join(cells) + " |")
EOF
