// The Llama family's options (config::LlamaSpec): defaults, validation, and
// the config.json of Llama, Qwen2 (q/k/v bias) and Qwen3 (q/k norms).
#include "core/models/architecture_spec.h"

#include <cstdint>
#include <map>

#include "core/base/errors.h"

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
    CheckSize(&problems, "hidden_size", l.hidden_size(), SizeLimits::kWidth);
    CheckSize(&problems, "intermediate_size", l.intermediate_size(), SizeLimits::kIntermediate);
    CheckSize(&problems, "layers", l.layers(), SizeLimits::kLayers);
    CheckSize(&problems, "heads", l.heads(), SizeLimits::kHeads);
    CheckSize(&problems, "kv_heads", l.kv_heads(), SizeLimits::kHeads);
    CheckSize(&problems, "max_len", l.max_len(), SizeLimits::kPositions);
    CheckSizeOrDefault(&problems, "head_dim", l.head_dim(), SizeLimits::kWidth, "hidden_size / heads");
    if (!problems.empty()) return problems;
    if (static_cast<int64_t>(l.heads()) * (l.head_dim() > 0 ? l.head_dim() : l.hidden_size() / l.heads()) >
        SizeLimits::kWidth) {
      problems.push_back({"head_dim", "heads x head_dim is more than troupe builds (at most " +
                                          std::to_string(SizeLimits::kWidth) + ")"});
    }
    if (l.heads() % l.kv_heads() != 0) {
      problems.push_back({"kv_heads", "heads " + std::to_string(l.heads()) + " is not a multiple of kv_heads " +
                                          std::to_string(l.kv_heads())});
    }
    if (l.head_dim() == 0 && l.hidden_size() % l.heads() != 0) {
      problems.push_back({"heads", "hidden_size " + std::to_string(l.hidden_size()) + " is not divisible by heads " +
                                       std::to_string(l.heads()) + "; set head_dim"});
    }
    const int head_dim = l.head_dim() > 0 ? l.head_dim() : l.hidden_size() / l.heads();
    if (head_dim == 0 || head_dim % 2 != 0) {
      problems.push_back({"head_dim", "rotary embeddings need an even head dimension (it is " +
                                          std::to_string(head_dim) + ")"});
    }
    if (!(l.rms_eps() > 0)) problems.push_back({"rms_eps", "rms_eps must be positive"});
    if (!(l.rope_theta() > 0)) problems.push_back({"rope_theta", "rope_theta must be positive"});
    if (l.qkv_bias() && l.qk_norm()) {
      problems.push_back({"qk_norm", "qkv_bias (Qwen2) and qk_norm (Qwen3) do not go together"});
    }
    if (l.has_rope_scaling()) {
      const config::RopeScalingSpec& r = l.rope_scaling();
      if (r.type() != "linear" && r.type() != "dynamic" && r.type() != "llama3") {
        problems.push_back({"rope_scaling.type", "rope_scaling type '" + r.type() +
                                                     "' is not implemented (troupe implements linear, dynamic and llama3)"});
      }
      if (!(r.factor() >= 1)) problems.push_back({"rope_scaling.factor", "rope_scaling factor must be at least 1"});
      if (r.type() == "llama3") {
        if (!(r.low_freq_factor() > 0) || !(r.high_freq_factor() > r.low_freq_factor())) {
          problems.push_back({"rope_scaling.high_freq_factor",
                              "llama3 rope_scaling needs 0 < low_freq_factor < high_freq_factor"});
        }
        if (r.original_max_len() <= 0) {
          problems.push_back({"rope_scaling.original_max_len", "llama3 rope_scaling needs original_max_len"});
        }
      }
    }
    return problems;
  }

  std::string HfFieldOf(const std::string& option) const override {
    static const std::map<std::string, std::string> fields = {
        {"layers", "num_hidden_layers"},
        {"heads", "num_attention_heads"},
        {"kv_heads", "num_key_value_heads"},
        {"max_len", "max_position_embeddings"},
        {"rms_eps", "rms_norm_eps"},
        {"rope_scaling.type", "rope_scaling.rope_type"},
        {"rope_scaling.original_max_len", "rope_scaling.original_max_position_embeddings"}};
    auto it = fields.find(option);
    return it == fields.end() ? option : it->second;
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
    l->set_hidden_size(c.size("hidden_size"));
    l->set_intermediate_size(c.size("intermediate_size"));
    l->set_layers(c.size("num_hidden_layers"));
    l->set_heads(c.size("num_attention_heads"));
    l->set_kv_heads(c.has("num_key_value_heads") ? c.size("num_key_value_heads") : l->heads());
    l->set_head_dim(c.has("head_dim") ? c.size("head_dim") : 0);
    l->set_max_len(c.size("max_position_embeddings"));
    l->set_rms_eps(c.number("rms_norm_eps"));
    l->set_rope_theta(c.has("rope_theta") ? c.number("rope_theta") : 10000.0);  // the field's default
    l->set_qkv_bias(type == "qwen2");
    l->set_qk_norm(type == "qwen3");
    l->set_tie_embeddings(c.has("tie_word_embeddings") && c.flag("tie_word_embeddings", false));
    if (c.has("rope_scaling")) ReadRopeScaling(c.object("rope_scaling"), l);
    RefuseWhatChangesTheForwardPass(c, type);
  }

  // rope_scaling's rope_type (or its older name, type): "default" is none.
  static void ReadRopeScaling(const HfConfigReader& r, config::LlamaSpec* l) {
    const std::string type = r.has("rope_type") ? r.text("rope_type", "") : r.text("type", "default");
    if (type == "default") return;
    const char* field = r.has("rope_type") ? "rope_type" : "type";
    if (type != "linear" && type != "dynamic" && type != "llama3") {
      r.Fail(field, "is '" + type + "', which troupe does not implement (it implements linear, dynamic and llama3)");
    }
    config::RopeScalingSpec* s = l->mutable_rope_scaling();
    s->set_type(type);
    s->set_factor(r.number("factor"));
    if (type == "llama3") {
      s->set_low_freq_factor(r.number("low_freq_factor"));
      s->set_high_freq_factor(r.number("high_freq_factor"));
      s->set_original_max_len(r.size("original_max_position_embeddings"));
    }
  }

  // Fields of the field's Llama / Qwen configs that change the arithmetic and
  // that troupe does not implement: refused by name, never silently skipped.
  static void RefuseWhatChangesTheForwardPass(const HfConfigReader& c, const std::string& type) {
    const std::string act = c.text("hidden_act", "silu");
    if (act != "silu") c.Fail("hidden_act", "is '" + act + "'; troupe's Llama family computes silu");
    if (type == "llama") {
      if (c.flag("attention_bias", false)) c.Fail("attention_bias", "is true; troupe's Llama has no attention biases");
    }
    if (c.flag("mlp_bias", false)) c.Fail("mlp_bias", "is true; troupe's Llama family has no MLP biases");
    if (c.has("partial_rotary_factor") && c.number("partial_rotary_factor") != 1.0) {
      c.Fail("partial_rotary_factor", "is not 1; troupe rotates every dimension of a head");
    }
    if (c.flag("use_sliding_window", false)) {
      c.Fail("use_sliding_window", "is true; troupe attends over the whole context (no sliding window)");
    }
    if (c.has("layer_types")) {
      // Newer Qwen configs list each layer's attention; troupe has full attention only.
      for (const std::string& t : c.texts("layer_types")) {
        if (t != "full_attention") c.Fail("layer_types", "names a '" + t + "' layer; troupe has full attention only");
      }
    }
    if (c.has("quantization_config")) c.Fail("quantization_config", "is set; troupe reads unquantized weights only");
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
    if (l.has_rope_scaling()) {
      const config::RopeScalingSpec& r = l.rope_scaling();
      nlohmann::json scaling = {{"rope_type", r.type()}, {"factor", r.factor()}};
      if (r.type() == "llama3") {
        scaling["low_freq_factor"] = r.low_freq_factor();
        scaling["high_freq_factor"] = r.high_freq_factor();
        scaling["original_max_position_embeddings"] = r.original_max_len();
      }
      json["rope_scaling"] = scaling;
    }
    // Absent, Llama and Qwen2 read hidden_size / heads; Qwen3 reads 128, so it always gets one.
    if (l.head_dim() > 0 || l.qk_norm())
      json["head_dim"] = l.head_dim() > 0 ? l.head_dim() : l.hidden_size() / l.heads();
    return json;
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE_SPEC("llama", LlamaSpecOf);

}  // namespace troupe
