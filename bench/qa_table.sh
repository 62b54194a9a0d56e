#!/usr/bin/env bash
# The QA pipelines' table: closed-book, RAG (one agent) and decompose (two
# agents, on one shared model, on two separate models, and on one model with a
# HYBRID channel from decomposer to answerer), each trained by
# `troupe train` (a supervised warm start on oracle trajectories, then GRPO on
# the answer's F1) and evaluated on the whole Factbook QA test split untrained,
# after the warm start and after RL (greedy: the workflows set
# trainer.greedy_eval): EM and F1 with 95% bootstrap intervals over questions,
# per question type, retrieval recall and calls per question, then paired
# differences (RL - SFT, RAG - closed-book, ...) on the same questions. The
# one-agent workflows then continue to 200 RL iterations from the same warm
# start (<workflow>_rl200; LONG_ITERATIONS sets the number). Every trained
# run is then evaluated on the 120 test questions worded by hand (a row beside
# the same questions as generated, and their paired difference), and each
# decompose workflow with the oracle decomposing (its reader given the
# supporting passages); the table counts the capital questions each answers.
#
#   bash bench/qa_table.sh [OUT_DIR] [--set FIELD=VALUE ...]
#
# Needs troupe's base model (runs/base_model/model; an hour):
#   ./build/workflows/troupe pretrain workflows/shipped/base_model.textproto --out runs/base_model
# Against a base model that has not read the test countries' pages (docs/pipelines/qa.md, QA
# pipelines), pretrain it with
#   --set pretrain.unseen_questions=factbook_qa:test --out runs/base_model_unseen
# and train the one-model workflows on it into another folder, e.g.
#   bash bench/qa_table.sh runs/qa_unseen --set trainer.iterations=20 \
#     --set "model[0].hf_dir=runs/base_model_unseen/model"
# (qa_decompose_separate has two models: give model[1] too, or leave it out).
# Runs JOBS trainings at a time (default 2: each uses one LibTorch thread);
# QA_WORKFLOWS="qa_rag qa_decompose" runs only those (the table then shows
# only them: run it once more without it for the whole table).
# Writes OUT_DIR (default runs/qa_table)/<workflow>/ run folders, their logs,
# table.md and table.json. With --set trainer.iterations=20 (measured
# 2026-12-06 on one core of a 2-core machine shared with the others): closed-book
# about 3 minutes, RAG 15, a text decompose workflow 10-15 and the HYBRID one
# 1.5 hours (its warm start); the 200-iteration runs 4 and 8; the table about
# 1h45m in all. JOBS=2 runs two at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
out=runs/qa_table
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then out=$1; shift; fi
troupe=./build/workflows/troupe
if [ ! -f runs/base_model/model/config.json ]; then
  echo "qa_table: runs/base_model/model is missing; make it with" >&2
  echo "  $troupe pretrain workflows/shipped/base_model.textproto --out runs/base_model" >&2
  exit 1
fi
mkdir -p "$out"
# QA_WORKFLOWS (space-separated) runs a part of the table, e.g. while another part trains.
read -r -a workflows <<<"${QA_WORKFLOWS:-qa_closed_book qa_rag qa_decompose qa_decompose_separate qa_decompose_hybrid}"
jobs=${JOBS:-2}
start=$(date +%s)
running=0
for w in "${workflows[@]}"; do
  if [ -f "$out/$w/eval_trained.json" ]; then echo "qa_table: $w done before, kept"; continue; fi
  rm -rf "${out:?}/$w"
  echo "qa_table: training $w (log: $out/$w.log)"
  "$troupe" train "workflows/shipped/$w.textproto" --out "$out/$w" "$@" >"$out/$w.log" 2>&1 &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
echo "qa_table: trainings took $(($(date +%s) - start)) s"
for w in "${workflows[@]}"; do
  [ -f "$out/$w/eval_trained.json" ] || echo "qa_table: $w did not finish (see $out/$w.log)" >&2
done
# The one-agent workflows, whose RL iterations take seconds, go on from the
# same warm start to LONG_ITERATIONS (default 200): <workflow>_rl200.
long_iterations=${LONG_ITERATIONS:-200}
longer=()
for w in qa_closed_book qa_rag; do
  [[ " ${workflows[*]} " == *" $w "* ]] || continue
  long="$out/${w}_rl${long_iterations}"
  longer+=("${w}_rl${long_iterations}")
  [ -f "$long/eval_trained.json" ] && continue
  [ -f "$out/$w/eval_trained.json" ] || continue
  echo "qa_table: $w on to $long_iterations RL iterations (log: $long.log)"
  rm -rf "$long" && cp -r "$out/$w" "$long" && rm -f "$long"/eval_trained.* "$long"/eval_reworded.* "$long"/eval_oracle_reader.*
  "$troupe" train "workflows/shipped/$w.textproto" --out "$long" --resume "$@" \
    --set trainer.iterations="$long_iterations" >"$long.log" 2>&1 || echo "qa_table: see $long.log" >&2
done
# Each trained run again: on the test questions worded by hand (factbook_qa:reworded), and, for the
# decompose workflows, with the oracle decomposing, so that the answerer reads the supporting
# passages whatever its own decomposer asks (the reader's own score). Kept when done before.
for w in "${workflows[@]}" "${longer[@]}"; do
  run="$out/$w"
  [ -f "$run/eval_trained.json" ] || continue
  wf="workflows/shipped/${w%_rl*}.textproto"
  if [ ! -s "$run/eval_reworded.json" ]; then
    echo "qa_table: $w on the questions worded by hand"
    "$troupe" eval "$wf" --checkpoint "$run" --dataset factbook_qa:reworded --json --quiet "$@" \
      --episodes-out "$run/eval_reworded.episodes.jsonl" >"$run/eval_reworded.json.part" &&
      mv "$run/eval_reworded.json.part" "$run/eval_reworded.json" || echo "qa_table: $w reworded: see $run/eval_reworded.json.part" >&2
  fi
  case "$w" in
    qa_decompose*)
      if [ ! -s "$run/eval_oracle_reader.json" ]; then
        echo "qa_table: $w with the oracle decomposing"
        "$troupe" eval "$wf" --checkpoint "$run" --json --quiet "$@" --set pipeline.oracle=decompose \
          --episodes-out "$run/eval_oracle_reader.episodes.jsonl" >"$run/eval_oracle_reader.json.part" &&
          mv "$run/eval_oracle_reader.json.part" "$run/eval_oracle_reader.json" || echo "qa_table: $w oracle: see $run/eval_oracle_reader.json.part" >&2
      fi ;;
  esac
done
python3 bench/qa_table.py "$out" "${workflows[@]}" "${longer[@]}"
