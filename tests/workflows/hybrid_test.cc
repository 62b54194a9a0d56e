// Hybrid latent-text messages: latents are made by the projection fed back
// through the model, read by a reader at its prompt's soft slots (through an
// adapter when widths differ); detached by default, and with `differentiable`
// the reader's loss reaches the sender. A short trainer.hybrid run from config
// learns to communicate beyond the no-communication baseline, saves its
// adapters and resumes exactly.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../test_support.h"
#include "core/checkpoint.h"
#include "core/models/hybrid_comm.h"
#include "core/models/model_pool_impl.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "tests/workflows/direct_policy.h"
#include "workflows/rollout/rollout.h"
#include "workflows/run/train_run.h"

using namespace troupe;
using troupe::testing::DirectPolicy;
namespace fs = std::filesystem;

namespace {

ModelConfig Config(const std::string& name, int d) {
  ModelConfig c;
  c.name = name;
  c.vocab_size = 20;
  config::TransformerSpec* t = c.spec.mutable_transformer();
  t->set_d_model(d);
  t->set_heads(2);
  t->set_layers(1);
  t->set_max_len(32);
  t->set_ff_mult(2);
  c.latent = true;
  c.device = "cpu";
  c.lr = 0.01;
  c.grad_clip = 1.0;
  return c;
}

torch::Tensor SenderProjection(ModelPool& pool) {
  for (const auto& p : pool.impl().models[0]->named_parameters()) {
    if (p.key().find("latent_proj") != std::string::npos) return p.value().detach().clone();
  }
  return torch::Tensor();
}

constexpr int kBot = 18, kEot = 19;

// Six LATENT messages from model 0 (width 16) read in-graph by model 1 (width 24, through its adapter).
HybridBatch InGraphBatch() {
  HybridBatch batch;
  for (int i = 0; i < 6; ++i) {
    batch.senders.push_back({0, 0, {1, 5 + i % 3, 6, 7, kBot}, {}});
    ReceiverExample x;
    x.model = 1;
    x.prompt = {1, 8, 9, kBot, Vocab::kSoft, Vocab::kSoft, Vocab::kSoft, kEot};
    x.from_senders = {i};
    x.teacher_prompt = {1, 8, 9, 5 + i % 3};
    x.answer = {10 + i % 3};
    batch.receivers.push_back(x);
  }
  return batch;
}

double ProjectionChange(bool differentiable) {
  ModelConfig receiver = Config("receiver", 24);
  receiver.latent_in_width = 16;  // its adapter for the sender's vectors
  ModelPool pool({Config("sender", 16), receiver}, 1);
  HybridCommTrainer trainer(pool);
  const torch::Tensor before = SenderProjection(pool);
  trainer.Step(InGraphBatch(), {3, differentiable, 20.0, kEot});
  return (SenderProjection(pool) - before).abs().max().item<double>();
}


CompiledWorkflow TinyHybridRedBlack(const std::string& mode) {
  return CompileWorkflow(ParseWorkflowText(
      testing::TinyRedBlack(5, "channel { from: \"a\" to: \"a\" mode: " + mode +
                                   " latent_vectors: 2 }\ntrainer { episodes_per_iteration: 4 minibatch: 512 }"),
      "tiny_hybrid.textproto"));
}

}  // namespace

