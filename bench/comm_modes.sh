#!/usr/bin/env bash
# The communication game split_facts with TEXT, LATENT and HYBRID channels,
# trained with the same budget (stage-1 + stage-2 steps of the same batch),
# evaluated on the same 256 fresh episodes. Prints one row per mode: accuracy
# (untrained -> trained) against text tokens, latent vectors and bytes on the
# wire per episode. The no-communication baseline is 1/values (1/6 here).
# Usage: bash bench/comm_modes.sh [STAGE1_STEPS] [STAGE2_STEPS] [extra --set ...]
# (the study's hidden-state weight: add --set trainer.hybrid.distill_weight=20)
# TROUPE=path/to/troupe runs another build; COMM_MODES_OUT=DIR keeps the runs there.
# (TEXT, LATENT and HYBRID as an experiment file, with intervals and paired
#  differences: troupe experiment workflows/experiments/comm_modes.textproto.)
set -euo pipefail
cd "$(dirname "$0")/.."
s1=${1:-300}
s2=${2:-900}
shift $(( $# > 2 ? 2 : $# )) || true
out=${COMM_MODES_OUT:-$(mktemp -d)}
troupe=${TROUPE:-./build/workflows/troupe}
mkdir -p "$out"
for run in TEXT LATENT HYBRID LATENT+diff HYBRID+diff; do
  mode=${run%+diff}
  diff=false
  [ "$run" != "$mode" ] && diff=true
  "$troupe" train workflows/shipped/split_facts_hybrid.textproto --out "$out/$run" --quiet \
    --set channel[0].mode=$mode --set channel[1].mode=$mode --set trainer.hybrid.differentiable=$diff \
    --set trainer.hybrid.stage1_steps=$s1 --set trainer.hybrid.stage2_steps=$s2 "$@" > "$out/$run.log"
done
/usr/bin/env python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print(f"| channel | accuracy untrained | accuracy trained | text tokens / episode | latent vectors / episode | bytes / episode |")
print(f"|---|---|---|---|---|---|")
for run in ["TEXT", "LATENT", "HYBRID", "LATENT+diff", "HYBRID+diff"]:
    b = json.load(open(f"{out}/{run}/eval_untrained.json"))
    a = json.load(open(f"{out}/{run}/eval_trained.json"))
    print(f"| {run} | {b['accuracy']:.3f} | {a['accuracy']:.3f} | {a['text_tokens']:.2f} | {a['latent_vectors']:.0f} | {a['wire_bytes']:.0f} |")
print(f"(no communication: 1/6 = {1/6:.3f}; runs in {out})")
PY
