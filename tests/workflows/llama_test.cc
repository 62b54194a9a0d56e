// The Llama-family decoder against a reference: for a tiny random config of
// each variant (Llama with grouped-query attention, tied Llama, Qwen2 with
// q/k/v bias, Qwen3 with q/k norms and its own head_dim), troupe loads the
// field's config.json and model.safetensors and computes the logits that
// tests/data/llama/make_reference.py computed in PyTorch, within 1e-4; the
// KV-cached forward, one token at a time, equals the full one.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/base/errors.h"
#include "core/models/llama.h"
#include "core/models/model_pool_impl.h"
#include "core/safetensors.h"
#include "tests/test_paths.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

using namespace troupe;

namespace {

std::string Data(const std::string& variant, const std::string& file) {
  return troupe::testing::SourceDir() + "/tests/data/llama/" + variant + "/" + file;
}

LlamaLM Load(const std::string& variant) {
  LlamaLM model(ReadLlamaConfig(Data(variant, "config.json")));
  LoadLlamaWeights(model, SafetensorsFile(Data(variant, "model.safetensors")));
  model->eval();
  return model;
}

torch::Tensor AllValid(int64_t B, int64_t T) { return torch::ones({B, T}, torch::kBool); }

torch::Tensor Positions(int64_t B, int64_t from, int64_t T) {
  return torch::arange(from, from + T, torch::kLong).unsqueeze(0).expand({B, T}).contiguous();
}

}  // namespace

TEST_CASE("Llama, Qwen2 and Qwen3 decoders give the reference logits, and the KV cache changes nothing", "[llama]") {
  torch::NoGradGuard no_grad;
  for (const char* variant : {"llama_gqa", "llama_tied", "qwen2_bias", "qwen3_qknorm"}) {
    INFO(variant);
    LlamaLM model = Load(variant);
    SafetensorsFile expected(Data(variant, "expected.safetensors"));
    const SafetensorsView& ids_view = expected.Tensor("input_ids");
    REQUIRE(ids_view.dtype == SafetensorsDtype::kI64);
    std::vector<int64_t> ids(static_cast<size_t>(ids_view.numel()));
    std::memcpy(ids.data(), ids_view.data, ids_view.bytes);
    const int64_t B = ids_view.shape[0], T = ids_view.shape[1];
    const torch::Tensor tokens = torch::from_blob(ids.data(), {B, T}, torch::kLong).clone();
    std::vector<float> want = expected.Floats("logits");
    const torch::Tensor reference = torch::from_blob(want.data(), {B, T, model->options().vocab_size()}).clone();

    const LMOutput full = model->forward(tokens, Positions(B, 0, T), AllValid(B, T), {});
    const double error = (full.logits - reference).abs().max().item<double>();
    CHECK(error < 1e-4);
    CHECK(reference.abs().max().item<double>() > 0.1);  // the logits are not trivially small

    KvCache cache;
    double cached_error = 0;
    for (int64_t t = 0; t < T; ++t) {
      const LMOutput step = model->forward(tokens.narrow(1, t, 1), Positions(B, t, 1), AllValid(B, t + 1), {}, &cache);
      cached_error =
          std::max(cached_error, (step.logits.select(1, 0) - full.logits.select(1, t)).abs().max().item<double>());
    }
    CHECK(cached_error < 1e-5);
  }
}

TEST_CASE("a Hugging Face folder written by troupe reads back with identical logits (F32), and close in BF16",
          "[llama]") {
  torch::NoGradGuard no_grad;
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-llama-folder").string();
  size_t shard_count = 0;
  for (const char* variant : {"llama_gqa", "qwen2_bias", "qwen3_qknorm"}) {
    INFO(variant);
    LlamaLM model = Load(variant);
    const torch::Tensor tokens = torch::arange(1, 13, torch::kLong).view({2, 6});
    const torch::Tensor logits = model->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits;
    std::filesystem::remove_all(dir);
    WriteLlamaFolder(model, dir);
    LlamaLM back = LoadLlamaFolder(dir);
    CHECK(back->options().qk_norm() == model->options().qk_norm());
    CHECK(back->options().qkv_bias() == model->options().qkv_bias());
    CHECK(back->options().tie_embeddings() == model->options().tie_embeddings());
    CHECK(torch::equal(back->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits, logits));
    WriteLlamaFolder(model, dir, true);
    const torch::Tensor rounded = LoadLlamaFolder(dir)->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits;
    const double moved = (rounded - logits).abs().max().item<double>();
    CHECK(moved > 0.0);   // BF16 rounds the weights...
    CHECK(moved < 0.05);  // ...by about 2^-8 of each
    // Shards of at most 8 KB and their index: the same logits, and no single file left to shadow them.
    WriteLlamaFolder(model, dir, false, 8192);
    CHECK(std::filesystem::exists(dir + "/model.safetensors.index.json"));
    CHECK_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
    const SafetensorsModel shards(dir);
    CHECK(shards.shards() > 2);
    shard_count = shards.shards();
    CHECK(torch::equal(LoadLlamaFolder(dir)->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits, logits));
  }
  // An index that names a tensor its shard lacks, and one that is not JSON.
  char first[64];
  std::snprintf(first, sizeof first, "model-00001-of-%05zu.safetensors", shard_count);
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"weight_map": {"model.no_such.weight": ")" << first << R"("}})";
  CHECK_THROWS_WITH(SafetensorsModel(dir),
                    Catch::Contains("tensor 'model.no_such.weight' is not in") && Catch::Contains(first));
  std::ofstream(dir + "/model.safetensors.index.json") << "{ nope";
  CHECK_THROWS_WITH(SafetensorsModel(dir), Catch::Contains("model.safetensors.index.json: not JSON"));
}

