// The micro transformer's options (config::TransformerSpec): defaults and
// validation. It has no Hugging Face counterpart; its checkpoints are
// LibTorch archives.
#include "core/models/architecture_spec.h"

#include "core/base/errors.h"

namespace troupe {
namespace {

class TransformerSpecOf : public ArchitectureSpec {
 public:
  std::string name() const override { return "transformer"; }
  std::vector<std::string> hf_model_types() const override { return {}; }
  std::string defaults_text() const override { return "d_model: 64 layers: 2 heads: 4 max_len: 160 ff_mult: 4"; }
  bool per_role_heads() const override { return true; }

  std::vector<OptionProblem> Validate(const config::ModelSpec& model) const override {
    const config::TransformerSpec& t = model.transformer();
    std::vector<OptionProblem> problems;
    CheckSize(&problems, "d_model", t.d_model(), SizeLimits::kWidth);
    CheckSize(&problems, "layers", t.layers(), SizeLimits::kLayers);
    CheckSize(&problems, "heads", t.heads(), SizeLimits::kHeads);
    CheckSize(&problems, "max_len", t.max_len(), SizeLimits::kPositions);
    CheckSize(&problems, "ff_mult", t.ff_mult(), 64);
    if (!problems.empty()) return problems;
    if (t.d_model() % t.heads() != 0) {
      return {{"heads",
               "d_model " + std::to_string(t.d_model()) + " is not divisible by heads " + std::to_string(t.heads())}};
    }
    return {};
  }

  ModelSizes Sizes(const config::ModelSpec& model) const override {
    const config::TransformerSpec& t = model.transformer();
    return {t.d_model(), t.layers(), t.heads(), t.max_len()};
  }

  void ReadHfConfig(const HfConfigReader& c, config::ModelSpec*) const override {
    throw CheckpointError(c.path() + ": the micro transformer has no Hugging Face config");
  }
  nlohmann::json HfConfig(const config::ModelSpec& model) const override {
    throw ModelError("model '" + model.name() + "': the micro transformer has no Hugging Face config");
  }
};

}  // namespace

TROUPE_REGISTER_ARCHITECTURE_SPEC("transformer", TransformerSpecOf);

}  // namespace troupe