TEST_CASE(
    "in Red-Black deliberation a hybrid speaker sends K vectors and its recommendation, and teammates read the vectors",
    "[hybrid][red_black]") {
  CompiledWorkflow w = TinyHybridRedBlack("HYBRID");
  DirectPolicy policy(w);
  RolloutBatch batch = testing::DirectRollout(w, policy, 4, 4);
  const int bot = w.rollout.vocab.Id("<bot>"), eot = w.rollout.vocab.Id("<eot>");
  int speakers = 0, readers = 0;
  for (const auto& r : batch.records) {
    const int slots = static_cast<int>(std::count(r.prompt.begin(), r.prompt.end(), Vocab::kSoft));
    if (r.phase == "speak") {
      ++speakers;
      REQUIRE(r.latent_steps == 2);
      CHECK(r.latents.size() == 2u * 16u);
      CHECK(r.response.size() == 1u);  // one word of text: the recommendation
      const size_t n = r.prompt.size();
      CHECK(r.prompt[n - 4] == bot);
      CHECK(r.prompt[n - 1] == eot);
      CHECK(slots == 2 + static_cast<int>(r.soft_inputs.size()) / 16);
    } else {
      CHECK(r.latent_steps == 0);
      CHECK(slots * 16 == static_cast<int>(r.soft_inputs.size()));
    }
    if (r.phase == "vote") {
      CHECK(slots == 3 * 2);  // every teammate spoke this round: 3 messages of 2 vectors
      ++readers;
    }
  }
  CHECK(speakers == 4 * 3 * 3);  // episodes x rounds x team size
  CHECK(readers == speakers);
  EpisodeSummary& e = batch.episodes[0];
  CHECK(e.metrics.at("latent_vectors") == 3 * 3 * 2);
  size_t words = 0;  // a speaker that sampled <eos> or a special token said nothing
  for (const auto& r : batch.records) {
    if (r.episode == 0 && r.phase == "speak") words += w.rollout.vocab.Decode(r.response).size();
  }
  CHECK(e.metrics.at("text_tokens") == static_cast<double>(words));
  CHECK(e.metrics.at("wire_bytes") > 3 * 3 * 2 * 16 * 4);

  // The trainer scores each call as it was sampled: the speaker's own vectors
  // recomputed, the teammates' read as data.
  const std::vector<std::vector<float>> sampled = testing::SampledLogProbs(batch.records);
  CHECK(testing::LargestLogProbGap(policy.trainer, batch.records, sampled) < 1e-4);
  // What teammates read matters: other vectors give other probabilities.
  const std::vector<std::vector<float>> scored = policy.trainer.ResponseLogProbs(batch.records);
  CHECK(testing::LargestLogProbGap(policy.trainer, testing::WithOtherVectors(batch.records), scored) > 1e-3);

  // The speaker's text loss reaches the projection that made its vectors.
  auto projection = [&] {
    for (const auto& p : policy.pool.impl().models[0]->named_parameters()) {
      if (p.key().find("latent_proj.fc1.weight") != std::string::npos) return p.value().detach().clone();
    }
    return torch::Tensor();
  };
  const torch::Tensor before = projection();
  REQUIRE(before.defined());
  std::vector<CallRecord> speeches;
  for (auto r : batch.records) {
    if (r.phase != "speak") continue;
    r.advantage = (speeches.size() % 2) ? 1.0 : -1.0;
    speeches.push_back(r);
  }
  policy.Update(speeches);
  CHECK((projection() - before).abs().max().item<double>() > 0.0);
}

TEST_CASE("latent channels in a reinforcement-learning run are refused where they cannot work", "[hybrid][config]") {
  auto compile = [](const std::string& channels) {
    CompileWorkflow(ParseWorkflowText(testing::TinyRedBlack(5, channels), "t.textproto"));
  };
  CHECK_NOTHROW(compile("channel { from: \"a\" to: \"a\" mode: LATENT }"));
  CHECK_THROWS_WITH(compile("channel { from: \"a\" to: \"b\" mode: HYBRID }"),
                    Catch::Contains("t.textproto:") && Catch::Contains("'b' does not"));
  CHECK_THROWS_WITH(compile("channel { from: \"a\" to: \"a\" mode: LATENT text_words: 2 }"),
                    Catch::Contains("text_words is for HYBRID"));
  CHECK_THROWS_WITH(
      compile("channel { from: \"a\" to: \"a\" mode: HYBRID }\nchannel { from: \"a\" to: \"a\" mode: TEXT }"),
      Catch::Contains("a message is made once"));
  // A shipped workflow with one override.
  auto shipped = [](const std::string& name, const std::string& set) {
    LoadedWorkflow l = LoadWorkflowFile(troupe::testing::SourceDir() + "/workflows/shipped/" + name);
    ApplyOverride(l, set);
    CompileWorkflow(l);
  };
  // A pipeline's latent channel must reach a prompt ({node.latents}); proposer_critic's prompts show none.
  CHECK_THROWS_WITH(shipped("proposer_critic.textproto", "channel[0].mode=HYBRID"),
                    Catch::Contains("proposer_critic.textproto:29:") && Catch::Contains("no prompt of role 'critic' shows its vectors"));
  CHECK_THROWS_WITH(shipped("split_facts_hybrid.textproto", "channel[0].latent_vectors=3"),
                    Catch::Contains("trainer.hybrid.latent_vectors"));
}

