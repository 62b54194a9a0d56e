// The architectures that read and write Hugging Face folders against
// references: for a tiny random config of each variant (Llama with
// grouped-query attention, tied Llama, Qwen2 with q/k/v bias, Qwen3 with q/k
// norms and its own head_dim; GPT-2 tied with gelu_new, GPT-2 untied with exact
// GELU, its own n_inner and eps), troupe loads the field's config.json and
// model.safetensors and computes the logits that tests/data/FAMILY/make_reference.py
// computed in PyTorch, within 1e-4; the KV-cached forward, one token at a
// time, equals the full one; folders troupe writes read back. rope_scaling
// (llama3, linear, dynamic) is computed as Hugging Face computes it, and the
// config.json fields troupe does not implement are refused by name.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/models/architecture.h"
#include "core/models/model_pool_impl.h"
#include "core/safetensors.h"
#include "tests/test_paths.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

using namespace troupe;

namespace {

// "llama/llama_gqa", "gpt2/gpt2_tied", ...
std::string Data(const std::string& variant, const std::string& file = "") {
  return troupe::testing::SourceDir() + "/tests/data/" + variant + (file.empty() ? "" : "/" + file);
}

const char* kVariants[] = {"llama/llama_gqa",    "llama/llama_tied",   "llama/qwen2_bias",   "llama/qwen3_qknorm",
                           "llama/rope_llama3",  "llama/rope_linear",  "llama/rope_dynamic", "gpt2/gpt2_tied",
                           "gpt2/gpt2_untied"};

PolicyModel Load(const std::string& dir) {
  PolicyModel model = LoadHfFolder(dir);
  model->eval();
  return model;
}

torch::Tensor AllValid(int64_t B, int64_t T) { return torch::ones({B, T}, torch::kBool); }

torch::Tensor Positions(int64_t B, int64_t from, int64_t T) {
  return torch::arange(from, from + T, torch::kLong).unsqueeze(0).expand({B, T}).contiguous();
}

}  // namespace

