// config.json of the Llama family, both ways.
#include "core/hf_config.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"

namespace troupe {

HfDecoderConfig ReadHfDecoderConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError(path + ": cannot open");
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + ": not JSON: " + e.what());
  }
  if (!c.is_object()) throw CheckpointError(path + ": expected a JSON object");
  auto number = [&](const char* field) {
    if (!c.contains(field) || !c[field].is_number()) throw CheckpointError(path + ": needs a number '" + field + "'");
    return c[field].get<double>();
  };
  auto count = [&](const char* field) {
    const double v = number(field);
    if (v < 0 || v != static_cast<double>(static_cast<int64_t>(v))) {
      throw CheckpointError(path + ": '" + field + "' must be a non-negative whole number");
    }
    return static_cast<int64_t>(v);
  };
  auto optional_id = [&](const char* field) -> int64_t {
    return c.contains(field) && c[field].is_number_integer() ? c[field].get<int64_t>() : -1;
  };
  HfDecoderConfig h;
  h.model_type = c.contains("model_type") && c["model_type"].is_string() ? c["model_type"].get<std::string>() : "llama";
  if (h.model_type != "llama" && h.model_type != "qwen2" && h.model_type != "qwen3") {
    throw CheckpointError(path + ": model_type '" + h.model_type +
                          "' is not a Llama-family decoder (llama, qwen2, qwen3)");
  }
  h.vocab_size = count("vocab_size");
  h.hidden_size = count("hidden_size");
  h.intermediate_size = count("intermediate_size");
  h.layers = count("num_hidden_layers");
  h.heads = count("num_attention_heads");
  h.kv_heads = c.contains("num_key_value_heads") && !c["num_key_value_heads"].is_null() ? count("num_key_value_heads")
                                                                                         : h.heads;
  h.head_dim = c.contains("head_dim") && !c["head_dim"].is_null() ? count("head_dim") : 0;
  h.max_len = count("max_position_embeddings");
  h.rms_eps = number("rms_norm_eps");
  h.rope_theta = c.contains("rope_theta") ? number("rope_theta") : 10000.0;
  h.tie_embeddings = c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean() &&
                     c["tie_word_embeddings"].get<bool>();
  h.bos_token_id = optional_id("bos_token_id");
  h.eos_token_id = optional_id("eos_token_id");
  return h;
}

void WriteHfDecoderConfig(const HfDecoderConfig& h, const std::string& path, const std::string& torch_dtype) {
  const char* architecture = h.qk_norm() ? "Qwen3ForCausalLM" : h.qkv_bias() ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
  nlohmann::json c = {{"architectures", {architecture}},
                      {"model_type", h.model_type},
                      {"vocab_size", h.vocab_size},
                      {"hidden_size", h.hidden_size},
                      {"intermediate_size", h.intermediate_size},
                      {"num_hidden_layers", h.layers},
                      {"num_attention_heads", h.heads},
                      {"num_key_value_heads", h.kv_heads},
                      {"head_dim", h.head_dim > 0 ? h.head_dim : h.hidden_size / h.heads},
                      {"max_position_embeddings", h.max_len},
                      {"rms_norm_eps", h.rms_eps},
                      {"rope_theta", h.rope_theta},
                      {"tie_word_embeddings", h.tie_embeddings},
                      {"hidden_act", "silu"},
                      {"torch_dtype", torch_dtype}};
  if (h.bos_token_id >= 0) c["bos_token_id"] = h.bos_token_id;
  if (h.eos_token_id >= 0) c["eos_token_id"] = h.eos_token_id;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << c.dump(2) << "\n";
    if (!out) throw CheckpointError("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace troupe
