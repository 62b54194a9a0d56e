// CompiledWorkflow -> ModelServeSpec, HubSpec.
#include "workflows/config/serve_specs.h"

#include "workflows/config/compiled_workflow.h"

namespace troupe {

namespace {

// What builds the model itself: architecture, vocabulary, troupe's parts and
// the checkpoint it starts from.
void SetModelParts(const ModelConfig& m, wire::ModelServeSpec* s) {
  *s->mutable_model() = m.spec;  // resolved: the worker reads no model folder's config again
  s->set_vocab_size(m.vocab_size);
  s->set_num_roles(m.num_roles);
  s->set_lora(m.lora_rank > 0);
  s->set_role_heads(m.role_heads);
  s->set_latent(m.latent);
  s->set_latent_in_width(m.latent_in_width);
  s->set_eos_token(m.eos_token);
  s->set_tokenizer_json(m.tokenizer_json);
  if (m.init) {
    wire::ModelInit* init = s->mutable_init();
    init->set_checkpoint(m.init->checkpoint);
    SetModelParts(*m.init->source, init->mutable_source());
    init->mutable_token_map()->Add(m.init->token_map.begin(), m.init->token_map.end());
    init->mutable_slot_map()->Add(m.init->slot_map.begin(), m.init->slot_map.end());
  }
}

}  // namespace

wire::ModelServeSpec MakeServeSpec(const CompiledWorkflow& c, int model) {
  const ModelConfig& m = c.models.at(model);
  wire::ModelServeSpec s;
  s.set_model_index(model);
  s.set_seed(c.seed);
  s.set_threads(c.run.threads);
  SetModelParts(m, &s);
  *s.mutable_trainer() = c.proto.trainer();
  s.mutable_trainer()->clear_hybrid();  // the distillation settings come with each step
  s.set_hybrid(c.hybrid());
  *s.mutable_credit() = c.proto.credit();
  return s;
}

HubSpec MakeHubSpec(const CompiledWorkflow& c) {
  HubSpec h;
  for (size_t m = 0; m < c.models.size(); ++m) h.models.push_back(MakeServeSpec(c, static_cast<int>(m)));
  h.runtime = c.runtime;
  return h;
}

}  // namespace troupe
