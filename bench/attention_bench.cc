// One attention layer's forward and backward passes on the CPU, the kernels of
// core/models/attention_kernel.h against the same attention composed of
// LibTorch's operators (what every architecture ran before them), alternating
// in one process on the same inputs, at the shapes troupe trains:
//   main_job_rows: the main job's update, prefix-tree rows of 128 positions,
//     4 heads of width 8, under a random tree mask (each query sees itself
//     and some earlier keys);
//   main_job_calls: the same model scoring calls one by one (96 positions,
//     causal with left padding);
//   rows_width_16: the same rows with 2 heads of width 16;
//   base_model: the base model's pretraining, 8 x 512 tokens, 8 query heads
//     over 4 key/value heads of width 32, causal.
// Usage: attention_bench [ROUNDS] [THREADS]; prints one JSON object with each
// shape's median seconds per forward+backward and the ratio composed / kernels.
// (Attention() takes the kernels only for heads of the widths where they win
// here: kKernelAttentionMaxHeadDim.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "core/base/heap_tuning.h"
#include "core/models/attention.h"
#include "core/models/policy_model.h"

using namespace troupe;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Shape {
  std::string name;
  int64_t B, H, KV, T, dh;
  std::string mask;  // "tree" or "causal"
};

torch::Tensor Mask(const Shape& s) {
  if (s.mask == "causal") {
    torch::Tensor key_valid = torch::ones({s.B, s.T}, torch::kBool);
    for (int64_t b = 0; b < s.B; ++b) key_valid.select(0, b).narrow(0, 0, b % 16).fill_(false);  // some left padding
    return AttentionBias(AttentionMask(key_valid, s.T));
  }
  torch::Tensor allowed = torch::rand({s.B, 1, s.T, s.T}).lt(0.5) & torch::ones({s.T, s.T}, torch::kBool).tril();
  allowed.diagonal(0, 2, 3).fill_(true);
  return AttentionBias(allowed);
}

double Time(bool kernels, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
            const torch::Tensor& mask, const torch::Tensor& up) {
  const double t0 = Now();
  const torch::Tensor out = kernels ? KernelAttention(q, k, v, mask) : ComposedAttention(q, k, v, mask);
  (out * up).sum().backward();
  const double t = Now() - t0;
  q.mutable_grad() = torch::Tensor(), k.mutable_grad() = torch::Tensor(), v.mutable_grad() = torch::Tensor();
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  KeepFreedMemoryOnHeap();  // as every troupe program that runs models does
  torch::set_num_threads(threads);
  torch::manual_seed(1);
  const std::vector<Shape> shapes = {{"main_job_rows", 48, 4, 4, 128, 8, "tree"},
                                     {"main_job_calls", 64, 4, 4, 96, 8, "causal"},
                                     {"rows_width_16", 48, 2, 2, 128, 16, "tree"},
                                     {"base_model", 8, 8, 4, 512, 32, "causal"}};
  nlohmann::json report = {{"rounds", rounds}, {"threads", threads}};
  for (const Shape& s : shapes) {
    const torch::Tensor q = torch::randn({s.B, s.H, s.T, s.dh}).requires_grad_(true);
    const torch::Tensor k = torch::randn({s.B, s.KV, s.T, s.dh}).requires_grad_(true);
    const torch::Tensor v = torch::randn({s.B, s.KV, s.T, s.dh}).requires_grad_(true);
    const torch::Tensor up = torch::randn({s.B, s.H, s.T, s.dh}), mask = Mask(s);
    Time(true, q, k, v, mask, up), Time(false, q, k, v, mask, up);  // warm-up
    std::vector<double> kernels, composed;
    for (int r = 0; r < rounds; ++r) {
      kernels.push_back(Time(true, q, k, v, mask, up));
      composed.push_back(Time(false, q, k, v, mask, up));
    }
    const double tk = Median(kernels), tc = Median(composed);
    report[s.name] = {{"kernels_s", tk}, {"composed_s", tc}, {"composed_over_kernels", tc / tk}};
    std::fprintf(stderr, "%s: kernels %.4f s, composed %.4f s (%.2fx)\n", s.name.c_str(), tk, tc, tc / tk);
  }
  std::printf("%s\n", report.dump(2).c_str());
  return 0;
}
