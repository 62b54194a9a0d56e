// The GPT-2 style decoder's options (config::Gpt2Spec): defaults, validation,
// and Hugging Face's GPT-2 config.json (n_embd, n_layer, n_head, n_positions,
// n_inner, activation_function, layer_norm_epsilon).
#include "core/models/architecture_spec.h"

#include <cstdint>
#include <map>

#include "core/base/errors.h"

namespace troupe {
namespace {

bool KnownActivation(const std::string& a) { return a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu"; }

class Gpt2SpecOf : public ArchitectureSpec {
 public:
  std::string name() const override { return "gpt2"; }
  std::vector<std::string> hf_model_types() const override { return {"gpt2"}; }
  std::string defaults_text() const override {
    return R"pb(hidden_size: 64
                layers: 2
                heads: 4
                max_len: 160
                intermediate_size: 0
                layer_norm_eps: 1e-5
                activation: "gelu_new"
                tie_embeddings: true)pb";
  }

  std::vector<OptionProblem> Validate(const config::ModelSpec& model) const override {
    const config::Gpt2Spec& g = model.gpt2();
    std::vector<OptionProblem> problems;
    CheckSize(&problems, "hidden_size", g.hidden_size(), SizeLimits::kWidth);
    CheckSize(&problems, "layers", g.layers(), SizeLimits::kLayers);
    CheckSize(&problems, "heads", g.heads(), SizeLimits::kHeads);
    CheckSize(&problems, "max_len", g.max_len(), SizeLimits::kPositions);
    CheckSizeOrDefault(&problems, "intermediate_size", g.intermediate_size(), SizeLimits::kIntermediate,
                       "4 x hidden_size");
    if (!problems.empty()) return problems;
    if (g.hidden_size() % g.heads() != 0) {
      problems.push_back({"heads", "hidden_size " + std::to_string(g.hidden_size()) + " is not divisible by heads " +
                                       std::to_string(g.heads())});
    }
    if (g.layer_norm_eps() <= 0) problems.push_back({"layer_norm_eps", "layer_norm_eps must be positive"});
    if (!KnownActivation(g.activation())) {
      problems.push_back(
          {"activation", "activation '" + g.activation() + "' is not gelu_new, gelu_pytorch_tanh or gelu"});
    }
    return problems;
  }

  ModelSizes Sizes(const config::ModelSpec& model) const override {
    const config::Gpt2Spec& g = model.gpt2();
    return {g.hidden_size(), g.layers(), g.heads(), g.max_len()};
  }

  std::string Details(const config::ModelSpec& model) const override { return model.gpt2().activation(); }

  void ReadHfConfig(const HfConfigReader& c, config::ModelSpec* model) const override {
    config::Gpt2Spec* g = model->mutable_gpt2();
    g->set_hidden_size(c.size("n_embd"));
    g->set_layers(c.size("n_layer"));
    g->set_heads(c.size("n_head"));
    g->set_max_len(c.size("n_positions"));
    g->set_intermediate_size(c.has("n_inner") ? c.size("n_inner") : 0);
    g->set_layer_norm_eps(c.has("layer_norm_epsilon") ? c.number("layer_norm_epsilon") : 1e-5);
    g->set_activation(c.text("activation_function", "gelu_new"));
    if (!KnownActivation(g->activation())) {
      throw CheckpointError(c.path() + ": activation_function '" + g->activation() +
                            "' is not gelu_new, gelu_pytorch_tanh or gelu");
    }
    g->set_tie_embeddings(c.flag("tie_word_embeddings", true));  // GPT-2 ties unless told otherwise
    // What changes GPT-2's arithmetic and troupe does not implement: refused by name.
    if (!c.flag("scale_attn_weights", true)) c.Fail("scale_attn_weights", "is false; troupe scales attention by 1/sqrt(d)");
    if (c.flag("scale_attn_by_inverse_layer_idx", false)) {
      c.Fail("scale_attn_by_inverse_layer_idx", "is true; troupe does not scale attention by layer");
    }
    if (c.flag("add_cross_attention", false)) c.Fail("add_cross_attention", "is true; troupe's GPT-2 is a decoder only");
    if (c.has("quantization_config")) c.Fail("quantization_config", "is set; troupe reads unquantized weights only");
  }

  std::string HfFieldOf(const std::string& option) const override {
    static const std::map<std::string, std::string> fields = {{"hidden_size", "n_embd"},
                                                              {"layers", "n_layer"},
                                                              {"heads", "n_head"},
                                                              {"max_len", "n_positions"},
                                                              {"intermediate_size", "n_inner"},
                                                              {"layer_norm_eps", "layer_norm_epsilon"},
                                                              {"activation", "activation_function"}};
    auto it = fields.find(option);
    return it == fields.end() ? option : it->second;
  }

  nlohmann::json HfConfig(const config::ModelSpec& model) const override {
    const config::Gpt2Spec& g = model.gpt2();
    nlohmann::json json = {{"architectures", {"GPT2LMHeadModel"}},
                           {"model_type", "gpt2"},
                           {"n_embd", g.hidden_size()},
                           {"n_layer", g.layers()},
                           {"n_head", g.heads()},
                           {"n_positions", g.max_len()},
                           {"n_ctx", g.max_len()},
                           {"activation_function", g.activation()},
                           {"layer_norm_epsilon", g.layer_norm_eps()},
                           {"tie_word_embeddings", g.tie_embeddings()}};
    json["n_inner"] = g.intermediate_size() > 0 ? nlohmann::json(g.intermediate_size()) : nlohmann::json(nullptr);
    return json;
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE_SPEC("gpt2", Gpt2SpecOf);

}  // namespace troupe