TEST_CASE("latents crossing agents are detached unless differentiable, and adapt across widths", "[hybrid]") {
  CHECK(ProjectionChange(false) == 0.0);  // the sender's projection gets no gradient from the receiver
  CHECK(ProjectionChange(true) > 0.0);    // with `differentiable` it does (through a 16 -> 24 adapter)
}

TEST_CASE("a reader's loss depends on the vectors at its prompt's soft slots, read through its adapter", "[hybrid]") {
  auto answer_ce = [](float scale) {
    ModelConfig reader = Config("reader", 24);
    reader.latent_in_width = 16;
    ModelPool pool({reader}, 3);
    HybridCommTrainer trainer(pool);
    HybridBatch batch;
    ReceiverExample x;
    x.prompt = {1, 8, kBot, Vocab::kSoft, Vocab::kSoft, kEot};
    for (int i = 0; i < 2 * 16; ++i) x.soft.push_back(scale * static_cast<float>((i % 7) - 3) / 3.0f);
    x.soft_width = 16;
    x.teacher_prompt = {1, 8, 5, 6};
    x.answer = {10, 11};
    batch.receivers.push_back(x);
    return trainer.Step(batch, {2, false, 1.0, kEot}).at("answer_ce");
  };
  CHECK(std::abs(answer_ce(1.0f) - answer_ce(-3.0f)) > 1e-4);
  CHECK(answer_ce(1.0f) == answer_ce(1.0f));  // and the same vectors give the same loss

  // Slots and vectors must agree.
  ModelPool pool({Config("m", 16)}, 3);
  HybridCommTrainer trainer(pool);
  HybridBatch bad;
  ReceiverExample x;
  x.prompt = {1, 8, kBot, Vocab::kSoft, Vocab::kSoft, kEot};
  x.soft.assign(3 * 16, 0.5f);
  x.soft_width = 16;
  x.teacher_prompt = {1, 8};
  x.answer = {10};
  bad.receivers.push_back(x);
  CHECK_THROWS_WITH(trainer.Step(bad, {2, false, 1.0, kEot}), Catch::Contains("2 soft slots but 48 values"));
}

TEST_CASE("a model worker gets the examples of its model, with in-graph readers renumbered", "[hybrid]") {
  HybridBatch batch = InGraphBatch();
  batch.senders[0].model = 1;  // sender 0 now shares model 1 with the readers
  // Readers 1-5 read senders of model 0 in-graph: a worker of model 1 cannot serve them.
  REQUIRE_THROWS_WITH(ExamplesOfModel(batch, 1, 0), Catch::Contains("not on that model"));
  batch.receivers.resize(1);  // the reader of sender 0 only
  HybridBatch one = ExamplesOfModel(batch, 1, 0);
  REQUIRE(one.senders.size() == 1);
  CHECK(one.senders[0].model == 0);
  REQUIRE(one.receivers.size() == 1);
  CHECK(one.receivers[0].from_senders == std::vector<int>{0});
  CHECK(one.receivers[0].model == 0);
  CHECK(ExamplesOfModel(batch, 0, 0).senders.size() == 5);
}

namespace {

// Two agents on models of different widths exchanging hybrid messages (a short run).
const std::string kWidths =
    testing::HybridWidths(8, "latent_vectors: 2 stage1_steps: 2 stage2_steps: 3 batch: 8 eval_every: 100");

// A hybrid run into a fresh `dir` (or resumed there), stopping at `stop_at` steps when > 0.
TrainResult TrainHybrid(const CompiledWorkflow& w, const fs::path& dir, bool resume = false, int stop_at = 0) {
  if (!resume) fs::remove_all(dir);
  TrainOptions o;
  o.out_dir = dir.string();
  o.progress = false;
  o.resume = resume;
  o.stop_at = stop_at;
  std::ostringstream out;
  TrainResult r = Train(w, o, out);
  UNSCOPED_INFO(out.str());
  return r;
}

std::vector<std::string> MetricsWithoutTime(const fs::path& dir) {
  std::vector<std::string> lines;
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("time/elapsed_s");
    lines.push_back(j.dump());
  }
  return lines;
}

}  // namespace

