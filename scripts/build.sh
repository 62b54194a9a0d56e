#!/usr/bin/env bash
# Configures and builds troupe into build/ (Release, ccache when present).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the project root, so clones in other folders
# share the cache; the sloppiness lets it cache translation units that use
# CMake's precompiled headers (the LibTorch ones, most of the build).
export CCACHE_BASEDIR="$PWD"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j "$(nproc)"
