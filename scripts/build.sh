#!/usr/bin/env bash
# Configures and builds troupe into build/ (Release, ccache when present).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the project root, so clones in other folders share the cache.
export CCACHE_BASEDIR="$PWD"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j "$(nproc)"
