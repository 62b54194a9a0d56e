// The same models, generation, training and learners on cuda:0 as on the CPU.
// Hidden cases ([.]): registered with ctest only where LibTorch has CUDA
// (tests/CMakeLists.txt); bench/gpu_check.sh runs them on a GPU host.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/models/learner_group.h"
#include "core/models/model_pool_impl.h"
#include "core/models/torch_compat.h"
#include "tests/test_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/run/train_run.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

const char* kCuda = "cuda:0";

CompiledWorkflow OnDevice(const std::string& sizes, const std::string& device, const std::string& extra = "") {
  const std::string text = R"(name: "d"
game { name: "red_black" param { name: "team_size" int: 2 } param { name: "rounds" int: 2 } }
model { name: "m" )" + sizes + " device: \"" + device + "\" lora_rank: 2 " + extra + R"( }
role { name: "a0" seats: "a0" model: "m" adapter: LORA }
role { name: "a1" seats: "a1" model: "m" adapter: LORA }
role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";
  return CompileWorkflow(ParseWorkflowText(text, "d.textproto"));
}

struct Sizes {
  const char* name;
  const char* block;
};
// The Llama family as troupe builds it (Llama; Qwen2's q/k/v biases; Qwen3's
// per-head q/k norms), and the other two architectures.
const Sizes kLlama{"llama", "llama { hidden_size: 64 heads: 4 kv_heads: 2 layers: 2 intermediate_size: 96 }"};
const Sizes kQwen2{"qwen2", "llama { hidden_size: 64 heads: 4 kv_heads: 2 layers: 2 intermediate_size: 96 qkv_bias: true }"};
const Sizes kQwen3{"qwen3", "llama { hidden_size: 64 heads: 4 kv_heads: 1 layers: 2 intermediate_size: 96 qk_norm: true }"};
const Sizes kTransformer{"transformer", "transformer { d_model: 32 heads: 2 layers: 2 }"};
const Sizes kGpt2{"gpt2", "gpt2 { hidden_size: 32 heads: 2 layers: 2 }"};

double MaxGap(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kCPU) - b.to(torch::kCPU)).abs().max().item<double>();
}

// A batch of three rows, the second padded at the front (as batched prompts are).
struct Batch {
  torch::Tensor tokens, positions, valid, role;
  Batch To(const torch::Device& d) const { return {tokens.to(d), positions.to(d), valid.to(d), role.to(d)}; }
};
Batch MakeBatch(int64_t vocab) {
  torch::manual_seed(11);
  Batch b;
  b.tokens = torch::randint(4, vocab, {3, 9}, torch::kLong);
  b.positions = torch::arange(9, torch::kLong).repeat({3, 1});
  b.valid = torch::ones({3, 9}, torch::kBool);
  b.valid[1].narrow(0, 0, 3).fill_(false);
  b.positions[1] = (torch::arange(9, torch::kLong) - 3).clamp_min(0);
  b.role = torch::tensor({0, 1, 0}, torch::kLong);
  return b;
}

}  // namespace

TEST_CASE("a CUDA device is there for these cases", "[.][cuda]") {
  REQUIRE(torch::cuda::is_available());
  CHECK(torch::cuda::device_count() >= 1);
}

TEST_CASE("each architecture's logits, values and gradients on cuda:0 match the same model on the CPU",
          "[.][cuda][models]") {
  REQUIRE(torch::cuda::is_available());
  const Sizes s = GENERATE(kLlama, kQwen2, kQwen3, kTransformer, kGpt2);
  INFO(s.name);
  ModelPool cpu(OnDevice(s.block, "cpu").models, 3), gpu(OnDevice(s.block, kCuda).models, 3);  // same seed
  REQUIRE(gpu.impl().devices[0].is_cuda());
  const Batch batch = MakeBatch(cpu.config(0).vocab_size);
  std::vector<LMOutput> out;
  for (ModelPool* pool : {&cpu, &gpu}) {
    auto& model = pool->impl().models[0];
    const Batch b = batch.To(pool->impl().devices[0]);
    model->zero_grad();
    out.push_back(model->forward(b.tokens, b.positions, b.valid, b.role));
    (out.back().logits.pow(2).mean() + out.back().values.mean()).backward();
  }
  CHECK(out[1].logits.device().is_cuda());
  const double scale = out[0].logits.abs().max().item<double>();
  INFO("largest logit " << scale);
  CHECK(MaxGap(out[0].logits, out[1].logits) < 1e-4 * (1 + scale));
  CHECK(MaxGap(out[0].values, out[1].values) < 1e-4);
  auto pc = cpu.impl().models[0]->named_parameters(), pg = gpu.impl().models[0]->named_parameters();
  int compared = 0;
  for (const auto& item : pc) {
    const torch::Tensor& g = item.value().grad();
    if (!g.defined()) continue;
    INFO(item.key());
    const torch::Tensor& gg = pg[item.key()].grad();
    REQUIRE(gg.defined());
    CHECK(MaxGap(g, gg) < 1e-4 * (1 + g.abs().max().item<double>()));
    ++compared;
  }
  CHECK(compared > 5);
}

