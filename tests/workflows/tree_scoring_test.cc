// Scoring a conversation's calls as prefix trees (each shared prefix encoded
// once) against scoring every call on its own: the same log-probabilities,
// losses, gradients and updated parameters, for every architecture, with and
// without per-role adapters, with GRPO and PPO's value head, a KL reference,
// minibatch splits and guided first tokens; and on real Red-Black
// conversations, plain and with hybrid messages (calls that read or send
// vectors keep their own scoring beside the trees).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "core/models/model_pool_impl.h"
#include "core/models/prefix_tree_pack.h"
#include "core/models/trainer.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "tests/test_support.h"
#include "tests/workflows/direct_policy.h"

using namespace troupe;

namespace {

struct Architecture {
  const char* name;
  const char* sizes;
  const char* lora_b;
};
const Architecture kTransformer{"transformer", "transformer { d_model: 16 heads: 2 layers: 2 max_len: 64 }",
                                "blocks.0.fc1.lora_b"};
const Architecture kLlama{"llama",
                          "llama { hidden_size: 16 heads: 2 kv_heads: 1 layers: 2 intermediate_size: 32 max_len: 64 }",
                          "model.layers.0.mlp.lora_up.b"};
const Architecture kGpt2{"gpt2", "gpt2 { hidden_size: 16 heads: 2 layers: 2 max_len: 64 }",
                         "transformer.h.0.mlp.lora_fc.b"};

CompiledWorkflow Compile(const Architecture& a, bool adapters) {
  const std::string adapter = adapters ? " adapter: LORA" : "";
  const std::string text = std::string(R"(name: "s"
game { name: "red_black" param { name: "team_size" int: 2 } param { name: "rounds" int: 2 } }
model { name: "m" )") + a.sizes + " lora_rank: 2 }\n" +
                           "role { name: \"a0\" seats: \"a0\" model: \"m\"" + adapter + " }\n" +
                           "role { name: \"a1\" seats: \"a1\" model: \"m\"" + adapter + " }\n" +
                           R"(role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";
  return CompileWorkflow(ParseWorkflowText(text, "s.textproto"));
}

// Random conversations: each call's prompt is the call before it, prompt and
// response, and what it observed since; some calls are answered twice (a
// GRPO group's answers to one prompt), some first tokens guided.
std::vector<CallRecord> Conversations(int64_t vocab, int conversations, int calls, uint32_t seed) {
  std::mt19937 g(seed);
  auto token = [&] { return static_cast<int>(4 + g() % static_cast<uint32_t>(vocab - 4)); };
  auto tokens = [&](int lo, int hi) {
    std::vector<int> t(static_cast<size_t>(lo + static_cast<int>(g() % static_cast<uint32_t>(hi - lo + 1))));
    for (int& x : t) x = token();
    return t;
  };
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<CallRecord> out;
  for (int c = 0; c < conversations; ++c) {
    std::vector<int> history = {1, token()};  // a role token's stand-in, then the seat's first observation
    for (int k = 0; k < calls; ++k) {
      const std::vector<int> seen = tokens(1, 4);
      history.insert(history.end(), seen.begin(), seen.end());
      const int answers = g() % 3 == 0 ? 2 : 1;
      for (int a = 0; a < answers; ++a) {
        CallRecord r;
        r.episode = c / 2;
        r.group = c / 4;
        r.seat = c;
        r.role_slot = c % 2;
        r.turn = k;
        r.prompt = history;
        r.response = tokens(1, 3);
        for (size_t i = 0; i < r.response.size(); ++i) r.logprobs.push_back(-1.f - 0.5f * std::abs(normal(g)));
        if (g() % 4 == 0) r.first_options = {r.response[0], token()};
        r.advantage = normal(g);
        r.reward = normal(g);
        out.push_back(r);
      }
      history.insert(history.end(), out.back().response.begin(), out.back().response.end());
    }
  }
  return out;
}

// The largest difference between the two pools' parameters (with `gradients`:
// their last gradients), over the elements whose gradient is not at rounding
// level. The keys' bias gets a gradient that is exactly zero in exact
// arithmetic (a softmax does not change when every score moves alike) and
// about 1e-9 in floats, in either scoring; AdamW divides it by its own size
// and steps a full learning rate in a direction that is noise.
double MaxDifference(ModelPool& x, ModelPool& y, bool gradients = false) {
  const auto px = x.impl().models[0]->named_parameters(), py = y.impl().models[0]->named_parameters();
  double most = 0;
  for (const auto& item : px) {
    const torch::Tensor& a = item.value();
    const torch::Tensor& b = py[item.key()];
    if (!a.grad().defined() || !b.grad().defined()) {
      CHECK(a.grad().defined() == b.grad().defined());
      if (!gradients) most = std::max(most, (a - b).abs().max().item<double>());
      continue;
    }
    const torch::Tensor real = a.grad().abs().gt(1e-6);
    const torch::Tensor d = gradients ? (a.grad() - b.grad()).abs() : (a - b).abs().masked_fill(real.logical_not(), 0);
    most = std::max(most, d.max().item<double>());
  }
  return most;
}

// An update's settings with every loss term on: several minibatches of 9 calls, each with a few calls of
// several conversations, two epochs, a KL reference.
TrainerConfig SmallUpdate(Estimator estimator) {
  TrainerConfig c;
  c.estimator = estimator;
  c.epochs = 2;
  c.minibatch = 9;
  c.clip = 0.2;
  c.entropy_coef = 0.01;
  c.kl_coef = 0.1;
  c.value_coef = 0.5;
  c.temperature = 1.0;
  c.gamma = 1.0;
  c.lambda = 0.95;
  return c;
}

// Two updates' statistics agree (to float32's rounding).
void CheckSameStats(const ModelTrainStats& s0, const ModelTrainStats& s1) {
  CHECK(s1.steps == s0.steps);
  CHECK(s1.loss == Approx(s0.loss).margin(1e-5));
  CHECK(s1.policy_loss == Approx(s0.policy_loss).margin(1e-5));
  CHECK(s1.value_loss == Approx(s0.value_loss).margin(1e-5));
  CHECK(s1.entropy == Approx(s0.entropy).margin(1e-5));
  CHECK(s1.kl == Approx(s0.kl).margin(1e-5));
  CHECK(s1.clip_fraction == Approx(s0.clip_fraction).margin(1e-5));
  // A norm over every parameter's gradient sums their rounding differences
  // (each gradient is held to 1e-5 apart): 1e-5 of the norm itself is within
  // float32's noise after an update (1.2e-5 for Llama's second PPO update).
  CHECK(s1.grad_norm == Approx(s0.grad_norm).epsilon(3e-5).margin(1e-6));
}

}  // namespace

