#!/usr/bin/env bash
# What a snapshot pool costs generation: Red-Black with both teams learning,
# team b with a pool of up to 8 of its own snapshots (one taken every
# iteration), 32 episodes an iteration in 8 groups. Trains it twice, b's pool
# share 0 (plain self-play: one batch per model a tick) and 1 (every group's
# team b is a snapshot, drawn per group, so up to 8 different ones a tick),
# and prints, for the last iterations, the pool's size, the share of episodes
# with a snapshot and the model forward passes per game round. Usage: bash bench/snapshot_pool_calls.sh [ITERATIONS]
# TROUPE=path/to/troupe runs another build.
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=${1:-12}
troupe=${TROUPE:-./build/workflows/troupe}
out=$(mktemp -d)
cat > "$out/pools.textproto" <<'W'
name: "pools" seed: 5
game { name: "red_black" }
model { name: "ma" transformer { d_model: 32 heads: 2 layers: 1 ff_mult: 2 max_len: 160 } }
model { name: "mb" transformer { d_model: 32 heads: 2 layers: 1 ff_mult: 2 max_len: 160 } snapshots { every: 1 keep: 8 } }
role { name: "a" seats: "a*" model: "ma" }
role { name: "b" seats: "b*" model: "mb" pool { share: 1 } }
reward { level: TURN signal: "round_payoff" to_go: true weight: 0.1 }
reward { level: ROLE signal: "format" weight: 1 }
credit { group_size: 4 }
trainer { episodes_per_iteration: 32 minibatch: 256 checkpoint_every: 100 }
W
for share in 0 1; do
  "$troupe" train "$out/pools.textproto" --out "$out/share-$share" --quiet --no-eval \
    --set trainer.iterations="$iterations" --set role[1].pool.share=$share > "$out/share-$share.log"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| b's pool share | pool size | episodes with a snapshot | forward passes per round | iteration s |")
print("|---|---|---:|---:|---:|")
for share in ("0", "1"):
    lines = [json.loads(l) for l in open(f"{out}/share-{share}/metrics.jsonl")]
    last = lines[-4:]
    mean = lambda k: sum(l[k] for l in last) / len(last)
    print(f"| {share} | {int(last[-1]['pool/size/mb'])} | "
          f"{mean('pool/episodes_share'):.2f} | {mean('forward_calls_per_turn'):.1f} | {mean('time/iteration_s'):.2f} |")
PY
