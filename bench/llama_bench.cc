// Speed of troupe's Llama-family decoder (core/models/llama/llama.h): training
// tokens/s (forward, cross-entropy, backward, AdamW step) and KV-cached greedy
// generation tokens/s at two batch sizes. bench/llama_speed.sh runs it beside
// the same model in PyTorch (bench/llama_reference_bench.py) and prints the ratios.
// Usage: llama_bench THREADS  (prints one JSON object)
//        llama_bench THREADS --device cuda:0 [--batch B] [--length T] [--steps N]
//          bf16 training of a ~110M-parameter Llama (12 layers of 768) on the
//          GPU: tokens/s and model FLOPs utilisation; bench/gpu_check.sh runs it
//          beside the same model in PyTorch (bench/llama_gpu_reference.py).
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/base/heap_tuning.h"
#include "core/models/llama/llama.h"

using namespace troupe;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The benchmark's model: 4 layers of 256, 8 heads sharing 4 key/value heads.
LlamaOptions BenchConfig() {
  config::LlamaSpec sizes;
  sizes.set_hidden_size(256);
  sizes.set_intermediate_size(688);
  sizes.set_layers(4);
  sizes.set_heads(8);
  sizes.set_kv_heads(4);
  sizes.set_max_len(512);
  sizes.set_rms_eps(1e-6);
  sizes.set_rope_theta(10000.0);
  sizes.set_tie_embeddings(true);
  return LlamaOptions(8000, sizes);
}

// The GPU benchmark's model: 12 layers of 768, 12 heads, a 32000-token
// vocabulary, tied embeddings: ~110M parameters (GPT-2 small's size).
LlamaOptions GpuConfig(int64_t max_len) {
  config::LlamaSpec sizes;
  sizes.set_hidden_size(768);
  sizes.set_intermediate_size(2048);
  sizes.set_layers(12);
  sizes.set_heads(12);
  sizes.set_kv_heads(12);
  sizes.set_max_len(max_len);
  sizes.set_rms_eps(1e-6);
  sizes.set_rope_theta(10000.0);
  sizes.set_tie_embeddings(true);
  return LlamaOptions(32000, sizes);
}

double TrainTokensPerSecond(LlamaLM& model, int64_t batch, int64_t length, int steps,
                            const torch::Device& device = torch::kCPU, int warmup = 1) {
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));
  const torch::Tensor tokens = torch::randint(0, model->options().vocab_size(), {batch, length + 1}).to(device);
  const torch::Tensor input = tokens.narrow(1, 0, length), target = tokens.narrow(1, 1, length);
  const torch::Tensor positions = torch::arange(length).unsqueeze(0).expand({batch, length}).contiguous().to(device);
  const torch::Tensor valid = torch::ones({batch, length}, torch::kBool).to(device);
  torch::Tensor loss;
  auto step = [&] {
    opt.zero_grad();
    LMOutput o = model->forward(input, positions, valid, {});
    loss = torch::nn::functional::cross_entropy(o.logits.reshape({-1, o.logits.size(2)}), target.reshape({-1}));
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < warmup; ++i) step();
  loss.item<float>();  // waits for the device
  const double t0 = Now();
  for (int i = 0; i < steps; ++i) step();
  loss.item<float>();
  return static_cast<double>(batch * length * steps) / (Now() - t0);
}

// Training FLOPs per token (PaLM's count): 6 x the parameters of the matrix
// products (the tied embedding counted once, as the output projection) plus
// 12 x layers x width x sequence length for the attention scores and mix.
double TrainFlopsPerToken(const LlamaOptions& o, int64_t length) {
  const auto& s = o.sizes();
  const double d = s.hidden_size(), kv = static_cast<double>(s.kv_heads()) / s.heads();
  const double per_layer = d * d * (2 + 2 * kv) + 3 * d * s.intermediate_size();
  const double matmul_params = s.layers() * per_layer + d * o.vocab_size();
  return 6 * matmul_params + 12.0 * s.layers() * d * length;
}

