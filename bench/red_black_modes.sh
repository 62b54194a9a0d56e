#!/usr/bin/env bash
# Red-Black team deliberation with TEXT, HYBRID and LATENT messages: the main
# job's workflow (workflows/red_black_hybrid.textproto: team A on one shared
# model vs. tit_for_tat) trained for the same number of iterations from the same
# seed, each mode evaluated on the same fresh episodes before and after. Prints
# team A's score and cooperation against the text tokens, latent vectors and
# bytes its speakers put on the wire per episode, and the training time.
# Usage: bash bench/red_black_modes.sh [ITERATIONS] [EVAL_EPISODES] [extra --set ...]
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-20}
evals=${2:-128}
shift $(( $# > 2 ? 2 : $# )) || true
out=${RED_BLACK_MODES_OUT:-$(mktemp -d)}
mkdir -p "$out"
for mode in TEXT HYBRID LATENT; do
  words=1
  [ "$mode" = LATENT ] && words=0
  ./build/workflows/troupe train workflows/red_black_hybrid.textproto --out "$out/$mode" --quiet \
    --set channel[0].mode=$mode --set channel[0].text_words=$words --set trainer.iterations=$iterations \
    --set trainer.max_minutes=0 --set trainer.eval_episodes=$evals "$@" > "$out/$mode.log"
done
/usr/bin/env python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| messages | team A score untrained | trained | team A cooperation trained | text tokens / episode | latent vectors / episode | bytes / episode | training s |")
print("|---|---|---|---|---|---|---|---|")
for mode in ["TEXT", "HYBRID", "LATENT"]:
    b = json.load(open(f"{out}/{mode}/eval_untrained.json"))
    a = json.load(open(f"{out}/{mode}/eval_trained.json"))
    last = [json.loads(l) for l in open(f"{out}/{mode}/metrics.jsonl")][-1]
    print(f"| {mode} | {b['team_a_score']:.1f} | {a['team_a_score']:.1f} | {a['team_a_cooperation']:.3f} | "
          f"{a.get('text_tokens', 0):.1f} | {a.get('latent_vectors', 0):.0f} | {a.get('wire_bytes', 0):.0f} | {last['time/elapsed_s']:.0f} |")
print(f"(best reachable team A score: 111; runs in {out})")
PY
