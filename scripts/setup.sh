#!/usr/bin/env bash
# Installs every Debian 12 package troupe's build, tests and main job need.
# Idempotent and non-interactive: it only calls apt when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache
  libboost-graph-dev
  libtorch-dev libopenblas0-pthread libgloo-dev
  libzmq3-dev cppzmq-dev
  libprotobuf-dev protobuf-compiler
  libimgui-dev libstb-dev libglfw3-dev
  catch2 nlohmann-json3-dev libcli11-dev libspdlog-dev
  xvfb xauth libgl1-mesa-dri
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
