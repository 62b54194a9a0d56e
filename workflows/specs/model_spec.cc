// Reading the runtime's specs: ModelServeSpec -> ModelConfig, TrainerConfig.
#include "workflows/specs/model_spec.h"

#include <filesystem>

#include "core/base/errors.h"
#include "core/models/architecture_spec.h"
#include "workflows/specs/enums.h"

namespace troupe {

ModelConfig ModelConfigOf(const config::ModelSpec& spec) {
  ModelConfig m;
  m.name = spec.name();
  m.spec = spec;
  // A model that starts from a Hugging Face folder takes its architecture and
  // sizes from the folder's config.json, once: the resolved spec carries them
  // to the workers.
  if (spec.has_hf_dir() && spec.architecture_case() == config::ModelSpec::ARCHITECTURE_NOT_SET) {
    m.vocab_size = static_cast<int>(ReadHfFolderConfig(spec.hf_dir(), &m.spec));  // compilation checks it
  }
  ApplyArchitectureDefaults(&m.spec);
  m.hf_dir = spec.hf_dir();
  // Text prompts: the named tokenizer, or the one an hf_dir holds.
  namespace fs = std::filesystem;
  if (spec.has_tokenizer()) {
    m.tokenizer_json = fs::is_directory(spec.tokenizer()) ? spec.tokenizer() + "/tokenizer.json" : spec.tokenizer();
  } else if (spec.has_hf_dir() && fs::exists(spec.hf_dir() + "/tokenizer.json")) {
    m.tokenizer_json = spec.hf_dir() + "/tokenizer.json";
  }
  m.device = spec.device();
  m.bf16 = spec.precision() == config::BF16;
  m.lr = spec.optimizer().lr();
  m.weight_decay = spec.optimizer().weight_decay();
  m.grad_clip = spec.optimizer().grad_clip();
  m.frozen = spec.frozen();
  return m;
}

ModelConfig ModelConfigOf(const wire::ModelServeSpec& s) {
  ModelConfig m = ModelConfigOf(s.model());
  m.index = s.model_index();
  m.vocab_size = s.vocab_size();
  m.num_roles = s.num_roles();
  m.lora_rank = s.lora() ? s.model().lora_rank() : 0;
  m.role_heads = s.role_heads();
  m.latent = s.latent();
  m.latent_in_width = s.latent_in_width();
  m.eos_token = s.eos_token();
  m.tokenizer_json = s.tokenizer_json();
  if (!s.init().checkpoint().empty()) {
    auto init = std::make_shared<ModelInit>();
    init->checkpoint = s.init().checkpoint();
    init->source = std::make_shared<const ModelConfig>(ModelConfigOf(s.init().source()));
    init->token_map.assign(s.init().token_map().begin(), s.init().token_map().end());
    init->slot_map.assign(s.init().slot_map().begin(), s.init().slot_map().end());
    m.init = std::move(init);
  }
  return m;
}

TrainerConfig TrainerConfigOf(const config::TrainerSpec& t, const config::CreditSpec& credit) {
  TrainerConfig c;
  const auto estimator = EstimatorOf(credit.estimator());
  if (!estimator) throw ConfigError("unknown estimator " + std::to_string(credit.estimator()));
  c.estimator = *estimator;
  c.epochs = t.epochs();
  c.minibatch = t.minibatch();
  c.update_records = t.update_records();
  c.tree_row_budget = t.tree_row_positions();
  c.pass_positions = t.pass_positions();
  c.clip = t.clip();
  c.entropy_coef = t.entropy_coef();
  c.kl_coef = t.kl_coef();
  c.value_coef = t.value_coef();
  c.temperature = t.temperature();
  c.gamma = credit.gamma();
  c.lambda = credit.lambda();
  return c;
}

TrainerConfig TrainerConfigOf(const wire::ModelServeSpec& s) { return TrainerConfigOf(s.trainer(), s.credit()); }

}  // namespace troupe
