// Building, saving and loading each policy architecture.
#include "core/models/architectures.h"

#include <filesystem>

#include "core/base/errors.h"
#include "core/base/registry.h"
#include "core/models/llama.h"
#include "core/models/transformer.h"
#include "core/safetensors.h"

namespace troupe {

namespace {

LlamaOptions LlamaOptionsOf(const ModelConfig& c) {
  return LlamaOptions(c.vocab_size)
      .hidden_size(c.d_model)
      .intermediate_size(c.intermediate_size)
      .layers(c.layers)
      .heads(c.heads)
      .kv_heads(c.kv_heads)
      .head_dim(c.head_dim)
      .max_len(c.max_len)
      .rms_eps(c.rms_eps)
      .rope_theta(c.rope_theta)
      .qkv_bias(c.qkv_bias)
      .qk_norm(c.qk_norm)
      .tie_embeddings(c.tie_embeddings)
      .num_roles(c.num_roles)
      .lora_rank(c.lora_rank)
      .latent(c.latent)
      .latent_in_width(c.latent_in_width);
}

std::string LlamaDir(const ModelConfig& c, const std::string& dir) { return dir + "/model-" + c.name; }
std::string TransformerFile(const ModelConfig& c, const std::string& dir) {
  return dir + "/model-" + c.name + ".pt";
}

}  // namespace

std::vector<std::string> ArchitectureNames() { return {"llama", "transformer"}; }

namespace {

PolicyModel BuildArchitecture(const ModelConfig& c) {
  if (c.architecture == "transformer") {
    if (!c.hf_dir.empty()) throw ModelError("model '" + c.name + "': hf_dir is for the llama architecture");
    return TransformerLM(TransformerLMOptions(c.vocab_size)
                             .d_model(c.d_model)
                             .layers(c.layers)
                             .heads(c.heads)
                             .max_len(c.max_len)
                             .ff_mult(c.ff_mult)
                             .num_roles(c.num_roles)
                             .lora_rank(c.lora_rank)
                             .latent(c.latent)
                             .latent_in_width(c.latent_in_width)
                             .role_heads(c.role_heads))
        .ptr();
  }
  if (c.architecture == "llama") {
    if (c.role_heads) throw ModelError("model '" + c.name + "': the llama architecture has no per-role heads; use lora");
    const LlamaOptions options = LlamaOptionsOf(c);
    if (c.hf_dir.empty()) return LlamaLM(options).ptr();
    LlamaLM model = LoadLlamaFolder(c.hf_dir, &options);
    const LlamaOptions& o = model->options();
    if (o.vocab_size() != options.vocab_size() || o.hidden_size() != options.hidden_size() ||
        o.max_len() < options.max_len()) {
      throw ModelError("model '" + c.name + "': " + c.hf_dir + " holds a model of vocabulary " +
                       std::to_string(o.vocab_size()) + " and width " + std::to_string(o.hidden_size()) +
                       "; the workflow expected " + std::to_string(options.vocab_size()) + " and " +
                       std::to_string(options.hidden_size()));
    }
    return model.ptr();
  }
  throw ModelError("model '" + c.name + "': unknown architecture '" + c.architecture +
                   "' (known: " + JoinNames(ArchitectureNames()) + ")");
}

}  // namespace

PolicyModel BuildPolicyModel(const ModelConfig& c) {
  PolicyModel model = BuildArchitecture(c);
  model->set_bf16(c.bf16);
  return model;
}

namespace {

// A model that reads text carries its tokenizer (tokenizer.json and, when one
// sits beside it, tokenizer_config.json), so the folder is whole on its own.
void CopyTokenizerFiles(const std::string& tokenizer_json, const std::string& folder) {
  if (tokenizer_json.empty()) return;
  namespace fs = std::filesystem;
  const fs::path from(tokenizer_json);
  const fs::path config = from.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  fs::copy_file(from, fs::path(folder) / "tokenizer.json", fs::copy_options::overwrite_existing, ec);
  if (!ec && fs::exists(config)) {
    fs::copy_file(config, fs::path(folder) / "tokenizer_config.json", fs::copy_options::overwrite_existing, ec);
  }
  if (ec) throw CheckpointError("cannot copy the tokenizer " + tokenizer_json + " into " + folder + ": " + ec.message());
}

}  // namespace

void SavePolicyModel(PolicyModelImpl& model, const ModelConfig& c, const std::string& dir) {
  if (auto* llama = dynamic_cast<LlamaLMImpl*>(&model)) {
    LlamaLM holder(std::shared_ptr<LlamaLMImpl>(llama->shared_from_this(), llama));
    WriteLlamaFolder(holder, LlamaDir(c, dir));
    WriteTroupeParts(holder, LlamaDir(c, dir) + "/troupe.safetensors");
    CopyTokenizerFiles(c.tokenizer_json, LlamaDir(c, dir));
    return;
  }
  torch::save(model.shared_from_this(), TransformerFile(c, dir));
}

void LoadPolicyModel(PolicyModel& model, const ModelConfig& c, const std::string& dir, torch::Device device) {
  if (auto llama = std::dynamic_pointer_cast<LlamaLMImpl>(model)) {
    const std::string folder = LlamaDir(c, dir);
    if (!std::filesystem::exists(folder)) throw CheckpointError("checkpoint lacks model folder " + folder);
    LlamaLM holder(llama);
    LoadLlamaWeights(holder, SafetensorsModel(folder));
    LoadTroupeParts(holder, folder + "/troupe.safetensors");
    return;
  }
  const std::string path = TransformerFile(c, dir);
  if (!std::filesystem::exists(path)) throw CheckpointError("checkpoint lacks model file " + path);
  try {
    torch::load(model, path, device);
  } catch (const c10::Error& e) {
    throw CheckpointError("cannot load " + path + ": " + e.what_without_backtrace());
  }
}

}  // namespace troupe
