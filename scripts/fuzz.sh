#!/usr/bin/env bash
# Fuzzes every parser of what a user or another process hands troupe
# (fuzz/: safetensors, config.json, tokenizer.json and tiktoken files, session
# recordings, wire frames, landscape maps, QA JSONL, workflows, checkpoint
# folders and the LibTorch archives in them).
#   bash scripts/fuzz.sh [SECONDS [TARGET...]]   (default 60 s, shared by the targets)
# Without TARGETs it runs every target but torch_archive: that one feeds
# LibTorch's own archive reader, which crashes on crafted archives (a finding
# in LibTorch 1.13 that troupe cannot fix; docs/hardening.md), so it runs
# only when named: bash scripts/fuzz.sh 600 torch_archive.
# Builds the targets with clang, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-fuzz/, then runs each on a copy of its
# committed seed corpus (fuzz/corpus/NAME). New inputs collect in
# build-fuzz/corpus/NAME; a crash, sanitizer report, leak, hang (10 s) or
# exception other than troupe::Error is written to build-fuzz/findings/NAME/
# and fails the script (re-run one: build-fuzz/fuzz/fuzz_NAME FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true

command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (scripts/setup.sh installs it)" >&2; exit 2; }
export CCACHE_BASEDIR="$PWD"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -g"
echo "fuzz: building the targets into build-fuzz/ (clang, ASan + UBSan)"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DTROUPE_FUZZ=ON -DTROUPE_VIEWER=OFF "${launcher[@]}" >/dev/null

targets=("$@")
if (( ${#targets[@]} == 0 )); then
  for dir in fuzz/corpus/*/; do
    [[ $(basename "$dir") == torch_archive ]] || targets+=("$(basename "$dir")")
  done
fi
for name in "${targets[@]}"; do
  [[ -d fuzz/corpus/$name ]] || { echo "fuzz: no target '$name' (one of: $(ls fuzz/corpus | tr '\n' ' '))" >&2; exit 2; }
done
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
per=$(( seconds / ${#targets[@]} ))
(( per >= 1 )) || per=1
asan="detect_leaks=1:allocator_may_return_null=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
for name in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$name" "build-fuzz/findings/$name"
  log="build-fuzz/findings/$name/last-run.log"
  # The first folder receives new inputs; the committed seeds are only read.
  # LibTorch has no frame pointers: its leak suppressions match only on full stacks.
  options="$asan"
  [[ $name == torch_archive ]] && options="$asan:fast_unwind_on_malloc=0"
  if ASAN_OPTIONS="$options" "build-fuzz/fuzz/fuzz_$name" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/findings/$name/" "build-fuzz/corpus/$name" "fuzz/corpus/$name" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $name: ${runs:-?} inputs in ${per} s, no finding ($(ls "build-fuzz/corpus/$name" | wc -l) in its corpus)"
  else
    echo "fuzz: $name: FINDING (see $log and build-fuzz/findings/$name/)"
    grep -m 5 -E "ERROR|runtime error|terminate|==[0-9]+==" "$log" || tail -n 20 "$log"
    failed+=("$name")
  fi
done
if (( ${#failed[@]} )); then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s, no finding"