TEST_CASE("sequences that share prefixes are packed into rows of prefix trees, each prefix once", "[models][trees]") {
  const std::vector<std::vector<int>> seqs = {{5, 6, 7}, {5, 6, 7, 8, 9}, {5, 6, 10}, {5, 6, 7}, {5, 6, 7}, {11}};
  const std::vector<int> slots = {0, 0, 0, 0, 1, 0};
  const PrefixTreeRows t = PackPrefixTrees(seqs, slots, 100);
  REQUIRE(t.rows.size() == 2);  // one row per slot within the budget
  // Slot 0: 5 6 7 8 9, then 10 under 6, then 11 as a second root; slot 1 alone.
  CHECK(t.rows[0].tokens == std::vector<int>{5, 6, 7, 8, 9, 10, 11});
  CHECK(t.rows[0].parent == std::vector<int>{-1, 0, 1, 2, 3, 1, -1});
  CHECK(t.rows[0].depth == std::vector<int>{0, 1, 2, 3, 4, 2, 0});
  CHECK(t.rows[1].tokens == std::vector<int>{5, 6, 7});
  CHECK(t.node_of[0] == std::vector<int>{0, 1, 2});
  CHECK(t.node_of[3] == t.node_of[0]);  // an identical sequence is the same nodes
  CHECK(t.node_of[2] == std::vector<int>{0, 1, 5});
  CHECK(t.row_of == std::vector<int>{0, 0, 0, 0, 1, 0});
  CHECK(t.nodes == 10);
  // A budget below the slot's nodes opens a new row, which repeats the prefix it needs.
  const PrefixTreeRows small = PackPrefixTrees(seqs, slots, 5);
  REQUIRE(small.rows.size() == 3);
  CHECK(small.rows[0].tokens == std::vector<int>{5, 6, 7, 8, 9});
  CHECK(small.rows[1].tokens == std::vector<int>{5, 6, 10, 11});
  CHECK(small.node_of[5] == std::vector<int>{3});
  CHECK(small.longest == 5);
  CHECK_THROWS(PackPrefixTrees(seqs, {0}, 5));
  // A tree cut off by a full row fills an earlier row's gap: 3 rows in order, 2 packed.
  const PrefixTreeRows packed = PackPrefixTrees({{1, 2, 3, 4}, {5, 6, 7, 8, 9}, {10}}, {0, 0, 0}, 5);
  REQUIRE(packed.rows.size() == 2);
  CHECK(packed.rows[0].tokens == std::vector<int>{5, 6, 7, 8, 9});
  CHECK(packed.rows[1].tokens == std::vector<int>{1, 2, 3, 4, 10});
  CHECK(packed.rows[1].parent == std::vector<int>{-1, 0, 1, 2, -1});
  CHECK(packed.row_of == std::vector<int>{1, 0, 1});
  CHECK(packed.node_of[2] == std::vector<int>{4});
  CHECK(packed.node_of[0] == std::vector<int>{0, 1, 2, 3});
  CHECK(packed.nodes == 10);
}

