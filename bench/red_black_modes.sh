#!/usr/bin/env bash
# Red-Black team deliberation with TEXT, HYBRID and LATENT messages: the main
# job's workflow (workflows/shipped/red_black_hybrid.textproto: team A on one shared
# model vs. tit_for_tat) trained for the same number of iterations from the same
# seed, each mode evaluated on the same fresh episodes before and after. Two
# controls: TEXT with the recommendation only (reason_words 0), and SILENT
# (the game's `silent` parameter: seats speak, nobody sees the messages).
# Prints team A's score and cooperation against the text tokens, latent vectors
# and bytes its speakers put on the wire per episode, and the training time.
# With several seeds (SEEDS="7 8 9") each cell is the mean over seeds and the
# trained score also lists every seed's value. TABLE_ONLY=1 prints the table
# of runs already in RED_BLACK_MODES_OUT.
# Usage: [SEEDS="7 8 9"] bash bench/red_black_modes.sh [ITERATIONS] [EVAL_EPISODES] [extra --set ...]
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-20}
evals=${2:-128}
shift $(( $# > 2 ? 2 : $# )) || true
seeds=${SEEDS:-7}
out=${RED_BLACK_MODES_OUT:-$(mktemp -d)}
mkdir -p "$out"
runs="TEXT TEXT1 SILENT HYBRID LATENT"
settings() {
  case "$1" in
    TEXT) echo "--set channel[0].mode=TEXT" ;;
    TEXT1) echo "--set channel[0].mode=TEXT --set game.param[4].int=0" ;;
    SILENT) echo "--set channel[0].mode=TEXT --set game.param[5].name=silent --set game.param[5].flag=true" ;;
    HYBRID) echo "--set channel[0].mode=HYBRID --set channel[0].text_words=1" ;;
    LATENT) echo "--set channel[0].mode=LATENT --set channel[0].text_words=0" ;;
  esac
}
if [ "${TABLE_ONLY:-0}" != 1 ]; then
  for seed in $seeds; do
    for run in $runs; do
      # shellcheck disable=SC2046
      ./build/workflows/troupe train workflows/shipped/red_black_hybrid.textproto --out "$out/$run-$seed" --quiet \
        --seed "$seed" $(settings "$run") --set trainer.iterations=$iterations --set trainer.max_minutes=0 \
        --set trainer.eval_episodes=$evals "$@" > "$out/$run-$seed.log"
    done
  done
fi
/usr/bin/env python3 - "$out" $seeds <<'PY'
import json, sys
out, seeds = sys.argv[1], sys.argv[2:]
mean = lambda xs: sum(xs) / len(xs)
names = {"TEXT": "TEXT (recommendation + reasoning)", "TEXT1": "TEXT, recommendation only (control)",
         "SILENT": "no messages seen (control; speakers still speak)", "HYBRID": "HYBRID (vectors + recommendation)",
         "LATENT": "LATENT (vectors)"}
print("| messages | team A score untrained | trained (mean) | trained, per seed | team A cooperation | text tokens / episode | latent vectors / episode | bytes / episode | training s |")
print("|---|---|---|---|---|---|---|---|---|")
for run in ["TEXT", "TEXT1", "SILENT", "HYBRID", "LATENT"]:
    b = [json.load(open(f"{out}/{run}-{s}/eval_untrained.json")) for s in seeds]
    a = [json.load(open(f"{out}/{run}-{s}/eval_trained.json")) for s in seeds]
    t = [[json.loads(l) for l in open(f"{out}/{run}-{s}/metrics.jsonl")][-1]["time/elapsed_s"] for s in seeds]
    m = lambda key, runs: mean([r.get(key, 0) for r in runs])
    per_seed = " / ".join(f"{r['team_a_score']:.1f}" for r in a)
    print(f"| {names[run]} | {m('team_a_score', b):.1f} | {m('team_a_score', a):.1f} | {per_seed} | "
          f"{m('team_a_cooperation', a):.3f} | {m('text_tokens', a):.0f} | {m('latent_vectors', a):.0f} | "
          f"{m('wire_bytes', a):.0f} | {mean(t):.0f} |")
print(f"(seeds {' '.join(seeds)}; all-cooperate scores 75, the best reply to tit_for_tat 111; runs in {out})")
PY
