#!/usr/bin/env bash
# The test suite under sanitizers (docs/hardening.md, "Sanitizers"):
#   bash scripts/sanitize.sh address   the whole suite, AddressSanitizer +
#                                      UndefinedBehaviorSanitizer + leak checks,
#                                      built into build-asan/
#   bash scripts/sanitize.sh thread    the multi-threaded parts (model workers
#                                      in-process and over sockets, rollout
#                                      waves, pretraining replicas, the comms
#                                      layer; not c10d) under ThreadSanitizer,
#                                      build-tsan/
#   bash scripts/sanitize.sh           both
# Any report fails the run: UBSan does not recover, ASan and TSan exit with an
# error. LibTorch, ZeroMQ, OpenMP and Mesa come uninstrumented from Debian;
# what is suppressed in them, and why, is in scripts/sanitizers/.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
case "$which" in address | thread | all) ;; *) echo "usage: sanitize.sh [address|thread|all]" >&2; exit 2 ;; esac

export CCACHE_BASEDIR="$PWD"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
supp="$PWD/scripts/sanitizers"
jobs="$(nproc)"

# configure_and_build DIR FLAGS VIEWER TARGETS...
configure_and_build() {
  local dir=$1 flags=$2 viewer=$3
  shift 3
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DTROUPE_VIEWER="$viewer" \
    "${launcher[@]}" >/dev/null
  if (( $# )); then cmake --build "$dir" -j "$jobs" --target "$@"; else cmake --build "$dir" -j "$jobs"; fi
}

seconds() { date +%s; }
report=()

if [[ $which == address || $which == all ]]; then
  t0=$(seconds)
  echo "sanitize: building the suite with AddressSanitizer + UBSan into build-asan/"
  configure_and_build build-asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1" ON
  t1=$(seconds)
  echo "sanitize: running the suite under ASan + UBSan"
  asan="detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
  # fuzz/parsers is already a sanitizer build of its own (scripts/fuzz.sh).
  ASAN_OPTIONS="$asan:detect_leaks=1" ctest --test-dir build-asan -j "$jobs" --output-on-failure \
    -E '^(fuzz|viewer)/' --timeout 3000
  # The viewer without leak checks: Mesa's GL stack leaves 112 bytes at every
  # exit, allocated from a module unloaded by then, which LSan cannot name.
  if [[ -d build-asan/viewer ]]; then
    ASAN_OPTIONS="$asan:detect_leaks=0" ctest --test-dir build-asan -j "$jobs" --output-on-failure -R '^viewer/' \
      --timeout 3000
  fi
  t2=$(seconds)
  report+=("ASan + UBSan: the whole suite clean; build $(( (t1 - t0) / 60 )) min, run $(( (t2 - t1) / 60 )) min")
fi

if [[ $which == thread || $which == all ]]; then
  t0=$(seconds)
  echo "sanitize: building the threaded parts' tests with ThreadSanitizer into build-tsan/"
  configure_and_build build-tsan "-fsanitize=thread -fno-omit-frame-pointer -g1" OFF \
    troupe troupe_core_tests troupe_workflow_tests
  t1=$(seconds)
  echo "sanitize: running them under TSan"
  export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0"
  build-tsan/tests/troupe_core_tests "[comms]" --warn NoTests
  # Not the data-parallel learners ([c10d]): Gloo and LibTorch's c10d pass
  # tensors and locks between their own uninstrumented threads, which TSan
  # cannot follow without an instrumented LibTorch.
  build-tsan/tests/troupe_workflow_tests "[runtime]~[c10d],[replicas],[batching],[signals]" --warn NoTests
  t2=$(seconds)
  report+=("TSan: workers, waves, replicas and comms clean; build $(( (t1 - t0) / 60 )) min, run $(( (t2 - t1) / 60 )) min")
fi

for line in "${report[@]}"; do echo "sanitize: $line"; done
