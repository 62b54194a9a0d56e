#!/usr/bin/env bash
# Behaviour unchanged? Runs six short runs with two troupe binaries (e.g. one
# built before a refactor, one after) and compares their metrics.jsonl, line
# by line, all keys but the wall-clock ones: the main job, a separate and a
# partial Red-Black workflow, sugarscape_negotiate (3 iterations each), a
# pretraining of a tiny model, and qa_rag on that tiny model.
# usage: bash bench/same_metrics.sh OLD_TROUPE NEW_TROUPE [OUT]
# e.g.   git worktree add /tmp/old HEAD~1 && (cd /tmp/old && bash scripts/build.sh)
#        bash bench/same_metrics.sh /tmp/old/build/workflows/troupe build/workflows/troupe
set -uo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 out=${3:-runs/same_metrics}
run_all() {  # TROUPE DIR
  local t=$1 d=$2
  rm -rf "$d" && mkdir -p "$d"
  "$t" pretrain workflows/shipped/base_model.textproto --out "$d/pretrain" --quiet \
    --set pretrain.max_tokens=12000 --set pretrain.vocab_size=512 --set pretrain.seq_len=64 --set pretrain.batch=4 \
    --set pretrain.eval_every=10 --set pretrain.eval_tokens=2048 --set pretrain.checkpoint_every=20 \
    --set pretrain.warmup_steps=5 --set model[0].llama.hidden_size=32 --set model[0].llama.intermediate_size=64 \
    --set model[0].llama.layers=2 --set model[0].llama.heads=2 --set model[0].llama.kv_heads=1 \
    --set pretrain.reading_share=0 > "$d/pretrain.log" 2>&1  # 2 layers: guided heads; no passages: none fits 64 tokens
  for wf in red_black red_black_separate red_black_partial sugarscape_negotiate; do
    "$t" train "workflows/shipped/$wf.textproto" --out "$d/$wf" --quiet --no-eval --set trainer.iterations=3 \
      > "$d/$wf.log" 2>&1
  done
  "$t" train workflows/shipped/qa_rag.textproto --out "$d/qa_rag" --quiet --no-eval --set trainer.iterations=3 \
    --set "model[0].hf_dir=$d/pretrain/model" --set trainer.sft.steps=3 --set trainer.sft.episodes=16 \
    --set trainer.episodes_per_iteration=16 > "$d/qa_rag.log" 2>&1
}
run_all "$old" "$out/old"
run_all "$new" "$out/new"
python3 bench/same_metrics.py "$out/old" "$out/new"
