#!/usr/bin/env bash
# Red-Black team deliberation with TEXT, HYBRID and LATENT messages: the main
# job's workflow (workflows/red_black_hybrid.textproto: team A on one shared
# model vs. tit_for_tat) trained for the same number of iterations from the same
# seed, each mode evaluated on the same fresh episodes before and after. Prints
# team A's score and cooperation against the text tokens, latent vectors and
# bytes its speakers put on the wire per episode, and the training time.
# With several seeds (SEEDS="7 8 9"), each cell is the mean over seeds and the
# trained score also lists every seed's value.
# Usage: [SEEDS="7 8 9"] bash bench/red_black_modes.sh [ITERATIONS] [EVAL_EPISODES] [extra --set ...]
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-20}
evals=${2:-128}
shift $(( $# > 2 ? 2 : $# )) || true
seeds=${SEEDS:-7}
out=${RED_BLACK_MODES_OUT:-$(mktemp -d)}
mkdir -p "$out"
for seed in $seeds; do
  for mode in TEXT HYBRID LATENT; do
    words=1
    [ "$mode" = LATENT ] && words=0
    ./build/workflows/troupe train workflows/red_black_hybrid.textproto --out "$out/$mode-$seed" --quiet \
      --seed "$seed" --set channel[0].mode=$mode --set channel[0].text_words=$words \
      --set trainer.iterations=$iterations --set trainer.max_minutes=0 --set trainer.eval_episodes=$evals "$@" \
      > "$out/$mode-$seed.log"
  done
done
/usr/bin/env python3 - "$out" $seeds <<'PY'
import json, sys
out, seeds = sys.argv[1], sys.argv[2:]
mean = lambda xs: sum(xs) / len(xs)
print("| messages | team A score untrained | trained | trained, per seed | team A cooperation trained | text tokens / episode | latent vectors / episode | bytes / episode | training s |")
print("|---|---|---|---|---|---|---|---|---|")
for mode in ["TEXT", "HYBRID", "LATENT"]:
    b = [json.load(open(f"{out}/{mode}-{s}/eval_untrained.json")) for s in seeds]
    a = [json.load(open(f"{out}/{mode}-{s}/eval_trained.json")) for s in seeds]
    t = [[json.loads(l) for l in open(f"{out}/{mode}-{s}/metrics.jsonl")][-1]["time/elapsed_s"] for s in seeds]
    m = lambda key, runs: mean([r.get(key, 0) for r in runs])
    per_seed = " / ".join(f"{r['team_a_score']:.1f}" for r in a)
    print(f"| {mode} | {m('team_a_score', b):.1f} | {m('team_a_score', a):.1f} | {per_seed} | "
          f"{m('team_a_cooperation', a):.3f} | {m('text_tokens', a):.1f} | {m('latent_vectors', a):.0f} | "
          f"{m('wire_bytes', a):.0f} | {mean(t):.0f} |")
print(f"(seeds {' '.join(seeds)}; best reachable team A score: 111; runs in {out})")
PY
