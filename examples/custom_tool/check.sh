#!/bin/sh
# The test suite's run of this example: the binary that links the tool
# validates the pipeline (its tool node resolves) and trains it for 2
# iterations; the run's metrics name the pipeline's score.
# usage: check.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/examples/custom_tool/troupe-with-tool" validate "$src/examples/custom_tool/hint_pipeline.textproto" | tee "$out/validate.txt"
grep -q "valid" "$out/validate.txt"
"$build/examples/custom_tool/troupe-with-tool" train "$src/examples/custom_tool/hint_pipeline.textproto" \
  --out "$out/run" --quiet --no-eval --set trainer.iterations=2 --set trainer.episodes_per_iteration=16
test "$(wc -l < "$out/run/metrics.jsonl")" -eq 2
grep -q '"game/score"' "$out/run/metrics.jsonl" || grep -q 'score' "$out/run/metrics.jsonl"
echo "custom tool example: validated and trained 2 iterations"
