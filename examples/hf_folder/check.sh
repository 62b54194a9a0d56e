#!/bin/sh
# The test suite's run of this example: the workflow starts team A's model
# from the Hugging Face folder, so before any training it already plays as
# the folder's model does (team A scores far above the 0-10 of fresh
# weights); and a model troupe trains is itself such a folder, which the
# same workflow loads in its place.
# usage: check.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
troupe="$build/workflows/troupe"
cd "$src"
"$troupe" train examples/hf_folder/from_folder.textproto --out "$out/from_folder" --quiet \
  --set trainer.iterations=1 --set trainer.eval_episodes=32
score=$(sed -n 's/.*"team_a_score":\([-0-9.e]*\).*/\1/p' "$out/from_folder/eval_untrained.json")
echo "team A before training, with the folder's weights: $score"
awk -v s="$score" 'BEGIN { exit !(s > 40) }'
# Train a fresh GPT-2 model for 2 iterations; its checkpoint folder loads as the workflow's model.
"$troupe" train workflows/shipped/red_black.textproto --out "$out/fresh" --quiet --no-eval \
  --set model[0].gpt2.hidden_size=32 --set trainer.iterations=2 --set trainer.checkpoint_every=2
folder="$out/fresh/checkpoints/iter-000002/model-shared"
test -f "$folder/config.json" && test -f "$folder/model.safetensors"
"$troupe" validate examples/hf_folder/from_folder.textproto --set "model[0].hf_dir=$folder" | tee "$out/validate.txt"
grep -q "from $folder" "$out/validate.txt"
echo "hf_folder example: the folder's model plays before training, and a trained checkpoint loads in its place"