TEST_CASE("Llama, Qwen2, Qwen3 and GPT-2 decoders give the reference logits, and the KV cache changes nothing",
          "[llama][gpt2]") {
  torch::NoGradGuard no_grad;
  for (const char* variant : kVariants) {
    INFO(variant);
    PolicyModel model = Load(Data(variant));
    SafetensorsFile expected(Data(variant, "expected.safetensors"));
    const SafetensorsView& ids_view = expected.Tensor("input_ids");
    REQUIRE(ids_view.dtype == SafetensorsDtype::kI64);
    std::vector<int64_t> ids(static_cast<size_t>(ids_view.numel()));
    std::memcpy(ids.data(), ids_view.data, ids_view.bytes);
    const int64_t B = ids_view.shape[0], T = ids_view.shape[1];
    const torch::Tensor tokens = torch::from_blob(ids.data(), {B, T}, torch::kLong).clone();
    std::vector<float> want = expected.Floats("logits");
    const torch::Tensor reference = torch::from_blob(want.data(), {B, T, model->vocab_size()}).clone();

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
          "[llama][gpt2]") {
  torch::NoGradGuard no_grad;
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-hf-folder").string();
  size_t shard_count = 0;
  for (const char* variant : kVariants) {
    INFO(variant);
    const ModelConfig config = HfFolderConfig(Data(variant));
    const Architecture& architecture = ArchitectureOf(config);
    PolicyModel model = Load(Data(variant));
    const torch::Tensor tokens = torch::arange(1, 13, torch::kLong).view({2, 6});
    const torch::Tensor logits = model->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits;
    std::filesystem::remove_all(dir);
    architecture.WriteHfFolder(*model, config, dir);
    const ModelConfig back_config = HfFolderConfig(dir);
    CHECK(back_config.spec.SerializeAsString() == config.spec.SerializeAsString());  // every option, both ways
    CHECK(torch::equal(Load(dir)->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits, logits));
    architecture.WriteHfFolder(*model, config, dir, true);
    const torch::Tensor rounded = Load(dir)->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits;
    const double moved = (rounded - logits).abs().max().item<double>();
    CHECK(moved > 0.0);   // BF16 rounds the weights...
    CHECK(moved < 0.05);  // ...by about 2^-8 of each
    // Shards of at most 8 KB and their index: the same logits, and no single file left to shadow them.
    architecture.WriteHfFolder(*model, config, dir, false, 8192);
    CHECK(std::filesystem::exists(dir + "/model.safetensors.index.json"));
    CHECK_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
    const SafetensorsModel shards(dir);
    CHECK(shards.shards() > 2);
    shard_count = shards.shards();
    CHECK(torch::equal(Load(dir)->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits, logits));
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

TEST_CASE("a checkpoint that does not fit the config is refused with the file and the tensor named", "[llama][gpt2]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-hf-mismatch").string();
  auto folder_with = [&](const std::string& config_of, const std::string& weights_of) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(Data(config_of, "config.json"), dir + "/config.json");
    std::filesystem::copy_file(Data(weights_of, "model.safetensors"), dir + "/model.safetensors");
    return dir;
  };
  // head_dim 16: larger projections.
  CHECK_THROWS_WITH(LoadHfFolder(folder_with("llama/llama_gqa", "llama/qwen3_qknorm")),
                    Catch::Contains(dir + "/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' has "
                                          "shape [64, 32], the model needs [32, 32]"));
  // A tied checkpoint has no lm_head: an untied model cannot load it.
  CHECK_THROWS_WITH(LoadHfFolder(folder_with("llama/llama_gqa", "llama/qwen2_bias")),
                    Catch::Contains("lack tensor 'lm_head.weight'"));
  CHECK_THROWS_WITH(LoadHfFolder(folder_with("gpt2/gpt2_untied", "gpt2/gpt2_tied")),
                    Catch::Contains("tensor 'transformer.h.0.mlp.c_fc.weight' has shape [32, 128], the model needs "
                                    "[32, 40]"));
  CHECK_THROWS_WITH(LoadHfFolder(Data("llama/no_such_variant")), Catch::Contains("config.json: cannot open"));
  std::ofstream(dir + "/config.json") << R"({"model_type": "bert", "vocab_size": 4})";
  CHECK_THROWS_WITH(LoadHfFolder(dir), Catch::Contains("model_type 'bert' is not one troupe reads (gpt2, llama, qwen2, qwen3)"));
  std::ofstream(dir + "/config.json") << R"({"model_type": "gpt2", "vocab_size": 4, "n_embd": 8})";
  CHECK_THROWS_WITH(LoadHfFolder(dir), Catch::Contains(dir + "/config.json: needs a number 'n_layer'"));
}

TEST_CASE("a workflow's model starts from an hf_dir folder; a folder that does not fit is refused at its line",
          "[llama][gpt2][config]") {
  const std::string game = R"(name: "t"
game { name: "red_black" param { name: "team_size" int: 2 } param { name: "rounds" int: 2 } }
role { name: "a" seats: "a*" model: "m" }
role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";
  const std::string sizes = GENERATE(
      std::string("llama { hidden_size: 16 heads: 2 kv_heads: 1 head_dim: 8 layers: 1 intermediate_size: 32 "
                  "qk_norm: true }"),
      std::string("gpt2 { hidden_size: 16 heads: 2 layers: 1 intermediate_size: 24 activation: \"gelu\" }"));
  INFO(sizes);
  const std::string fresh = game + "model { name: \"m\" " + sizes + " }\n";
  const CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(fresh, "fresh.textproto"));
  ModelPool trained(w.models, 7);
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-hf-dir").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  trained.Save(dir);
  const std::string folder = dir + "/model-m";

  // The workflow takes its architecture and sizes from config.json and its weights from the folder.
  const CompiledWorkflow loaded =
      CompileWorkflow(ParseWorkflowText(game + "model { name: \"m\" hf_dir: \"" + folder + "\" }\n", "hf.textproto"));
  CHECK(loaded.models[0].spec.architecture_case() == w.models[0].spec.architecture_case());
  CHECK(loaded.models[0].sizes().width == 16);
  CHECK(ArchitectureOptions(loaded.models[0].spec).SerializeAsString() ==
        ArchitectureOptions(w.models[0].spec).SerializeAsString());
  ModelPool from_folder(loaded.models, 99);  // another seed: the weights come from the folder
  const torch::Tensor tokens = torch::randint(0, w.models[0].vocab_size, {2, 5}, torch::kLong);
  const torch::Tensor positions = torch::arange(5, torch::kLong).repeat({2, 1});
  const torch::Tensor valid = torch::ones({2, 5}, torch::kBool), role = torch::zeros({2}, torch::kLong);
  torch::NoGradGuard no_grad;
  CHECK(torch::equal(trained.impl().models[0]->forward(tokens, positions, valid, role).logits,
                     from_folder.impl().models[0]->forward(tokens, positions, valid, role).logits));

  // A folder whose vocabulary is not the prompts', one that is not there, and one whose config.json is broken.
  const std::string other = game + "model { name: \"m\"\n  hf_dir: \"" + Data("llama/llama_gqa") + "\" }\n";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(other, "other.textproto")),
                    Catch::Contains("other.textproto:7:3") && Catch::Contains("holds a model of 48 tokens"));
  const std::string missing = game + "model { name: \"m\" hf_dir: \"/nonexistent/folder\" }\n";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(missing, "missing.textproto")),
                    Catch::Contains("missing.textproto:6") && Catch::Contains("/nonexistent/folder/config.json") &&
                        Catch::Contains("troupe pretrain"));
  std::ofstream(folder + "/config.json") << "{ not json";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(game + "model { name: \"m\" hf_dir: \"" + folder + "\" }\n",
                                                      "broken.textproto")),
                    Catch::Contains("broken.textproto:6") && Catch::Contains("not JSON") &&
                        !Catch::Contains("troupe pretrain"));
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
                    Catch::Contains("both.textproto:6") && Catch::Contains("oneof"));
  const std::string and_folder = game + "model { name: \"m\" gpt2 { } hf_dir: \"" + folder + "\" }\n";
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(and_folder, "and_folder.textproto")),
                    Catch::Contains("and_folder.textproto:6") && Catch::Contains("names an architecture and an hf_dir"));
}

