#!/bin/sh
# The test suite's run of this example: the program trains the main job for 3
# iterations through the library and prints one line per iteration it read
# back from metrics.jsonl; a bad workflow path fails with its message.
# usage: check.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/examples/library/train_and_read" "$src/workflows/shipped/red_black.textproto" "$out/run" 3 | tee "$out/log.txt"
test "$(grep -c '^iteration [0-9]' "$out/log.txt")" -eq 3
grep -q 'reward/team_a=' "$out/log.txt"
grep -q '^trained 3 iterations' "$out/log.txt"
if "$build/examples/library/train_and_read" "$out/missing.textproto" "$out/run2" 2> "$out/err.txt"; then exit 1; fi
grep -q 'missing.textproto' "$out/err.txt"
echo "library example: trained 3 iterations and read them back"
