// Pretraining throughput at the base model's shape and batch
// (workflows/shipped/base_model.textproto: a 4-layer Llama of width 256,
// vocabulary 8192) on the same cores five ways, alternating in one process:
//   one copy, THREADS LibTorch threads (OpenBLAS's own pool beside them);
//   one copy, 1 LibTorch thread (the matrix products still on OpenBLAS's pool);
//   THREADS replicas of 1 thread each sharing every batch (Pretrainer's `replicas`);
//   the first and the third again with bfloat16 forward passes (model
//   `precision: BF16`: autocast, oneDNN's products on AVX512-BF16 CPUs).
// All start from the same weights and see the same batches, so the float32
// settings' losses after the timed steps must agree (they differ only in the
// order of float sums) and the bfloat16 ones stay near them.
// Usage: pretrain_replicas_bench [THREADS] [STEPS] [ROUNDS]
// (run from the project's root; prints one JSON object with medians).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/heap_tuning.h"
#include "core/models/pretrainer.h"
#include "core/rng.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/pretrain_config.h"

using namespace troupe;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Setting {
  std::string name;
  int threads, replicas;
  bool bf16 = false;
};

// Tokens per second over `steps` updates after one warm-up, and the last loss.
std::pair<double, double> Train(const ModelConfig& config, const Setting& s, int steps, int batch, int length) {
  ModelConfig c = config;
  c.bf16 = s.bf16;
  Pretrainer model(c, 11, s.threads, s.replicas);
  Rng rng(5);
  std::vector<std::vector<int>> batches(steps + 1);
  for (auto& b : batches) {
    for (int i = 0; i < batch * (length + 1); ++i)
      b.push_back(256 + rng.Below(static_cast<int>(config.vocab_size) - 256));
  }
  model.Step(batches[0], batch, length, 1e-3);
  double loss = 0.0;
  const double t0 = Now();
  for (int k = 1; k <= steps; ++k) loss = model.Step(batches[k], batch, length, 1e-3).loss;
  return {double(steps) * batch * length / (Now() - t0), loss};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  KeepFreedMemoryOnHeap();  // as the troupe binary does
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 8;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  try {
    const CompiledPretrain w = CompilePretrain(LoadWorkflowFile("workflows/shipped/base_model.textproto"));
    ModelConfig config = w.model;
    config.vocab_size = w.vocab_size;
    config.num_roles = 1;
    const std::vector<Setting> settings = {{"one_copy_" + std::to_string(threads) + "_threads", threads, 1},
                                           {"one_copy_1_thread", 1, 1},
                                           {std::to_string(threads) + "_replicas", threads, threads},
                                           {"bf16_one_copy_" + std::to_string(threads) + "_threads", threads, 1, true},
                                           {"bf16_" + std::to_string(threads) + "_replicas", threads, threads, true}};
    std::vector<std::vector<double>> speed(settings.size());
    std::vector<double> loss(settings.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < settings.size(); ++k) {
        const auto [tokens_per_s, last] = Train(config, settings[k], steps, w.batch, w.seq_len);
        speed[k].push_back(tokens_per_s);
        loss[k] = last;
      }
    }
    nlohmann::json out = {{"threads", threads}, {"steps", steps}, {"rounds", rounds}};
    for (size_t k = 0; k < settings.size(); ++k) {
      out[settings[k].name] = {{"tokens_per_s", Median(speed[k])}, {"rounds", speed[k]}, {"last_loss", loss[k]}};
    }
    // Each ratio names its settings, so a reordered or added setting cannot shift them.
    auto median_of = [&](const std::string& name) {
      for (size_t k = 0; k < settings.size(); ++k) {
        if (settings[k].name == name) return Median(speed[k]);
      }
      throw std::logic_error("no setting named " + name);
    };
    const std::string n = std::to_string(threads);
    const double replicas = median_of(n + "_replicas");
    out["replicas_over_one_copy"] = replicas / median_of("one_copy_" + n + "_threads");
    out["replicas_over_one_thread"] = replicas / median_of("one_copy_1_thread");
    out["bf16_one_copy_over_replicas"] = median_of("bf16_one_copy_" + n + "_threads") / replicas;
    out["bf16_replicas_over_replicas"] = median_of("bf16_" + n + "_replicas") / replicas;
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pretrain_replicas_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