TEST_CASE("scoring calls as prefix trees gives per-call scoring's log-probs, losses, gradients and updates",
          "[models][score][trees]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  const bool adapters = GENERATE(false, true);
  const Estimator estimator = GENERATE(Estimator::kGrpo, Estimator::kPpo);
  INFO(a.name << (adapters ? " with adapters" : "") << (estimator == Estimator::kPpo ? " ppo" : " grpo"));
  const CompiledWorkflow w = Compile(a, adapters);
  ModelPool per_call(w.models, 3), trees(w.models, 3);  // same seed: the same parameters
  if (adapters) {  // LoRA's B starts at zero; give role 1's adapter weight so the roles differ
    torch::NoGradGuard no_grad;
    for (ModelPool* pool : {&per_call, &trees}) {
      for (auto& item : pool->impl().models[0]->named_parameters()) {
        if (item.key() == a.lora_b) item.value()[1].fill_(0.3);
      }
    }
  }
  TrainerConfig c = SmallUpdate(estimator);
  TrainerConfig tc = c;
  c.tree_row_budget = 0;
  tc.tree_row_budget = 48;  // small rows: conversations split across rows too
  Trainer plain_trainer(per_call, c, 11), tree_trainer(trees, tc, 11);
  const std::vector<CallRecord> records = Conversations(per_call.config(0).vocab_size, 6, 5, 17);

  const auto lp_plain = plain_trainer.ResponseLogProbs(records), lp_tree = tree_trainer.ResponseLogProbs(records);
  REQUIRE(lp_plain.size() == lp_tree.size());
  for (size_t i = 0; i < records.size(); ++i) {
    REQUIRE(lp_plain[i].size() == lp_tree[i].size());
    for (size_t k = 0; k < lp_plain[i].size(); ++k) CHECK(lp_tree[i][k] == Approx(lp_plain[i][k]).margin(1e-5));
  }

  for (int update = 0; update < 2; ++update) {
    INFO("update " << update);
    const ModelTrainStats s0 = plain_trainer.Update(records)[0], s1 = tree_trainer.Update(records)[0];
    CheckSameStats(s0, s1);
    CHECK(s1.positions < s0.positions);  // the point of it
    CHECK(MaxDifference(per_call, trees, /*gradients=*/true) < 1e-5);
    CHECK(MaxDifference(per_call, trees) < 1e-5);
  }
  // A supervised warm start scores the same way.
  const ModelTrainStats w0 = plain_trainer.Supervised(records, 3)[0], w1 = tree_trainer.Supervised(records, 3)[0];
  CHECK(w1.loss == Approx(w0.loss).margin(1e-5));
  CHECK(w1.positions < w0.positions);
  CHECK(MaxDifference(per_call, trees) < 1e-5);
}


TEST_CASE("a minibatch scored in passes updates the model as one pass does", "[models][score][passes]") {
  const Architecture a = GENERATE(kTransformer, kLlama);
  const Estimator estimator = GENERATE(Estimator::kGrpo, Estimator::kPpo);
  INFO(a.name << (estimator == Estimator::kPpo ? " ppo" : " grpo"));
  const CompiledWorkflow w = Compile(a, false);
  ModelPool whole(w.models, 3), in_passes(w.models, 3);  // same seed: the same parameters
  TrainerConfig c = SmallUpdate(estimator);
  c.tree_row_budget = 48;
  TrainerConfig p = c;
  c.pass_positions = 0;  // each minibatch in one pass
  p.pass_positions = 1;  // each call in a pass of its own: no two share a prefix tree
  Trainer whole_trainer(whole, c, 11), pass_trainer(in_passes, p, 11);
  const std::vector<CallRecord> records = Conversations(whole.config(0).vocab_size, 6, 5, 17);
  for (int update = 0; update < 2; ++update) {
    INFO("update " << update);
    const ModelTrainStats s0 = whole_trainer.Update(records)[0], s1 = pass_trainer.Update(records)[0];
    CheckSameStats(s0, s1);
    CHECK(s1.tokens == s0.tokens);
    CHECK(s1.positions > s0.positions);  // passes of one call each share no prefix: they did run apart
    CHECK(MaxDifference(whole, in_passes, /*gradients=*/true) < 1e-5);
    CHECK(MaxDifference(whole, in_passes) < 1e-5);
  }
  // A supervised warm start accumulates over its passes too.
  const ModelTrainStats w0 = whole_trainer.Supervised(records, 3)[0], w1 = pass_trainer.Supervised(records, 3)[0];
  CHECK(w1.loss == Approx(w0.loss).margin(1e-5));
  CHECK(w1.positions > w0.positions);
  CHECK(MaxDifference(whole, in_passes) < 1e-5);
}

