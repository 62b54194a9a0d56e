// The runtime section of a workflow: where workers connect, which models run
// in `troupe worker` processes, fault timeouts, event publishing, security.
#include "comms/endpoint.h"
#include "core/base/errors.h"
#include "core/game.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/validate_graph.h"

namespace troupe {

namespace {

int Positive(const LoadedWorkflow& w, int value, const char* field) {
  if (value <= 0) w.Fail({{"runtime"}, {field}}, std::string(field) + " must be positive");
  return value;
}

}  // namespace

void CompileRuntime(const LoadedWorkflow& w, CompiledWorkflow& c) {
  const config::RuntimeSpec& r = c.proto.runtime();  // with its defaults
  RuntimeSettings& s = c.runtime;
  s.endpoint = r.endpoint();
  s.publish = r.publish();
  for (const auto& [field, text] : {std::make_pair("endpoint", s.endpoint), std::make_pair("publish", s.publish)}) {
    if (text.empty()) continue;
    try {
      ParseEndpoint(text);
    } catch (const CommsError& e) {
      w.Fail({{"runtime"}, {field}}, e.what());
    }
  }
  for (int i = 0; i < r.worker_size(); ++i) {
    const config::WorkerSpec& spec = r.worker(i);
    WorkerPlacement p;
    p.model = -1;
    for (size_t m = 0; m < c.models.size(); ++m) {
      if (c.models[m].name == spec.model()) p.model = static_cast<int>(m);
    }
    if (p.model < 0) w.Fail({{"runtime"}, {"worker", i}, {"model"}}, "worker for unknown model '" + spec.model() + "'");
    for (const auto& other : s.external) {
      if (other.model == p.model)
        w.Fail({{"runtime"}, {"worker", i}, {"model"}}, "model '" + spec.model() + "' has two worker entries");
    }
    if (spec.replicas() <= 0) w.Fail({{"runtime"}, {"worker", i}, {"replicas"}}, "replicas must be positive");
    p.replicas = spec.replicas();
    s.external.push_back(p);
  }
  if (!s.external.empty() && (s.endpoint.empty() || s.endpoint.rfind("inproc://", 0) == 0)) {
    w.Fail({{"runtime"}, {"endpoint"}}, "external workers need a tcp:// or ipc:// endpoint to connect to");
  }
  s.heartbeat_ms = Positive(w, r.heartbeat_ms(), "heartbeat_ms");
  s.worker_timeout_ms = Positive(w, r.worker_timeout_ms(), "worker_timeout_ms");
  s.request_timeout_ms = Positive(w, r.request_timeout_ms(), "request_timeout_ms");
  s.join_timeout_ms = Positive(w, r.join_timeout_ms(), "join_timeout_ms");
  if (r.detail_episodes() < 0) w.Fail({{"runtime"}, {"detail_episodes"}}, "detail_episodes must be 0 (none) or more");
  s.detail_episodes = r.detail_episodes();
  if (s.worker_timeout_ms <= s.heartbeat_ms) {
    w.Fail({{"runtime"}, {"worker_timeout_ms"}},
           "worker_timeout_ms must exceed heartbeat_ms (" + std::to_string(s.heartbeat_ms) + ")");
  }
  s.continue_on_loss = r.on_worker_loss() == config::CONTINUE;
  s.keys_dir = r.keys_dir();

  if (!c.proto.trainer().has_hybrid()) return;
  config::HybridSpec& h = *c.proto.mutable_trainer()->mutable_hybrid();  // with its defaults
  if (!c.rollout.game)
    w.Fail({{"trainer"}, {"hybrid"}}, "trainer.hybrid trains the messages of a game; this workflow has none");
  if (w.proto.channel_size() == 0) {
    w.Fail({{"trainer"}, {"hybrid"}}, "trainer.hybrid needs channels between the roles that message each other");
  }
  c.hybrid_mode = w.proto.channel(0).mode();
  for (int i = 1; i < w.proto.channel_size(); ++i) {
    if (w.proto.channel(i).mode() != c.hybrid_mode) {
      w.Fail({{"channel", i}, {"mode"}}, "with trainer.hybrid every channel has the same mode (channel 0 is " +
                                             config::ChannelMode_Name(c.hybrid_mode) + ")");
    }
  }
  // The warm-up's default depends on stage 1's length: half of it.
  if (!h.has_distill_warmup_steps()) h.set_distill_warmup_steps(h.stage1_steps() / 2);
  for (const auto& [value, field] :
       {std::make_pair(h.latent_vectors(), "latent_vectors"), std::make_pair(h.text_words(), "text_words"),
        std::make_pair(h.stage1_steps() + 1, "stage1_steps"), std::make_pair(h.stage2_steps() + 1, "stage2_steps"),
        std::make_pair(h.batch(), "batch"), std::make_pair(h.eval_every(), "eval_every")}) {
    if (value <= 0) w.Fail({{"trainer"}, {"hybrid"}, {field}}, std::string(field) + " must be positive");
  }
  if (!StrategyFactory::Get().Has(h.teacher())) {
    w.Fail({{"trainer"}, {"hybrid"}, {"teacher"}}, "teacher '" + h.teacher() + "' is not a scripted strategy");
  }
  for (const auto& r : c.rollout.roles) {
    if (!r.trained())
      w.Fail({{"trainer"}, {"hybrid"}}, "with trainer.hybrid every role runs on a model; '" + r.name + "' is scripted");
  }
  if (h.differentiable() && c.hybrid_mode == config::TEXT) {
    w.Fail({{"trainer"}, {"hybrid"}, {"differentiable"}}, "differentiable needs LATENT or HYBRID channels");
  }
  if (c.rollout.game->MessagePhases().empty()) {
    w.Fail({{"trainer"}, {"hybrid"}},
           "trainer.hybrid trains the messages of a game; game '" + c.rollout.game->Name() + "' has no message phase");
  }
  // Senders write what the distillation teaches: K vectors (and for HYBRID the first words).
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    if (ch.mode() == config::TEXT) continue;
    RoleInfo& from = c.rollout.roles[c.RoleIndex(ch.from())];
    from.message_mode = ch.mode();
    from.latent_vectors = h.latent_vectors();
    from.text_words = ch.mode() == config::HYBRID ? h.text_words() : 0;
    const int reader = c.rollout.roles[c.RoleIndex(ch.to())].model;
    if (h.differentiable() && reader != from.model) {
      // The gradient would have to cross from one model worker to another.
      w.Fail({{"channel", i}}, "differentiable latents need the sender and the reader on one model; channel " +
                                   std::to_string(i) + " joins models '" + c.models[from.model].name + "' and '" +
                                   c.models[reader].name + "'");
    }
  }
}

}  // namespace troupe
