#!/bin/sh
# The test suite's run of this example: it validates with the sharing modes
# it declares and trains 2 iterations, each model reporting its own update.
# usage: check.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
troupe="$build/workflows/troupe"
"$troupe" validate "$src/examples/sharing/mixed_sharing.textproto" | tee "$out/validate.txt"
grep -q 'model leader: llama .* separate' "$out/validate.txt"
grep -q 'model members: gpt2 .* partial (shared trunk, per-role LoRA r=4)' "$out/validate.txt"
"$troupe" train "$src/examples/sharing/mixed_sharing.textproto" --out "$out/run" --quiet --no-eval \
  --set trainer.iterations=2 --set trainer.episodes_per_iteration=8
test "$(wc -l < "$out/run/metrics.jsonl")" -eq 2
grep -q '"loss/leader"' "$out/run/metrics.jsonl"
grep -q '"loss/members"' "$out/run/metrics.jsonl"
echo "sharing example: validated and trained 2 iterations on two models"