TEST_CASE("bf16 models on cuda:0 compute in bfloat16 under autocast and put autocast back", "[.][cuda][bf16]") {
  REQUIRE(torch::cuda::is_available());
  const Sizes s = GENERATE(kLlama, kTransformer, kGpt2);
  INFO(s.name);
  ModelPool fp32(OnDevice(s.block, kCuda).models, 3), bf16(OnDevice(s.block, kCuda, "precision: BF16").models, 3);
  const Batch b = MakeBatch(fp32.config(0).vocab_size).To(torch::Device(kCuda));
  std::vector<LMOutput> out;
  for (ModelPool* pool : {&fp32, &bf16}) {
    auto& model = pool->impl().models[0];
    model->zero_grad();
    out.push_back(model->forward(b.tokens, b.positions, b.valid, b.role));
    (out.back().logits.pow(2).mean() + out.back().values.mean()).backward();
    CHECK_FALSE(torch_compat::IsAutocastEnabled(c10::DeviceType::CUDA));
  }
  CHECK(out[1].logits.scalar_type() == torch::kFloat);
  const double gap = MaxGap(out[0].logits, out[1].logits), scale = out[0].logits.abs().max().item<double>();
  INFO("largest logit gap " << gap << " of " << scale);
  CHECK(gap > 0.0);  // the products ran in bfloat16
  CHECK(gap < 0.05 * scale + 1e-3);
  for (const auto& item : bf16.impl().models[0]->named_parameters()) {
    INFO(item.key());
    CHECK(item.value().scalar_type() == torch::kFloat);
    CHECK(item.value().device().is_cuda());
  }
}

TEST_CASE("greedy generation with prefix reuse on cuda:0 answers as the CPU does from scratch",
          "[.][cuda][generate][prefix]") {
  REQUIRE(torch::cuda::is_available());
  const Sizes s = GENERATE(kLlama, kTransformer, kGpt2);
  INFO(s.name);
  ModelPool gpu(OnDevice(s.block, kCuda).models, 3), cpu(OnDevice(s.block, "cpu").models, 3);
  const std::vector<int> first = {1, 4, 9, 10, 11, 12, 13, 14, 15, 16}, other = {1, 4, 20, 21, 22, 23, 24, 25};
  std::vector<int> changed(first.begin(), first.begin() + 7);
  changed.insert(changed.end(), {30, 31, 32, 33});
  auto run = [](ModelPool& pool, const std::vector<const std::vector<int>*>& prompts, bool keyed) {
    std::vector<GenerateQuery> q;
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerateQuery g{static_cast<int>(i % 2), prompts[i], 3};
      g.cache_key = keyed ? static_cast<int64_t>(i) : -1;
      q.push_back(g);
    }
    Rng rng(5);
    return pool.Generate(0, q, rng, 1.0, true);
  };
  auto agree = [](const std::vector<Generation>& x, const std::vector<Generation>& y) {
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(x[i].tokens == y[i].tokens);
      for (size_t k = 0; k < x[i].logprobs.size() && k < y[i].logprobs.size(); ++k) {
        CHECK(x[i].logprobs[k] == Approx(y[i].logprobs[k]).margin(1e-4));
      }
    }
  };
  agree(run(gpu, {&first, &other}, true), run(cpu, {&first, &other}, false));
  const int64_t before = gpu.encoded_positions(0);
  agree(run(gpu, {&changed, &other}, true), run(cpu, {&changed, &other}, false));
  // Conversation 0 goes on from the 7 positions it shares with its last prompt;
  // conversation 1's prompt was its last one's prompt and answer's start.
  CHECK(gpu.encoded_positions(0) - before < static_cast<int64_t>(changed.size() + other.size()));
}