TEST_CASE("hybrid messages trained from config beat the no-communication baseline", "[hybrid][learning]") {
  const std::string file = troupe::testing::SourceDir() + "/workflows/shipped/split_facts_hybrid.textproto";
  LoadedWorkflow loaded = LoadWorkflowFile(file);
  // The shipped channels stay HYBRID: K vectors and one word each way.
  for (const char* s :
       {"trainer.hybrid.latent_vectors=2", "trainer.hybrid.stage1_steps=40", "trainer.hybrid.stage2_steps=120",
        "trainer.hybrid.eval_every=1000", "trainer.eval_episodes=128", "game.param[0].int=4", "game.param[2].int=1",
        "game.param[1].int=4"}) {
    ApplyOverride(loaded, s);
  }
  CompiledWorkflow w = CompileWorkflow(loaded);
  const fs::path dir = fs::temp_directory_path() / "troupe-hybrid-run";
  TrainResult r = TrainHybrid(w, dir);
  INFO(ResultTable(r));
  REQUIRE(r.before);
  REQUIRE(r.after);
  CHECK(r.before->metrics.at("accuracy") < 0.4);  // 4 values: guessing gives 0.25
  CHECK(r.after->metrics.at("accuracy") > 0.45);
  CHECK(r.after->metrics.at("text_tokens") == 2.0);     // one word each way
  CHECK(r.after->metrics.at("latent_vectors") == 4.0);  // and two vectors each way
  CHECK(fs::exists(dir / "metrics.jsonl"));
}

// kWidths with Llama-family models of the same widths.
std::string LlamaWidths() {
  std::string text = kWidths;
  for (const char* d : {"16", "24"}) {
    const std::string from = std::string("transformer { d_model: ") + d + " layers: 1 heads: 2 ff_mult: 2 max_len: 48 }";
    const std::string to = std::string("llama { hidden_size: ") + d + " layers: 1 heads: 2 kv_heads: 1 max_len: 48 }";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
  }
  return text;
}

TEST_CASE("a hybrid run between models of different widths trains and saves their adapters with the models",
          "[hybrid][adapters]") {
  const bool llama = GENERATE(false, true);
  INFO((llama ? "llama" : "transformer"));
  LoadedWorkflow loaded = ParseWorkflowText(llama ? LlamaWidths() : kWidths, "widths.textproto");
  CompiledWorkflow w = CompileWorkflow(loaded);
  // Each model reads the other's vectors through its own latent_in layer.
  CHECK(w.models[0].latent_in_width == 24);
  CHECK(w.models[1].latent_in_width == 16);
  const fs::path dir = fs::temp_directory_path() / (llama ? "troupe-hybrid-widths-llama" : "troupe-hybrid-widths");
  TrainHybrid(w, dir);
  auto adapter = [](ModelPool& pool, int m) {
    for (const auto& p : pool.impl().models[m]->named_parameters()) {
      if (p.key() == "latent_in.weight") return p.value().detach().clone();
    }
    return torch::Tensor();
  };
  ModelPool fresh(w.models, w.seed), restored(w.models, w.seed);
  const auto checkpoint = FindCheckpoint(dir.string());
  REQUIRE(checkpoint.has_value());
  restored.Load(*checkpoint);
  for (int m : {0, 1}) {
    INFO("model " << m);
    const torch::Tensor before = adapter(fresh, m), after = adapter(restored, m);
    REQUIRE(before.defined());
    REQUIRE(after.defined());
    // Trained (it moved from its initialisation) and saved with the model's parameters.
    CHECK((after - before).abs().max().item<double>() > 1e-4);
  }
}

TEST_CASE("a two-model hybrid run of different widths split by a resume equals the unsplit run", "[hybrid][resume]") {
  LoadedWorkflow loaded = ParseWorkflowText(kWidths, "widths.textproto");
  ApplyOverride(loaded, "trainer.hybrid.eval_every=2");  // lines after steps 2, 4 and 5
  CompiledWorkflow w = CompileWorkflow(loaded);
  const fs::path whole = fs::temp_directory_path() / "troupe-hybrid-whole";
  const fs::path split = fs::temp_directory_path() / "troupe-hybrid-split";
  CHECK(TrainHybrid(w, whole).iterations == 5);
  // Stop inside the evaluation window of steps 3-4, then resume from that checkpoint.
  CHECK(TrainHybrid(w, split, false, 3).iterations == 3);
  CHECK(MetricsWithoutTime(split).size() == 1);
  CHECK(TrainHybrid(w, split, true).iterations == 5);
  const std::vector<std::string> a = MetricsWithoutTime(whole), b = MetricsWithoutTime(split);
  REQUIRE(a.size() == 3);
  CHECK(a == b);
  CHECK(testing::ReadFile(whole / "eval_trained.json") == testing::ReadFile(split / "eval_trained.json"));
}