TEST_CASE("real Red-Black conversations, with and without latent messages, score as prefix trees as call by call",
          "[models][score][trees]") {
  const std::string channel = GENERATE(std::string(""), std::string("channel { from: \"a\" to: \"a\" mode: HYBRID latent_vectors: 2 }"));
  INFO(channel);
  const CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(
      testing::TinyRedBlack(5, channel + "\ntrainer { episodes_per_iteration: 8 minibatch: 40 epochs: 2 kl_coef: 0.1 }"),
      "tiny.textproto"));
  testing::DirectPolicy policy(w);
  std::vector<CallRecord> records = testing::DirectRollout(w, policy, 8, 4).records;
  std::mt19937 g(3);
  std::normal_distribution<double> normal(0, 1);
  int with_vectors = 0;
  for (CallRecord& r : records) {
    r.advantage = normal(g);
    with_vectors += r.latent_steps > 0 || !r.soft_inputs.empty();
  }
  CHECK((with_vectors > 0) == !channel.empty());
  ModelPool per_call(w.models, 3), trees(w.models, 3);
  TrainerConfig c = w.trainer, tc = w.trainer;
  c.tree_row_budget = 0;
  tc.tree_row_budget = 64;
  Trainer plain_trainer(per_call, c, 4), tree_trainer(trees, tc, 4);
  for (int update = 0; update < 2; ++update) {
    const ModelTrainStats s0 = plain_trainer.Update(records)[0], s1 = tree_trainer.Update(records)[0];
    CHECK(s1.loss == Approx(s0.loss).margin(1e-5));
    CHECK(s1.kl == Approx(s0.kl).margin(1e-5));
    // A norm over every parameter's gradient sums their rounding differences
    // (each gradient is held to 1e-5 below): 1e-5 of the norm itself is within
    // float32's noise after an update (1.2e-5 for Llama's second PPO update).
    CHECK(s1.grad_norm == Approx(s0.grad_norm).epsilon(3e-5).margin(1e-6));
    // A hybrid team's every call here reads or sends vectors: scored call by call either way.
    if (channel.empty()) CHECK(s1.positions < s0.positions);
    else CHECK(s1.positions == s0.positions);
    CHECK(MaxDifference(per_call, trees, /*gradients=*/true) < 1e-5);
    CHECK(MaxDifference(per_call, trees) < 1e-5);
  }
}

TEST_CASE("calls whose prefix trees would encode more positions keep their own layout, with the same numbers",
          "[models][score][trees]") {
  // Four calls of one prompt, each with its own response: the prompt runs once
  // for all four in the calls' own layout (40 + 4 x 10 positions), while rows of
  // 48 hold one call each (4 x 50). The update must not take the trees then.
  const CompiledWorkflow w = Compile(kTransformer, false);
  ModelPool per_call(w.models, 3), trees(w.models, 3);
  std::mt19937 g(5);
  const int64_t vocab = per_call.config(0).vocab_size;
  auto token = [&] { return static_cast<int>(4 + g() % static_cast<uint32_t>(vocab - 4)); };
  std::vector<int> prompt(40);
  for (int& t : prompt) t = token();
  std::vector<CallRecord> records;
  for (int c = 0; c < 4; ++c) {
    CallRecord r;
    r.episode = c, r.group = 0, r.seat = c;
    r.prompt = prompt;
    for (int k = 0; k < 10; ++k) r.response.push_back(token()), r.logprobs.push_back(-2.f);
    r.advantage = c % 2 == 0 ? 1.f : -1.f;
    records.push_back(r);
  }
  TrainerConfig c;
  c.estimator = Estimator::kGrpo;
  c.epochs = 1;
  c.minibatch = 4;
  c.clip = 0.2;
  c.temperature = 1.0;
  TrainerConfig tc = c;
  c.tree_row_budget = 0;
  tc.tree_row_budget = 48;
  Trainer plain_trainer(per_call, c, 11), tree_trainer(trees, tc, 11);
  const ModelTrainStats s0 = plain_trainer.Update(records)[0], s1 = tree_trainer.Update(records)[0];
  CHECK(s0.positions == 40 + 4 * 10);
  CHECK(s1.positions == s0.positions);
  CHECK(s1.loss == Approx(s0.loss).margin(1e-5));
  CHECK(MaxDifference(per_call, trees) < 1e-5);
}
