#!/usr/bin/env bash
# The README's two-host run on one machine: two network namespaces ("hosts"
# A at 10.0.0.1 and B at 10.0.0.2, joined by a veth pair, each with its own
# network stack) run the main job's model as two data-parallel learners. On A:
# the controller (`troupe train`, CurveZMQ keys, a tcp endpoint on A's
# address, the learners' TCPStore) and learner 0; on B: learner 1, reaching A
# only over the veth link. Gloo takes each learner's address from its
# interface (GLOO_SOCKET_IFNAME). The same run then goes again with both
# learners on loopback in this namespace, and the two metrics.jsonl files are
# compared line by line (every figure but the time/ ones).
#
#   sudo bash bench/two_hosts.sh [OUT_DIR] [ITERATIONS]
#
# Needs root (ip netns). Writes OUT_DIR (default runs/two_hosts): keys/,
# netns/ and loopback/ run folders, their logs and compare.txt. Removes the
# namespaces it made, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/two_hosts}
iterations=${2:-6}
troupe=$(pwd)/build/workflows/troupe
[ -x "$troupe" ] || { echo "two_hosts: build first (bash scripts/build.sh)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "two_hosts: needs root for ip netns" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)

ns_a=troupe-host-a-$$ ns_b=troupe-host-b-$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add veth-a type veth peer name veth-b
ip link set veth-a netns "$ns_a"
ip link set veth-b netns "$ns_b"
ip -n "$ns_a" addr add 10.0.0.1/24 dev veth-a
ip -n "$ns_b" addr add 10.0.0.2/24 dev veth-b
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set veth-a up
ip -n "$ns_b" link set veth-b up
echo "two_hosts: host A $ns_a (10.0.0.1), host B $ns_b (10.0.0.2)"

"$troupe" keys --out "$out/keys" >/dev/null
# The main job, shortened, with its model served by two learners over tcp.
workflow() {  # endpoint, keys line
  cat workflows/shipped/red_black.textproto
  cat <<EOF
runtime {
  endpoint: "$1"
  $2
  worker { model: "shared" replicas: 2 }
  join_timeout_ms: 60000
}
EOF
}
workflow "tcp://10.0.0.1:5555" "keys_dir: \"$out/keys\"" >"$out/netns.textproto"
workflow "tcp://127.0.0.1:5556" "" >"$out/loopback.textproto"
train_args=(--no-eval --quiet --set "trainer.iterations=$iterations" --set trainer.max_minutes=0)

run_pair() {  # name, endpoint, keys args, exec prefix for A, for B, interface for A, for B
  local name=$1 endpoint=$2 keys=$3
  local -a on_a=($4) on_b=($5)
  env GLOO_SOCKET_IFNAME="$6" "${on_a[@]}" "$troupe" train "$out/$name.textproto" --out "$out/$name" "${train_args[@]}" \
    >"$out/$name.log" 2>&1 &
  local controller=$!
  pids+=("$controller")
  sleep 1
  env GLOO_SOCKET_IFNAME="$6" "${on_a[@]}" "$troupe" worker --model shared --replica 0 --connect "$endpoint" $keys \
    >"$out/$name.worker0.log" 2>&1 &
  pids+=($!)
  env GLOO_SOCKET_IFNAME="$7" "${on_b[@]}" "$troupe" worker --model shared --replica 1 --connect "$endpoint" $keys \
    >"$out/$name.worker1.log" 2>&1 &
  pids+=($!)
  local start=$(date +%s)
  if ! wait "$controller"; then
    echo "two_hosts: the $name run failed; its logs:" >&2
    tail -5 "$out/$name.log" "$out/$name".worker*.log >&2
    exit 1
  fi
  echo "two_hosts: $name run: $iterations iterations in $(($(date +%s) - start)) s"
}
run_pair netns "tcp://10.0.0.1:5555" "--keys $out/keys" "ip netns exec $ns_a" "ip netns exec $ns_b" veth-a veth-b
run_pair loopback "tcp://127.0.0.1:5556" "" "" "" lo lo

python3 - "$out" <<'EOF' | tee "$out/compare.txt"
import json, sys
out = sys.argv[1]
def lines(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}/metrics.jsonl")]
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]
a, b = lines("netns"), lines("loopback")
same = len(a) == len(b) and all(x == y for x, y in zip(a, b))
print(f"{len(a)} iterations on two hosts (network namespaces), {len(b)} on loopback; "
      f"every metric but time/: {'identical' if same else 'DIFFERENT'}")
learners = {r.get("learners/shared") for r in a + b}
print(f"learners per update: {sorted(learners)}")
last = a[-1]
print(f"last iteration: reward/team_a {last.get('reward/team_a')}, game/team_a_score {last.get('game/team_a_score')}")
sys.exit(0 if same and learners == {2} else 1)
EOF