TEST_CASE("GPT-2 weights named as the field's first checkpoints were (no 'transformer.' prefix) load the same",
          "[gpt2]") {
  torch::NoGradGuard no_grad;
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-gpt2-bare-names").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Data("gpt2/gpt2_tied", "config.json"), dir + "/config.json");
  const SafetensorsFile prefixed(Data("gpt2/gpt2_tied", "model.safetensors"));
  std::vector<std::vector<float>> values;
  std::vector<SafetensorsTensor> bare;
  for (const std::string& name : prefixed.names()) values.push_back(prefixed.Floats(name));
  size_t i = 0;
  for (const std::string& name : prefixed.names()) {
    REQUIRE(name.rfind("transformer.", 0) == 0);
    bare.push_back({name.substr(12), prefixed.Tensor(name).shape, values[i++].data(), SafetensorsDtype::kF32});
  }
  WriteSafetensors(dir + "/model.safetensors", bare);
  const torch::Tensor tokens = torch::arange(1, 13, torch::kLong).view({2, 6});
  CHECK(torch::equal(Load(dir)->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits,
                     Load(Data("gpt2/gpt2_tied"))->forward(tokens, Positions(2, 0, 6), AllValid(2, 6), {}).logits));
}

TEST_CASE("rope_scaling changes the logits as the reference computes them; without it they differ", "[llama]") {
  torch::NoGradGuard no_grad;
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-hf-unscaled").string();
  for (const char* variant : {"llama/rope_llama3", "llama/rope_linear"}) {
    INFO(variant);
    const ModelConfig scaled = HfFolderConfig(Data(variant));
    REQUIRE(scaled.spec.llama().has_rope_scaling());
    // The same weights with rope_scaling removed from config.json.
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(Data(variant, "model.safetensors"), dir + "/model.safetensors");
    nlohmann::json config = nlohmann::json::parse(std::ifstream(Data(variant, "config.json")));
    config.erase("rope_scaling");
    std::ofstream(dir + "/config.json") << config.dump();
    const torch::Tensor tokens = torch::arange(1, 19, torch::kLong).view({2, 9});
    const torch::Tensor with = Load(Data(variant))->forward(tokens, Positions(2, 0, 9), AllValid(2, 9), {}).logits;
    const torch::Tensor without = Load(dir)->forward(tokens, Positions(2, 0, 9), AllValid(2, 9), {}).logits;
    CHECK((with - without).abs().max().item<double>() > 1e-2);  // far beyond the reference check's 1e-4
  }
}