int GpuMain(const std::string& device_text, int64_t batch, int64_t length, int steps) {
  const torch::Device device(device_text);
  torch::manual_seed(0);
  const LlamaOptions options = GpuConfig(length);
  LlamaLM model(options);
  model->to(device);
  model->set_bf16(true);
  model->train();
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  const double tokens_per_s = TrainTokensPerSecond(model, batch, length, steps, device, 3);
  const double flops = TrainFlopsPerToken(options, length);
  const double peak = 989.5e12;  // H100/H200 SXM dense bfloat16
  std::printf("{\"device\": \"%s\", \"parameters\": %lld, \"batch\": %lld, \"length\": %lld, \"steps\": %d, "
              "\"train_tokens_per_s_bf16\": %.1f, \"flops_per_token\": %.4g, \"tflops\": %.1f, \"mfu\": %.4f}\n",
              device_text.c_str(), static_cast<long long>(params), static_cast<long long>(batch),
              static_cast<long long>(length), steps, tokens_per_s, flops, tokens_per_s * flops / 1e12,
              tokens_per_s * flops / peak);
  return 0;
}

double GenerateTokensPerSecond(LlamaLM& model, int64_t batch, int64_t prompt, int64_t new_tokens) {
  torch::NoGradGuard no_grad;
  const torch::Tensor start = torch::randint(0, model->options().vocab_size(), {batch, prompt});
  auto run = [&] {
    KvCache cache;
    torch::Tensor positions = torch::arange(prompt).unsqueeze(0).expand({batch, prompt}).contiguous();
    torch::Tensor valid = torch::ones({batch, prompt}, torch::kBool);
    LMOutput o = model->forward(start, positions, valid, {}, &cache);
    for (int64_t t = 0; t < new_tokens; ++t) {
      torch::Tensor next = o.logits.select(1, o.logits.size(1) - 1).argmax(-1, true);
      valid = torch::ones({batch, prompt + t + 1}, torch::kBool);
      o = model->forward(next, torch::full({batch, 1}, prompt + t, torch::kLong), valid, {}, &cache);
    }
  };
  run();  // warm-up
  const double t0 = Now();
  run();
  return static_cast<double>(batch * new_tokens) / (Now() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  KeepFreedMemoryOnHeap();  // as the troupe binary does
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  torch::set_num_threads(threads);
  std::string device;
  int64_t batch = 32, length = 1024;
  int steps = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--device") {
      device = argv[i + 1];
    } else if (flag == "--batch") {
      batch = std::atoll(argv[i + 1]);
    } else if (flag == "--length") {
      length = std::atoll(argv[i + 1]);
    } else if (flag == "--steps") {
      steps = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "llama_bench: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (!device.empty()) return GpuMain(device, batch, length, steps);
  torch::manual_seed(0);
  LlamaLM model(BenchConfig());
  const double train = TrainTokensPerSecond(model, 8, 128, 5);
  model->eval();
  const double gen1 = GenerateTokensPerSecond(model, 1, 16, 64);
  const double gen64 = GenerateTokensPerSecond(model, 64, 16, 64);
  // Mixed precision (a model's `precision: BF16`): the blocks under autocast in bfloat16.
  model->set_bf16(true);
  model->train();
  const double train_bf16 = TrainTokensPerSecond(model, 8, 128, 5);
  model->eval();
  const double gen64_bf16 = GenerateTokensPerSecond(model, 64, 16, 64);
  std::printf("{\"train_tokens_per_s\": %.1f, \"generate_b1_tokens_per_s\": %.1f, \"generate_b64_tokens_per_s\": %.1f, "
              "\"train_tokens_per_s_bf16\": %.1f, \"generate_b64_tokens_per_s_bf16\": %.1f}\n",
              train, gen1, gen64, train_bf16, gen64_bf16);
  return 0;
}