TEST_CASE("a training run on cuda:0 plays and scores its first iteration as the CPU run does, and keeps learning",
          "[.][cuda][training]") {
  REQUIRE(torch::cuda::is_available());
  const std::string text = testing::TinyRedBlack(
      5, "trainer { iterations: 3 episodes_per_iteration: 8 minibatch: 64 checkpoint_every: 3 eval_episodes: 8 }");
  std::vector<std::vector<nlohmann::json>> metrics;
  for (const std::string device : {"cpu", kCuda}) {
    LoadedWorkflow w = ParseWorkflowText(text, "tiny.textproto");
    ApplyOverride(w, "model[0].device=" + device);
    const fs::path dir = fs::temp_directory_path() / ("troupe-cuda-train-" + device.substr(0, 3));
    fs::remove_all(dir);
    TrainOptions o;
    o.out_dir = dir.string();
    o.progress = false;
    o.final_eval = false;
    std::ostringstream sink;
    Train(CompileWorkflow(w), o, sink);
    std::ifstream in(dir / "metrics.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    metrics.push_back(lines);
    CHECK(fs::exists(dir / "checkpoints"));
  }
  REQUIRE(metrics[0].size() == 3);
  REQUIRE(metrics[1].size() == 3);
  // Iteration 1 samples from the same parameters: the same episodes, and an
  // update that differs by float rounding only.
  int compared = 0;
  for (const auto& [key, value] : metrics[0][0].items()) {
    if (!value.is_number() || key.rfind("time/", 0) == 0) continue;
    INFO(key);
    REQUIRE(metrics[1][0].contains(key));
    const double a = value.get<double>(), b = metrics[1][0].at(key).get<double>();
    CHECK(std::abs(a - b) <= 1e-3 * (1 + std::abs(a)));
    ++compared;
  }
  CHECK(compared > 5);
}

TEST_CASE("two learners on one GPU sum their tensors over Gloo and keep them on the device, or say why they cannot",
          "[.][cuda][c10d]") {
  REQUIRE(torch::cuda::is_available());
  LearnerStore store;
  std::vector<torch::Tensor> results(2);
  std::vector<std::string> backends(2), errors(2);
  std::vector<std::thread> learners;
  for (int rank = 0; rank < 2; ++rank) {
    learners.emplace_back([&, rank] {
      try {
        LearnerGroupSpec spec;
        spec.rank = rank;
        spec.world = 2;
        spec.store_host = "127.0.0.1";
        spec.store_port = store.port();
        spec.prefix = "cuda-test";
        spec.timeout_ms = 60000;
        spec.device = kCuda;
        LearnerGroup group(spec);
        backends[rank] = group.backend();
        std::vector<at::Tensor> t = {torch::full({3}, rank + 1.0, torch::Device(kCuda)),
                                     torch::full({2, 2}, 10.0 * (rank + 1), torch::Device(kCuda))};
        group.AllReduceSum(t);
        results[rank] = torch::cat({t[0].reshape({-1}), t[1].reshape({-1})});
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  }
  for (auto& t : learners) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    INFO("learner " << rank << ": " << errors[rank]);
    if (!LearnersHaveGloo()) {  // and NCCL allows one rank per GPU: nothing can sum here, and it says so
      CHECK_THAT(errors[rank], Catch::Contains("no Gloo"));
      continue;
    }
    REQUIRE(errors[rank].empty());
    CHECK(backends[rank] == "gloo");  // NCCL allows one rank per GPU
    CHECK(results[rank].device().is_cuda());
    CHECK(MaxGap(results[rank], torch::tensor({3.0f, 3.0f, 3.0f, 30.0f, 30.0f, 30.0f, 30.0f})) == 0.0);
  }
}
