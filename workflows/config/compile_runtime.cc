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

int PositiveOr(const LoadedWorkflow& w, int value, int fallback, const char* field) {
  if (value < 0) w.Fail({{"runtime"}, {field}}, std::string(field) + " must be positive");
  return value > 0 ? value : fallback;
}

}  // namespace

void CompileRuntime(const LoadedWorkflow& w, CompiledWorkflow& c) {
  const config::RuntimeSpec& r = w.proto.runtime();
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
      if (other.model == p.model) w.Fail({{"runtime"}, {"worker", i}, {"model"}}, "model '" + spec.model() + "' has two worker entries");
    }
    if (spec.replicas() < 0) w.Fail({{"runtime"}, {"worker", i}, {"replicas"}}, "replicas must be positive");
    p.replicas = spec.replicas() > 0 ? spec.replicas() : 1;
    s.external.push_back(p);
  }
  if (!s.external.empty() && (s.endpoint.empty() || s.endpoint.rfind("inproc://", 0) == 0)) {
    w.Fail({{"runtime"}, {"endpoint"}}, "external workers need a tcp:// or ipc:// endpoint to connect to");
  }
  s.heartbeat_ms = PositiveOr(w, r.heartbeat_ms(), 200, "heartbeat_ms");
  s.worker_timeout_ms = PositiveOr(w, r.worker_timeout_ms(), 3000, "worker_timeout_ms");
  s.request_timeout_ms = PositiveOr(w, r.request_timeout_ms(), 600000, "request_timeout_ms");
  s.join_timeout_ms = PositiveOr(w, r.join_timeout_ms(), 60000, "join_timeout_ms");
  s.detail_episodes = r.detail_episodes() > 0 ? r.detail_episodes() : (r.detail_episodes() < 0 ? 0 : 2);
  if (s.worker_timeout_ms <= s.heartbeat_ms) {
    w.Fail({{"runtime"}, {"worker_timeout_ms"}}, "worker_timeout_ms must exceed heartbeat_ms (" +
                                                     std::to_string(s.heartbeat_ms) + ")");
  }
  s.continue_on_loss = r.on_worker_loss() == config::CONTINUE;
  s.keys_dir = r.keys_dir();

  if (!w.proto.trainer().has_hybrid()) return;
  const config::HybridSpec& h = w.proto.trainer().hybrid();
  HybridRunSettings& hs = c.hybrid;
  hs.enabled = true;
  if (!c.game) w.Fail({{"trainer"}, {"hybrid"}}, "trainer.hybrid trains the messages of a game; this workflow has none");
  if (w.proto.channel_size() == 0) {
    w.Fail({{"trainer"}, {"hybrid"}}, "trainer.hybrid needs channels between the roles that message each other");
  }
  hs.mode = w.proto.channel(0).mode();
  for (int i = 1; i < w.proto.channel_size(); ++i) {
    if (w.proto.channel(i).mode() != hs.mode) {
      w.Fail({{"channel", i}, {"mode"}}, "with trainer.hybrid every channel has the same mode (channel 0 is " +
                                             config::ChannelMode_Name(hs.mode) + ")");
    }
  }
  hs.latent_vectors = h.latent_vectors() > 0 ? h.latent_vectors() : kDefaultLatentVectors;
  hs.text_words = h.text_words() > 0 ? h.text_words() : kDefaultTextWords;
  hs.stage1_steps = h.stage1_steps() > 0 ? h.stage1_steps() : 200;
  hs.stage2_steps = h.stage2_steps() > 0 ? h.stage2_steps() : 400;
  hs.batch = h.batch() > 0 ? h.batch() : 64;
  hs.differentiable = h.differentiable();
  hs.distill_weight = h.distill_weight() > 0 ? h.distill_weight() : 20.0;
  hs.teacher = h.teacher().empty() ? "oracle" : h.teacher();
  hs.eval_every = h.eval_every() > 0 ? h.eval_every() : 50;
  hs.distill_warmup_steps = h.distill_warmup_steps() > 0 ? h.distill_warmup_steps() : hs.stage1_steps / 2;
  if (!StrategyFactory::Get().Has(hs.teacher)) {
    w.Fail({{"trainer"}, {"hybrid"}, {"teacher"}}, "teacher '" + hs.teacher + "' is not a scripted strategy");
  }
  for (const auto& r : c.roles) {
    if (!r.trained()) w.Fail({{"trainer"}, {"hybrid"}}, "with trainer.hybrid every role runs on a model; '" + r.name + "' is scripted");
  }
  if (hs.differentiable && hs.mode == config::TEXT) {
    w.Fail({{"trainer"}, {"hybrid"}, {"differentiable"}}, "differentiable needs LATENT or HYBRID channels");
  }
}

}  // namespace troupe