TEST_CASE("config.json fields that change the forward pass and that troupe does not implement are refused by name",
          "[llama][gpt2][config]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "troupe-hf-refused").string();
  // The variant's folder with its config.json changed by `edit`; the error loading it.
  auto error_with = [&](const std::string& variant, const std::function<void(nlohmann::json&)>& edit) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(Data(variant, "model.safetensors"), dir + "/model.safetensors");
    nlohmann::json config = nlohmann::json::parse(std::ifstream(Data(variant, "config.json")));
    edit(config);
    std::ofstream(dir + "/config.json") << config.dump();
    try {
      LoadHfFolder(dir);
    } catch (const CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  const std::string file = dir + "/config.json: ";
  struct Case {
    const char* variant;
    std::function<void(nlohmann::json&)> edit;
    std::string error;
  };
  const std::vector<Case> cases = {
      // Sizes that cannot build a model, or would allocate more than any machine holds.
      {"llama/llama_gqa", [](auto& c) { c["num_attention_heads"] = 0; },
       file + "'num_attention_heads': heads must be positive (is 0)"},
      {"llama/llama_gqa", [](auto& c) { c["num_key_value_heads"] = 3; },
       file + "'num_key_value_heads': heads 4 is not a multiple of kv_heads 3"},
      {"llama/llama_gqa", [](auto& c) { c["vocab_size"] = 1000000000000; },
       file + "'vocab_size' is 1000000000000; troupe builds vocabularies of 1 to 4194304 tokens"},
      {"llama/llama_gqa", [](auto& c) { c["hidden_size"] = 1000000000000; },
       file + "'hidden_size' is 1000000000000, more than troupe builds"},
      {"llama/llama_gqa", [](auto& c) { c["num_hidden_layers"] = 100000; },
       file + "'num_hidden_layers': layers 100000 is more than troupe builds (at most 1024)"},
      {"llama/llama_gqa", [](auto& c) { c["intermediate_size"] = -4; },
       file + "'intermediate_size' must be a non-negative whole number"},
      {"gpt2/gpt2_tied", [](auto& c) { c["n_head"] = 0; }, file + "'n_head': heads must be positive (is 0)"},
      // rope_scaling troupe does not compute, or cannot be right.
      {"llama/rope_llama3", [](auto& c) { c["rope_scaling"]["rope_type"] = "yarn"; },
       file + "'rope_scaling.rope_type' is 'yarn', which troupe does not implement (it implements linear, dynamic "
              "and llama3)"},
      {"llama/rope_linear", [](auto& c) { c["rope_scaling"]["factor"] = 0.5; },
       file + "'rope_scaling.factor': rope_scaling factor must be at least 1"},
      {"llama/rope_llama3", [](auto& c) { c["rope_scaling"].erase("low_freq_factor"); },
       file + "needs a number 'rope_scaling.low_freq_factor'"},
      {"llama/llama_gqa", [](auto& c) { c["rope_scaling"] = 8; }, file + "'rope_scaling' must be an object"},
      // Other arithmetic troupe's decoders do not have.
      {"llama/llama_gqa", [](auto& c) { c["hidden_act"] = "gelu"; },
       file + "'hidden_act' is 'gelu'; troupe's Llama family computes silu"},
      {"llama/llama_gqa", [](auto& c) { c["attention_bias"] = true; }, file + "'attention_bias' is true"},
      {"llama/llama_gqa", [](auto& c) { c["mlp_bias"] = true; }, file + "'mlp_bias' is true"},
      {"llama/llama_gqa", [](auto& c) { c["partial_rotary_factor"] = 0.5; }, file + "'partial_rotary_factor' is not 1"},
      {"llama/qwen2_bias", [](auto& c) { c["use_sliding_window"] = true; }, file + "'use_sliding_window' is true"},
      {"llama/qwen3_qknorm", [](auto& c) { c["layer_types"] = {"full_attention", "sliding_attention"}; },
       file + "'layer_types' names a 'sliding_attention' layer"},
      {"llama/llama_gqa", [](auto& c) { c["quantization_config"] = {{"quant_method", "gptq"}}; },
       file + "'quantization_config' is set"},
      {"gpt2/gpt2_tied", [](auto& c) { c["scale_attn_by_inverse_layer_idx"] = true; },
       file + "'scale_attn_by_inverse_layer_idx' is true"},
      {"gpt2/gpt2_tied", [](auto& c) { c["scale_attn_weights"] = false; }, file + "'scale_attn_weights' is false"},
  };
  for (const Case& c : cases) {
    INFO(c.error);
    CHECK_THAT(error_with(c.variant, c.edit), Catch::Contains(c.error));
  }
  // What does not change the arithmetic loads: full-attention layer types, a sliding window switched off.
  CHECK(error_with("llama/qwen3_qknorm", [](auto& c) { c["layer_types"] = {"full_attention", "full_attention"}; }) ==
        "loaded");
  CHECK(error_with("llama/qwen2_bias", [](auto& c) { c["use_sliding_window"] = false; c["sliding_window"] = 4; }) ==
        "loaded");
  CHECK(error_with("llama/rope_llama3", [](auto& c) { c["rope_scaling"] = {{"rope_type", "default"}}; }) == "loaded");
}
