// The Llama family's options (config::LlamaSpec): defaults, validation, and
// the config.json of Llama, Qwen2 (q/k/v bias) and Qwen3 (q/k norms).
#include "core/models/architecture_spec.h"

#include <cstdint>

namespace troupe {
namespace {

class LlamaSpecOf : public ArchitectureSpec {
 public:
  std::string name() const override { return "llama"; }
  std::vector<std::string> hf_model_types() const override { return {"llama", "qwen2", "qwen3"}; }

  std::string defaults_text() const override {
    return R"pb(hidden_size: 64
                intermediate_size: 176
                layers: 2
                heads: 4
                kv_heads: 2
                head_dim: 0
                max_len: 160
                rms_eps: 1e-6
                rope_theta: 10000
                qkv_bias: false
                qk_norm: false
                tie_embeddings: true)pb";
  }

  std::vector<OptionProblem> Validate(const config::ModelSpec& model) const override {
    const config::LlamaSpec& l = model.llama();
    std::vector<OptionProblem> problems;
    if (l.hidden_size() <= 0 || l.intermediate_size() <= 0 || l.layers() <= 0 || l.heads() <= 0 || l.kv_heads() <= 0 ||
        l.max_len() <= 0 || l.head_dim() < 0) {
      return {{"", "sizes must be positive"}};
    }
    if (l.heads() % l.kv_heads() != 0) {
      problems.push_back({"kv_heads", "heads " + std::to_string(l.heads()) + " is not a multiple of kv_heads " +
                                          std::to_string(l.kv_heads())});
    }
    if (l.head_dim() == 0 && l.hidden_size() % l.heads() != 0) {
      problems.push_back({"heads", "hidden_size " + std::to_string(l.hidden_size()) + " is not divisible by heads " +
                                       std::to_string(l.heads()) + "; set head_dim"});
    }
    if ((l.head_dim() > 0 ? l.head_dim() : l.hidden_size() / l.heads()) % 2 != 0) {
      problems.push_back({"head_dim", "rotary embeddings need an even head dimension"});
    }
    if (l.rms_eps() <= 0) problems.push_back({"rms_eps", "rms_eps must be positive"});
    if (l.rope_theta() <= 0) problems.push_back({"rope_theta", "rope_theta must be positive"});
    if (l.qkv_bias() && l.qk_norm()) {
      problems.push_back({"qk_norm", "qkv_bias (Qwen2) and qk_norm (Qwen3) do not go together"});
    }
    return problems;
  }

  ModelSizes Sizes(const config::ModelSpec& model) const override {
    const config::LlamaSpec& l = model.llama();
    return {l.hidden_size(), l.layers(), l.heads(), l.max_len()};
  }

  std::string Details(const config::ModelSpec& model) const override {
    return "kv_heads=" + std::to_string(model.llama().kv_heads());
  }

  void ReadHfConfig(const HfConfigReader& c, config::ModelSpec* model) const override {
    config::LlamaSpec* l = model->mutable_llama();
    const std::string type = c.text("model_type", "llama");
    l->set_hidden_size(static_cast<int32_t>(c.count("hidden_size")));
    l->set_intermediate_size(static_cast<int32_t>(c.count("intermediate_size")));
    l->set_layers(static_cast<int32_t>(c.count("num_hidden_layers")));
    l->set_heads(static_cast<int32_t>(c.count("num_attention_heads")));
    l->set_kv_heads(static_cast<int32_t>(c.has("num_key_value_heads") ? c.count("num_key_value_heads") : l->heads()));
    l->set_head_dim(static_cast<int32_t>(c.has("head_dim") ? c.count("head_dim") : 0));
    l->set_max_len(static_cast<int32_t>(c.count("max_position_embeddings")));
    l->set_rms_eps(c.number("rms_norm_eps"));
    l->set_rope_theta(c.has("rope_theta") ? c.number("rope_theta") : 10000.0);  // the field's default
    l->set_qkv_bias(type == "qwen2");
    l->set_qk_norm(type == "qwen3");
    l->set_tie_embeddings(c.has("tie_word_embeddings") && c.flag("tie_word_embeddings", false));
  }

  nlohmann::json HfConfig(const config::ModelSpec& model) const override {
    const config::LlamaSpec& l = model.llama();
    const char* type = l.qk_norm() ? "qwen3" : l.qkv_bias() ? "qwen2" : "llama";
    const char* architecture = l.qk_norm()    ? "Qwen3ForCausalLM"
                               : l.qkv_bias() ? "Qwen2ForCausalLM"
                                              : "LlamaForCausalLM";
    nlohmann::json json = {{"architectures", {architecture}},
                           {"model_type", type},
                           {"hidden_size", l.hidden_size()},
                           {"intermediate_size", l.intermediate_size()},
                           {"num_hidden_layers", l.layers()},
                           {"num_attention_heads", l.heads()},
                           {"num_key_value_heads", l.kv_heads()},
                           {"max_position_embeddings", l.max_len()},
                           {"rms_norm_eps", l.rms_eps()},
                           {"rope_theta", l.rope_theta()},
                           {"tie_word_embeddings", l.tie_embeddings()},
                           {"hidden_act", "silu"}};
    // Absent, Llama and Qwen2 read hidden_size / heads; Qwen3 reads 128, so it always gets one.
    if (l.head_dim() > 0 || l.qk_norm())
      json["head_dim"] = l.head_dim() > 0 ? l.head_dim() : l.hidden_size() / l.heads();
    return json;
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE_SPEC("llama", LlamaSpecOf);

}  // namespace troupe