TEST_CASE("a checkpoint that does not fit the config is refused with the file and the tensor named", "[llama]") {
  LlamaLM model(ReadLlamaConfig(Data("llama_gqa", "config.json")));
  const std::string other = Data("qwen3_qknorm", "model.safetensors");  // head_dim 16: larger projections
  CHECK_THROWS_WITH(LoadLlamaWeights(model, SafetensorsFile(other)),
                    Catch::Contains(other + ": tensor 'model.layers.0.self_attn.q_proj.weight' has shape [64, 32], "
                                            "the model needs [32, 32]"));
  LlamaLM untied(ReadLlamaConfig(Data("llama_gqa", "config.json")));
  // A tied checkpoint has no lm_head: an untied model cannot load it.
  CHECK_THROWS_WITH(LoadLlamaWeights(untied, SafetensorsFile(Data("qwen2_bias", "model.safetensors"))),
                    Catch::Contains("no tensor 'lm_head.weight'"));
  CHECK_THROWS_WITH(ReadLlamaConfig(Data("llama_gqa", "missing.json")), Catch::Contains("cannot open"));
}

TEST_CASE("a workflow's Llama model starts from an hf_dir folder; a folder that does not fit is refused at its line",
          "[llama][config]") {
  const std::string game = R"(name: "t"
game { name: "red_black" param { name: "team_size" int: 2 } param { name: "rounds" int: 2 } }
role { name: "a" seats: "a*" model: "m" }
role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";
  const std::string fresh = game + "model { name: \"m\" llama { hidden_size: 16 heads: 2 kv_heads: 1 layers: 1 "
                                   "intermediate_size: 32 qk_norm: true } }\n";
  const CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(fresh, "fresh.textproto"));
  REQUIRE(w.models[0].architecture == "llama");
  ModelPool trained(w.models, 7);
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-llama-hf-dir").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  trained.Save(dir);
  const std::string folder = dir + "/model-m";
  CHECK(ReadLlamaConfig(folder + "/config.json").qk_norm());

  // The workflow takes its sizes from config.json and its weights from the folder.
  const CompiledWorkflow loaded =
      CompileWorkflow(ParseWorkflowText(game + "model { name: \"m\" hf_dir: \"" + folder + "\" }\n", "hf.textproto"));
  CHECK(loaded.models[0].d_model == 16);
  CHECK(loaded.models[0].qk_norm);
  ModelPool from_folder(loaded.models, 99);  // another seed: the weights come from the folder
  const torch::Tensor tokens = torch::randint(0, w.models[0].vocab_size, {2, 5}, torch::kLong);
  const torch::Tensor positions = torch::arange(5, torch::kLong).repeat({2, 1});
  const torch::Tensor valid = torch::ones({2, 5}, torch::kBool), role = torch::zeros({2}, torch::kLong);
  torch::NoGradGuard no_grad;
  CHECK(torch::equal(trained.impl().models[0]->forward(tokens, positions, valid, role).logits,
                     from_folder.impl().models[0]->forward(tokens, positions, valid, role).logits));

  // A folder whose vocabulary is not the prompts', and one that is not there.
  const std::string other = game + "model { name: \"m\"\n  hf_dir: \"" + Data("llama_gqa", "") + "\" }\n";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(other, "other.textproto")),
                    Catch::Contains("other.textproto:7:3") && Catch::Contains("holds a model of 48 tokens"));
  const std::string missing = game + "model { name: \"m\" hf_dir: \"/nonexistent/folder\" }\n";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(missing, "missing.textproto")),
                    Catch::Contains("missing.textproto:6") && Catch::Contains("/nonexistent/folder/config.json"));
  // Per-role heads are the micro transformer's; two architectures at once are refused.
  const std::string heads = R"(name: "t"
game { name: "red_black" param { name: "team_size" int: 2 } param { name: "rounds" int: 2 } }
role { name: "a0" seats: "a0" model: "m" adapter: HEAD }
role { name: "a1" seats: "a1" model: "m" adapter: HEAD }
role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
model { name: "m" llama { hidden_size: 16 heads: 2 kv_heads: 1 } }
)";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(heads, "heads.textproto")),
                    Catch::Contains("heads.textproto:3") && Catch::Contains("LORA adapters, not HEAD"));
  const std::string both = game + "model { name: \"m\" transformer { d_model: 16 } llama { hidden_size: 16 } }\n";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(both, "both.textproto")),
                    Catch::Contains("more than one architecture"));
}
