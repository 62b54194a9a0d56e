// Models and sharing modes: which parameters each mode shares, which gradients
// reach which parameters, and that KV-cached batched generation agrees with
// teacher-forced scoring.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>

#include "core/models/gae.h"
#include "core/models/model_pool_impl.h"
#include "core/models/torch_compat.h"
#include "core/models/trainer.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

using namespace troupe;

namespace {

CompiledWorkflow Compile(const std::string& models, const std::string& roles) {
  const std::string text = R"(name: "s"
game { name: "red_black" param { name: "team_size" int: 2 } param { name: "rounds" int: 2 } }
)" + models + roles + R"(role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";
  return CompileWorkflow(ParseWorkflowText(text, "s.textproto"));
}

const char* kOneModel = "model { name: \"m\" transformer { d_model: 16 heads: 2 layers: 1 } lora_rank: 2 }\n";

// Each architecture's tiny model and the names of the parameters the sharing
// tests look at: a trunk weight, the token embedding, a LoRA adapter's B.
struct Architecture {
  const char* name;
  const char* sizes;  // the model's architecture block
  const char* trunk;
  const char* embedding;
  const char* lora_b;
};
const Architecture kTransformer{"transformer", "transformer { d_model: 16 heads: 2 layers: 1 }",
                                "blocks.0.qkv.base.weight", "tok_emb.weight", "blocks.0.fc1.lora_b"};
const Architecture kLlama{"llama", "llama { hidden_size: 16 heads: 2 kv_heads: 1 layers: 1 intermediate_size: 32 }",
                          "model.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight",
                          "model.layers.0.mlp.lora_up.b"};
const Architecture kGpt2{"gpt2", "gpt2 { hidden_size: 16 heads: 2 layers: 1 }", "transformer.h.0.attn.c_attn.weight",
                         "transformer.wte.weight", "transformer.h.0.mlp.lora_fc.b"};

std::string OneModel(const Architecture& a) {
  return std::string("model { name: \"m\" ") + a.sizes + " lora_rank: 2 }\n";
}
std::string TwoModels(const Architecture& a) {
  return std::string("model { name: \"m0\" ") + a.sizes + " }\nmodel { name: \"m1\" " + a.sizes + " }\n";
}

// Backpropagates a loss computed from rows of role slot `slot` only on model `m`.
void BackwardFromRole(ModelPool& pool, int m, int slot) {
  auto& model = pool.impl().models[m];
  model->zero_grad();
  auto tokens = torch::randint(4, pool.config(m).vocab_size, {3, 6}, torch::kLong);
  auto positions = torch::arange(6, torch::kLong).repeat({3, 1});
  auto valid = torch::ones({3, 6}, torch::kBool);
  auto role = torch::full({3}, slot, torch::kLong);
  LMOutput o = model->forward(tokens, positions, valid, role);
  (o.logits.pow(2).sum() + o.values.sum()).backward();
}

double GradNorm(const torch::Tensor& p) { return p.grad().defined() ? p.grad().abs().sum().item<double>() : 0.0; }

torch::Tensor Param(ModelPool& pool, int m, const std::string& name) {
  for (const auto& item : pool.impl().models[m]->named_parameters()) {
    if (item.key() == name) return item.value();
  }
  FAIL("no parameter " << name);
  return {};
}

}  // namespace

TEST_CASE("full sharing puts every role on one model, told apart by role embeddings", "[models][sharing]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w =
      Compile(OneModel(a),
              "role { name: \"a0\" seats: \"a0\" model: \"m\" }\nrole { name: \"a1\" seats: \"a1\" model: \"m\" }\n");
  CHECK(w.models.size() == 1);
  CHECK(w.rollout.roles[0].slot == 0);
  CHECK(w.rollout.roles[1].slot == 1);
  CHECK_THAT(w.sharing[0], Catch::StartsWith("shared"));
  ModelPool pool(w.models, 1);
  BackwardFromRole(pool, 0, 0);
  auto role_emb = Param(pool, 0, "role_emb.weight");
  CHECK(role_emb.grad()[0].abs().sum().item<double>() > 0);
  CHECK(role_emb.grad()[1].abs().sum().item<double>() == 0);
  CHECK(GradNorm(Param(pool, 0, a.trunk)) > 0);  // the trunk is shared
}

TEST_CASE("full separation gives each role its own model and gradients", "[models][sharing]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w =
      Compile(TwoModels(a),
              "role { name: \"a0\" seats: \"a0\" model: \"m0\" }\nrole { name: \"a1\" seats: \"a1\" model: \"m1\" }\n");
  CHECK(w.models.size() == 2);
  CHECK(w.sharing[0] == "separate");
  ModelPool pool(w.models, 1);
  BackwardFromRole(pool, 0, 0);
  CHECK(GradNorm(Param(pool, 0, a.trunk)) > 0);
  CHECK(GradNorm(Param(pool, 1, a.trunk)) == 0);
  // Different parameters from the start: separate initialisation.
  CHECK_FALSE(torch::equal(Param(pool, 0, a.embedding), Param(pool, 1, a.embedding)));
}

TEST_CASE("partial sharing trains the shared trunk and only the acting role's LoRA adapter", "[models][sharing]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w = Compile(OneModel(a),
                   "role { name: \"a0\" seats: \"a0\" model: \"m\" adapter: LORA }\n"
                   "role { name: \"a1\" seats: \"a1\" model: \"m\" adapter: LORA }\n");
  CHECK_THAT(w.sharing[0], Catch::StartsWith("partial (shared trunk, per-role LoRA r=2"));
  ModelPool pool(w.models, 1);
  auto lora_b = Param(pool, 0, a.lora_b);
  CHECK(lora_b.size(0) == 2);  // one adapter per role
  CHECK(lora_b.size(1) == 2);  // rank
  BackwardFromRole(pool, 0, 1);
  CHECK(GradNorm(Param(pool, 0, a.trunk)) > 0);
  CHECK(lora_b.grad()[1].abs().sum().item<double>() > 0);
  CHECK(lora_b.grad()[0].abs().sum().item<double>() == 0);
}

TEST_CASE("partial sharing with per-role heads keeps one head per role", "[models][sharing]") {
  auto w = Compile(kOneModel,
                   "role { name: \"a0\" seats: \"a0\" model: \"m\" adapter: HEAD }\n"
                   "role { name: \"a1\" seats: \"a1\" model: \"m\" adapter: HEAD }\n");
  ModelPool pool(w.models, 1);
  BackwardFromRole(pool, 0, 0);
  auto heads = Param(pool, 0, "role_lm_w");
  CHECK(heads.grad()[0].abs().sum().item<double>() > 0);
  CHECK(heads.grad()[1].abs().sum().item<double>() == 0);
}

TEST_CASE("batched KV-cached generation agrees with teacher-forced scoring", "[models][generate]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w = Compile(OneModel(a), "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3);
  const std::vector<int> p1 = {1, 4, 9, 10, 11, 12, 13}, p2 = {1, 4, 20}, p3 = {1, 4, 30, 31, 32};
  // The fourth query repeats the first: encoded once, sampled separately.
  std::vector<GenerateQuery> q = {{0, &p1, 4}, {0, &p2, 4}, {0, &p3, 2}, {0, &p1, 4}};
  Rng rng(9);
  auto gens = pool.Generate(0, q, rng, 1.0, false);
  REQUIRE(gens.size() == 4);
  CHECK(gens[2].tokens.size() <= 2);
  const int64_t calls = pool.forward_calls(0);
  CHECK(calls <= 4);  // one forward per decoding step for the whole batch

  auto& model = pool.impl().models[0];
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < q.size(); ++i) {
    std::vector<int64_t> seq(q[i].prompt->begin(), q[i].prompt->end());
    seq.insert(seq.end(), gens[i].tokens.begin(), gens[i].tokens.end());
    const int64_t T = static_cast<int64_t>(seq.size());
    auto tokens = torch::tensor(seq, torch::kLong).view({1, T});
    auto out = model->forward(tokens, torch::arange(T, torch::kLong).view({1, T}), torch::ones({1, T}, torch::kBool),
                              torch::zeros({1}, torch::kLong));
    auto logp = torch::log_softmax(out.logits, -1);
    for (size_t k = 0; k < gens[i].tokens.size(); ++k) {
      const int64_t pos = static_cast<int64_t>(q[i].prompt->size() + k) - 1;
      const float expected = logp[0][pos][gens[i].tokens[k]].item<float>();
      CHECK(gens[i].logprobs[k] == Approx(expected).margin(1e-4));
    }
  }
}

// One greedy Generate on `pool`: each query's answer and its log-probabilities.
std::vector<Generation> Greedy(ModelPool& pool, const std::vector<GenerateQuery>& q) {
  Rng rng(5);
  return pool.Generate(0, q, rng, 1.0, true);
}

// `query` answered alone on `plain` (no conversation, so no prefix reuse): checks that the answer it gave within
// a batch, `together`, has the same tokens and, token by token, the same log-probabilities; returns the answer alone.
Generation CheckSameAsAlone(ModelPool& plain, GenerateQuery query, const Generation& together) {
  query.cache_key = -1;
  Generation one = Greedy(plain, {query}).at(0);
  CHECK(together.tokens == one.tokens);
  for (size_t k = 0; k < one.logprobs.size() && k < together.logprobs.size(); ++k) {
    CHECK(together.logprobs[k] == Approx(one.logprobs[k]).margin(1e-4));
  }
  return one;
}

TEST_CASE("prefix reuse encodes only what an earlier prompt of the conversation did not, with the same answers",
          "[models][generate][prefix]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w = Compile(OneModel(a), "role { name: \"a0\" seats: \"a0\" model: \"m\" adapter: LORA }\n"
                                "role { name: \"a1\" seats: \"a1\" model: \"m\" adapter: LORA }\n");
  ModelPool cached(w.models, 3), plain(w.models, 3);  // same seed: the same parameters
  // LoRA's B starts at zero; give role 1's adapter weight so the roles' keys differ.
  {
    torch::NoGradGuard no_grad;
    for (ModelPool* pool : {&cached, &plain}) Param(*pool, 0, a.lora_b)[1].fill_(0.3);
  }
  const std::vector<int> first = {1, 4, 9, 10, 11, 12, 13, 14, 15, 16}, other = {1, 4, 20, 21, 22, 23, 24, 25};
  std::vector<int> changed(first.begin(), first.begin() + 7), longer = other;
  changed.insert(changed.end(), {30, 31, 32, 33});  // shares 7 positions with `first`
  longer.push_back(26);                             // extends `other`
  auto queries = [](const std::vector<std::pair<const std::vector<int>*, int>>& prompts, bool keyed, int slot1 = -1) {
    std::vector<GenerateQuery> q;
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerateQuery g{static_cast<int>(i) == slot1 ? 1 : 0, prompts[i].first, 1};
      g.cache_key = keyed ? prompts[i].second : -1;
      q.push_back(g);
    }
    return q;
  };
  auto agree = [](const std::vector<Generation>& x, const std::vector<Generation>& y) {
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(x[i].tokens == y[i].tokens);
      for (size_t k = 0; k < x[i].logprobs.size(); ++k) {
        CHECK(x[i].logprobs[k] == Approx(y[i].logprobs[k]).margin(1e-4));
      }
    }
  };
  // Call 1: two conversations, nothing cached yet: every position is encoded.
  agree(Greedy(cached, queries({{&first, 0}, {&other, 1}}, true)),
        Greedy(plain, queries({{&first, 0}, {&other, 1}}, false)));
  CHECK(cached.encoded_positions(0) == 18);
  // Call 2, one batch: conversation 0 goes on from 7 shared positions (4 new),
  // conversation 1 from its whole last prompt (1 new); role 1's prompt is new to
  // its role (10), and conversation 2 has no past (10).
  const auto second = std::vector<std::pair<const std::vector<int>*, int>>{
      {&changed, 0}, {&longer, 1}, {&first, 0}, {&first, 2}};
  agree(Greedy(cached, queries(second, true, 2)), Greedy(plain, queries(second, false, 2)));
  CHECK(cached.encoded_positions(0) - 18 == 4 + 1 + 10 + 10);
  CHECK(plain.encoded_positions(0) == 18 + 11 + 9 + 10 + 10);
  // Longer answers decode from the reused keys as from fresh ones.
  std::vector<GenerateQuery> three = queries({{&changed, 0}, {&longer, 1}}, true);
  std::vector<GenerateQuery> three_plain = queries({{&changed, 0}, {&longer, 1}}, false);
  for (auto* q : {&three, &three_plain})
    for (auto& g : *q) g.max_new_tokens = 3;
  agree(Greedy(cached, three), Greedy(plain, three_plain));
  // A parameter changed in place (as an optimiser step does): nothing cached is reused.
  {
    torch::NoGradGuard no_grad;
    for (ModelPool* pool : {&cached, &plain}) Param(*pool, 0, a.trunk).mul_(1.5);
  }
  const int64_t before = cached.encoded_positions(0);
  agree(Greedy(cached, queries({{&changed, 0}}, true)), Greedy(plain, queries({{&changed, 0}}, false)));
  CHECK(cached.encoded_positions(0) - before == static_cast<int64_t>(changed.size()));
}

TEST_CASE("a batch whose prompts the cache covers unevenly is encoded in groups of like length, answering the same",
          "[models][generate][prefix]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w = Compile(OneModel(a), "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool cached(w.models, 3), plain(w.models, 3);
  std::vector<int> long_prompt, other_long, short_prompt = {1, 4, 9, 10, 11};
  for (int t = 0; t < 100; ++t) long_prompt.push_back(4 + t % 20);
  for (int t = 0; t < 100; ++t) other_long.push_back(5 + t % 17);
  std::vector<int> continued = long_prompt, continued_again = long_prompt, short_continued = short_prompt;
  continued.push_back(7);
  continued_again.insert(continued_again.end(), {7, 8});
  short_continued.push_back(3);
  auto query = [](const std::vector<int>& prompt, int64_t key, int max_new = 1) {
    GenerateQuery g{0, &prompt, max_new};
    g.cache_key = key;
    return g;
  };
  // Nothing cached yet: 100 and 5 new positions, two groups (one token each: one forward pass per group).
  Greedy(cached, {query(long_prompt, 0), query(short_prompt, 1)});
  CHECK(cached.forward_calls(0) == 2);
  // Conversation 0 goes on (1 new position), conversation 2 is new (100): two groups.
  Greedy(cached, {query(continued, 0), query(other_long, 2)});
  CHECK(cached.forward_calls(0) == 4);
  CHECK(cached.encoded_positions(0) == 100 + 5 + 1 + 100);
  // Like lengths stay one group.
  Greedy(cached, {query(continued, 3), query(other_long, 4)});
  CHECK(cached.forward_calls(0) == 5);
  // Decoding on from the groups' keys and values, left-padded into one batch, answers as each prompt alone does.
  const std::vector<GenerateQuery> mixed = {query(continued_again, 0, 4), query(other_long, 5, 4),
                                            query(short_continued, 1, 4)};
  const std::vector<Generation> together = Greedy(cached, mixed);
  REQUIRE(together.size() == 3);
  for (size_t i = 0; i < mixed.size(); ++i) CheckSameAsAlone(plain, mixed[i], together[i]);
}

TEST_CASE("a batch too large for one pass of attention scores is encoded in passes that fit, answering the same",
          "[models][generate][prefix]") {
  const Architecture a = GENERATE(kTransformer, kLlama);
  INFO(a.name);
  auto w = Compile(OneModel(a), "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3), plain(w.models, 3);
  const int64_t length = 120;
  const int64_t per_pass = kEncodeScoreCellsPerPass / (length * length);  // rows one pass may hold
  const int64_t rows = per_pass + per_pass / 2;
  std::vector<std::vector<int>> prompts(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < length; ++t) prompts[r].push_back(static_cast<int>(4 + (r * 7 + t * (1 + r % 5)) % 40));
  }
  std::vector<GenerateQuery> queries;
  for (int64_t r = 0; r < rows; ++r) {
    GenerateQuery g{0, &prompts[r], 3};
    g.cache_key = r;
    queries.push_back(g);
  }
  // One token each: the forward calls are the encoding passes, two for prompts of like length.
  std::vector<GenerateQuery> first_tokens = queries;
  for (GenerateQuery& q : first_tokens) q.max_new_tokens = 1;
  ModelPool counted(w.models, 3);
  Greedy(counted, first_tokens);
  CHECK(counted.forward_calls(0) == 2);
  // Decoding on from the passes' keys and values as one batch answers as each prompt alone does.
  const std::vector<Generation> together = Greedy(pool, queries);
  REQUIRE(together.size() == static_cast<size_t>(rows));
  for (int64_t r : {int64_t{0}, per_pass - 1, per_pass, rows - 1}) CheckSameAsAlone(plain, queries[r], together[r]);
}

TEST_CASE("rows that finish early leave the batch, and the rest answer as each prompt alone", "[models][generate]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w = Compile(OneModel(a), "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3), plain(w.models, 3);
  std::vector<std::vector<int>> prompts(8);
  for (size_t r = 0; r < prompts.size(); ++r) {
    for (size_t t = 0; t < 12 + 3 * r; ++t) prompts[r].push_back(static_cast<int>(4 + (r * 5 + t * 3) % 30));
  }
  // Answers of 1 to 8 tokens: finished rows leave the batch several times over.
  std::vector<GenerateQuery> queries;
  for (size_t r = 0; r < prompts.size(); ++r) queries.push_back(GenerateQuery{0, &prompts[r], static_cast<int>(r) + 1});
  const std::vector<Generation> together = Greedy(pool, queries);
  REQUIRE(together.size() == queries.size());
  int64_t answered = 0;
  for (size_t r = 0; r < queries.size(); ++r) {
    const Generation one = CheckSameAsAlone(plain, queries[r], together[r]);
    CHECK(together[r].logprobs.size() == one.logprobs.size());
    answered += static_cast<int64_t>(one.tokens.size());
  }
  // Encoded positions: the prompts, then one per batch row per step. The rows still answering need
  // answered - 8 of them (a row's last token is not fed back); had no row left the batch, every step
  // would run all 8 rows (longest - 1 steps).
  int64_t prompt_positions = 0, longest = 0;
  for (const auto& p : prompts) prompt_positions += static_cast<int64_t>(p.size());
  for (const Generation& g : together) longest = std::max(longest, static_cast<int64_t>(g.tokens.size()));
  const int64_t decoded = pool.encoded_positions(0) - prompt_positions;
  const auto Q = static_cast<int64_t>(queries.size());
  CHECK(decoded >= answered - Q);
  CHECK(decoded < Q * (longest - 1));
}

TEST_CASE("a prefix cache too small for a batch's conversations keeps reusing some of them",
          "[models][generate][prefix]") {
  // Entries of 100 bytes under a budget of 250: two of three conversations fit.
  PrefixCache cache(250);
  auto entry = [](int round) {
    PrefixCache::Entry e;
    e.tokens.assign(static_cast<size_t>(round) + 1, 7);  // each round's prompt extends the last
    e.bytes = 100;
    return e;
  };
  // A rollout's calls: every call continues conversations 0, 1 and 2, in that order.
  std::vector<int> reused;
  for (int round = 1; round <= 4; ++round) {
    cache.BeginCall();
    int hits = 0;
    for (int64_t key = 0; key < 3; ++key) hits += cache.Find(key, 0, entry(round + 1).tokens).entry != nullptr;
    reused.push_back(hits);
    for (int64_t key = 0; key < 3; ++key) cache.Store(key, entry(round));
    CHECK(cache.bytes() <= 250);
  }
  // Least-recently-used eviction would drop each conversation just before its turn came back: none reused.
  CHECK(reused == std::vector<int>{0, 2, 2, 2});
  // A conversation the last two calls did not store to goes before the batch's own ones.
  cache.BeginCall();
  cache.Store(0, entry(5));
  cache.BeginCall();
  cache.Store(0, entry(6));
  cache.Store(2, entry(6));  // over the budget: conversation 1 is stale, and goes
  CHECK(cache.Find(0, 0, entry(7).tokens).entry != nullptr);
  CHECK(cache.Find(1, 0, entry(7).tokens).entry == nullptr);
  CHECK(cache.Find(2, 0, entry(7).tokens).entry != nullptr);
}

TEST_CASE("one conversation key keeps the prompts of a Sugarscape episode's thirty learners", "[models][prefix]") {
  PrefixCache cache(int64_t{1} << 20);
  auto prompt = [](int seat, int round) {
    std::vector<int> tokens = {1, 2, 3, 4 + seat};  // a shared opening, then the seat's own conversation
    tokens.insert(tokens.end(), static_cast<size_t>(round) + 1, 40 + seat);
    return tokens;
  };
  for (int round = 0; round < 3; ++round) {
    cache.BeginCall();
    int reused = 0;
    for (int seat = 0; seat < 30; ++seat) reused += cache.Find(7, 0, prompt(seat, round)).length > 4;
    CHECK(reused == (round == 0 ? 0 : 30));  // every learner continues its own prompt from the last call
    for (int seat = 0; seat < 30; ++seat) {
      PrefixCache::Entry e;
      e.tokens = prompt(seat, round);
      e.bytes = 100;
      cache.Store(7, e);
    }
  }
  CHECK(cache.conversations() == 1);
}

TEST_CASE("calls that share a prompt are scored as one pass over each call would score them", "[models][score]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  auto w = Compile(OneModel(a), "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3);
  TrainerConfig config;
  config.minibatch = 8;
  Trainer trainer(pool, config, 1);
  // Two prompts answered three and two times (a GRPO group's answers to one
  // question), one prompt alone; one call's first token was guided.
  const std::vector<int> p1 = {1, 4, 9, 10, 11, 12, 13}, p2 = {1, 4, 20}, p3 = {1, 5, 30, 31};
  std::vector<CallRecord> records;
  for (const auto& [prompt, response] : std::vector<std::pair<std::vector<int>, std::vector<int>>>{
           {p1, {7, 8}}, {p1, {9}}, {p1, {7, 8, 9, 10}}, {p2, {11, 12}}, {p2, {13}}, {p3, {14, 15, 16}}}) {
    CallRecord r;
    r.prompt = prompt;
    r.response = response;
    records.push_back(r);
  }
  records[4].first_options = {13, 14};
  const std::vector<std::vector<float>> together = trainer.ResponseLogProbs(records);
  auto& model = pool.impl().models[0];
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < records.size(); ++i) {
    INFO("call " << i);
    std::vector<int64_t> seq(records[i].prompt.begin(), records[i].prompt.end());
    seq.insert(seq.end(), records[i].response.begin(), records[i].response.end());
    const int64_t T = static_cast<int64_t>(seq.size());
    auto out = model->forward(torch::tensor(seq, torch::kLong).view({1, T}), torch::arange(T, torch::kLong).view({1, T}),
                              torch::ones({1, T}, torch::kBool), torch::zeros({1}, torch::kLong));
    torch::Tensor logits = out.logits[0];
    REQUIRE(together[i].size() == records[i].response.size());
    for (size_t k = 0; k < records[i].response.size(); ++k) {
      torch::Tensor row = logits[static_cast<int64_t>(records[i].prompt.size() + k) - 1];
      if (k == 0 && !records[i].first_options.empty()) {
        torch::Tensor mask = torch::full_like(row, -1e9);
        for (int t : records[i].first_options) mask[t] = 0;
        row = row + mask;
      }
      const float expected = torch::log_softmax(row, -1)[records[i].response[k]].item<float>();
      CHECK(together[i][k] == Approx(expected).margin(1e-4));
    }
  }
}

TEST_CASE("a prompt longer than max_len is a clear model error", "[models][generate]") {
  // Validation refuses a max_len that a workflow's prompts cannot fit; a model built with one anyway refuses at run
  // time.
  auto w = Compile(kOneModel, "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  std::vector<ModelConfig> models = w.models;
  models[0].spec.mutable_transformer()->set_max_len(8);
  ModelPool pool(models, 3);
  const std::vector<int> p(8, 5);
  Rng rng(1);
  CHECK_THROWS_WITH(pool.Generate(0, {{0, &p, 2}}, rng, 1.0, false), Catch::Contains("over max_len 8"));
}

TEST_CASE("correlated sampling gives identical queries one shared answer", "[models][generate]") {
  auto w = Compile(kOneModel, "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3);
  const std::vector<int> p = {1, 4, 9, 10}, other = {1, 4, 20};
  std::vector<GenerateQuery> q = {
      {0, &p, 3, nullptr, 0}, {0, &other, 3, nullptr, 0}, {0, &p, 3, nullptr, 0}, {0, &p, 3, nullptr, 0}};
  Rng rng(4);
  auto shared = pool.Generate(0, q, rng, 3.0, false, true);
  CHECK(shared[0].tokens == shared[2].tokens);
  CHECK(shared[0].tokens == shared[3].tokens);
  // Without sharing, a hot temperature makes three identical prompts disagree somewhere.
  bool differ = false;
  for (int trial = 0; trial < 5 && !differ; ++trial) {
    auto own = pool.Generate(0, q, rng, 3.0, false, false);
    differ = own[0].tokens != own[2].tokens || own[0].tokens != own[3].tokens;
  }
  CHECK(differ);
}

TEST_CASE("supervised training teaches the model to answer with a token from its prompt", "[models][learning]") {
  // Prompt: <bos> <role> k filler... q ; answer: k. Solving it needs attention back to position 2.
  // A workflow's defaults, then this task's sizes.
  const char* sizes = GENERATE("transformer { d_model: 32 heads: 4 layers: 2 ff_mult: 2 }",
                               "llama { hidden_size: 32 heads: 4 kv_heads: 2 layers: 2 intermediate_size: 64 }",
                               "gpt2 { hidden_size: 32 heads: 4 layers: 2 }");
  INFO(sizes);
  const CompiledWorkflow w = Compile(
      std::string("model { name: \"m\" ") + sizes + " optimizer { lr: 0.003 } }\n",
      "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelConfig c = w.models[0];
  c.vocab_size = 30;
  if (c.spec.has_llama()) c.spec.mutable_llama()->set_max_len(32);
  else if (c.spec.has_gpt2()) c.spec.mutable_gpt2()->set_max_len(32);
  else c.spec.mutable_transformer()->set_max_len(32);
  ModelPool pool({c}, 1);
  TrainerConfig tc = w.trainer;
  tc.minibatch = 256;
  Trainer trainer(pool, tc, 1);
  Rng rng(2);
  auto make = [&](int n) {
    std::vector<CallRecord> recs(n);
    for (auto& r : recs) {
      const int key = 10 + rng.Below(8);
      r.prompt = {1, 4, key};
      const int filler = 3 + rng.Below(10);
      for (int i = 0; i < filler; ++i) r.prompt.push_back(20 + rng.Below(8));
      r.prompt.push_back(5);
      r.response = {key};
    }
    return recs;
  };
  auto demos = make(2048);
  trainer.Supervised(demos, 150);
  auto test = make(64);
  std::vector<GenerateQuery> q;
  for (const auto& r : test) q.push_back({0, &r.prompt, 1});
  auto gens = pool.Generate(0, q, rng, 1.0, true);
  int right = 0;
  for (size_t i = 0; i < test.size(); ++i) right += gens[i].tokens[0] == test[i].response[0];
  INFO("copied " << right << " of 64");
  CHECK(right >= 56);
}

TEST_CASE("a kept head's writes, weighted by where it looks, are its share of the layer's output",
          "[models][guided]") {
  // Four heads of width 4 on two key/value heads, each serving two consecutive heads: head 2 reads the second.
  const CompiledWorkflow w = Compile(
      "model { name: \"m\" llama { hidden_size: 16 heads: 4 kv_heads: 2 layers: 1 intermediate_size: 32 } }\n",
      "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 1);
  PolicyModel& model = pool.impl().models[0];
  {
    // Only head 2 of the one layer adds to the residual stream: the other heads' columns of o_proj and
    // the MLP's output are zero.
    torch::NoGradGuard no_grad;
    Param(pool, 0, "model.layers.0.self_attn.o_proj.weight").narrow(1, 0, 8).zero_();
    Param(pool, 0, "model.layers.0.self_attn.o_proj.weight").narrow(1, 12, 4).zero_();
    Param(pool, 0, "model.layers.0.mlp.down_proj.weight").zero_();
  }
  model->keep_attention(0, 2);
  const torch::Tensor tokens = torch::randint(4, w.models[0].vocab_size, {2, 7}, torch::kLong);
  const torch::Tensor embeds = model->embed(tokens);
  const LMOutput o = model->forward_embeds(embeds, torch::arange(7, torch::kLong).repeat({2, 1}),
                                           torch::ones({2, 7}, torch::kBool), torch::zeros({2}, torch::kLong),
                                           nullptr, true);
  const torch::Tensor writes = model->kept_writes(0);
  REQUIRE(writes.sizes() == torch::IntArrayRef({2, 7, 16}));
  const torch::Tensor from_head = model->kept_attention(0).bmm(writes);
  CHECK(torch::allclose(from_head, o.layers[0] - embeds, 1e-5, 1e-5));
  // A loss on the writes trains the head's own projections, not the stream they are read from.
  const auto through =
      torch::autograd::grad({writes.sum()}, {embeds, Param(pool, 0, "model.layers.0.self_attn.v_proj.weight")}, {},
                            false, false, true);
  CHECK_FALSE(through[0].defined());
  CHECK(through[1].abs().sum().item<double>() > 0.0);
  // Asked to, it trains what the stream holds too.
  const torch::Tensor reaching = model->kept_writes(0, true);
  CHECK(torch::allclose(reaching, writes));
  const auto into = torch::autograd::grad({reaching.sum()}, {embeds}, {}, true, false, true);
  CHECK(into[0].defined());
  CHECK(into[0].abs().sum().item<double>() > 0.0);
  // Read as logits in its stream, the layer's whole output gives the model's logits (the one layer is
  // all of it), and half of it half of them: a part is read at the scale of the stream it is in.
  CHECK(torch::allclose(model->direct_logits(o.layers[0], o.layers[0]), o.logits, 1e-4, 1e-4));
  CHECK(torch::allclose(model->direct_logits(0.5 * o.layers[0], o.layers[0]), 0.5 * o.logits, 1e-4, 1e-4));
  // Another head's writes are not the same.
  model->keep_attention(0, 0);
  model->forward_embeds(embeds, torch::arange(7, torch::kLong).repeat({2, 1}), torch::ones({2, 7}, torch::kBool),
                        torch::zeros({2}, torch::kLong));
  CHECK(model->kept_writes(0).abs().max().item<double>() == 0.0);
  model->keep_attention(0, -1);
}

TEST_CASE("correlated sampling shares one answer within a share key and samples each key on its own",
          "[models][generate]") {
  auto w = Compile(kOneModel, "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3);
  const std::vector<int> p = {1, 4, 9, 10};
  // Eight queries with the same prompt, two per share key (0,0,1,1,2,2,3,3).
  std::vector<GenerateQuery> pairs;
  for (int64_t i = 0; i < 8; ++i) pairs.push_back({0, &p, 3, nullptr, i / 2});
  Rng shared_rng(4);
  auto shared = pool.Generate(0, pairs, shared_rng, 3.0, false, true);
  // The four keys decoded once each, without sharing, from the same sampling stream.
  std::vector<GenerateQuery> once;
  for (int64_t k = 0; k < 4; ++k) once.push_back({0, &p, 3, nullptr, k});
  Rng once_rng(4);
  auto alone = pool.Generate(0, once, once_rng, 3.0, false, false);
  REQUIRE(shared.size() == 8);
  for (size_t i = 0; i < 8; ++i) {
    INFO("query " << i);
    CHECK(shared[i].tokens == alone[i / 2].tokens);
    CHECK(shared[i].logprobs == alone[i / 2].logprobs);
  }
  // At temperature 3 the four independent samples are not all one answer.
  std::set<std::vector<int>> distinct;
  for (const auto& g : alone) distinct.insert(g.tokens);
  CHECK(distinct.size() > 1);
  // Every query with a key of its own: exactly what decoding without sharing gives.
  std::vector<GenerateQuery> own;
  for (int64_t i = 0; i < 8; ++i) own.push_back({0, &p, 3, nullptr, i});
  Rng own_rng(5), plain_rng(5);
  auto own_shared = pool.Generate(0, own, own_rng, 3.0, false, true);
  auto plain = pool.Generate(0, own, plain_rng, 3.0, false, false);
  for (size_t i = 0; i < 8; ++i) CHECK(own_shared[i].tokens == plain[i].tokens);
}

TEST_CASE("guided decoding samples the first token among the options and scores it consistently",
          "[models][generate]") {
  auto w = Compile(kOneModel, "role { name: \"a\" seats: \"a*\" model: \"m\" }\n");
  ModelPool pool(w.models, 3);
  const std::vector<int> p = {1, 4, 9, 10}, options = {11, 12};
  std::vector<GenerateQuery> q(16, GenerateQuery{0, &p, 2, &options});
  Rng rng(4);
  auto gens = pool.Generate(0, q, rng, 1.0, false);
  double mass = 0;
  for (const auto& g : gens) {
    CHECK((g.tokens[0] == 11 || g.tokens[0] == 12));
    mass += std::exp(g.logprobs[0]);
  }
  CHECK(mass / gens.size() > 0.3);  // renormalised over two options, not over the vocabulary
}

TEST_CASE("PPO's token-level GAE gives its exact advantages with gamma and lambda below 1", "[models][estimators]") {
  // Two calls packed in rows of 4 positions. Call 0: prompt at 0, response at 1..3, reward 1 on
  // position 3. Call 1: prompt at 0..1, response at 2, reward -1, padding at 3.
  const double g = 0.9, l = 0.8;
  torch::Tensor values = torch::tensor({0.9, 0.5, 0.2, -0.1, 0.7, 0.4, 0.3, 5.0}, torch::kDouble).view({2, 4});
  torch::Tensor rewards = torch::tensor({0.0, 0.0, 0.0, 1.0, 0.0, 0.0, -1.0, 0.0}, torch::kDouble).view({2, 4});
  torch::Tensor mask = torch::tensor({0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0}, torch::kDouble).view({2, 4});
  torch::Tensor adv = TokenGae(values, rewards, mask, g, l);
  // By hand, backwards: delta_t = r_t + g V_{t+1} - V_t, A_t = delta_t + g l A_{t+1}, V and A after the call 0.
  const double a3 = 1.0 - (-0.1);                   // 1.1
  const double a2 = (g * -0.1 - 0.2) + g * l * a3;  // -0.29 + 0.792 = 0.502
  const double a1 = (g * 0.2 - 0.5) + g * l * a2;   // -0.32 + 0.36144 = 0.04144
  const std::vector<double> expected = {0.0, a1, a2, a3, 0.0, 0.0, -1.0 - 0.3, 0.0};
  auto got = adv.contiguous();
  for (int i = 0; i < 8; ++i) {
    INFO("position " << i);
    CHECK(got.view({-1})[i].item<double>() == Approx(expected[i]).margin(1e-12));
  }
  CHECK(a1 == Approx(0.04144).margin(1e-12));
}

TEST_CASE("bf16 models compute in bfloat16 under autocast and keep float32 parameters, outputs and gradients",
          "[models][bf16]") {
  const Architecture a = GENERATE(kTransformer, kLlama, kGpt2);
  INFO(a.name);
  const std::string roles = "role { name: \"a0\" seats: \"a*\" model: \"m\" }\n";
  auto w32 = Compile(std::string("model { name: \"m\" ") + a.sizes + " }\n", roles);
  auto w16 = Compile(std::string("model { name: \"m\" ") + a.sizes + " precision: BF16 }\n", roles);
  REQUIRE(w16.models[0].bf16);
  ModelPool fp32(w32.models, 3), bf16(w16.models, 3);  // same seed: the same parameters
  auto tokens = torch::randint(4, fp32.config(0).vocab_size, {3, 7}, torch::kLong);
  auto positions = torch::arange(7, torch::kLong).repeat({3, 1});
  auto valid = torch::ones({3, 7}, torch::kBool);
  auto role = torch::zeros({3}, torch::kLong);
  std::vector<LMOutput> out;
  for (ModelPool* pool : {&fp32, &bf16}) {
    auto& model = pool->impl().models[0];
    model->zero_grad();
    out.push_back(model->forward(tokens, positions, valid, role));
    (out.back().logits.pow(2).mean() + out.back().values.mean()).backward();
    CHECK_FALSE(torch_compat::IsAutocastEnabled(c10::DeviceType::CPU));  // the guard put autocast back as it was
  }
  for (const LMOutput& o : out) {
    CHECK(o.logits.scalar_type() == torch::kFloat);
    CHECK(o.hidden.scalar_type() == torch::kFloat);
    CHECK(o.values.scalar_type() == torch::kFloat);
  }
  // Close to float32, and not the same: the products did run in bfloat16 (8 bits of mantissa).
  const double gap = (out[1].logits - out[0].logits).abs().max().item<double>();
  const double scale = out[0].logits.abs().max().item<double>();
  INFO("largest logit gap " << gap << " of " << scale);
  CHECK(gap > 0.0);
  CHECK(gap < 0.05 * scale + 1e-3);
  // Gradients reach every float32 parameter, near the float32 model's.
  auto p32 = fp32.impl().models[0]->named_parameters(), p16 = bf16.impl().models[0]->named_parameters();
  for (const auto& item : p16) {
    INFO(item.key());
    CHECK(item.value().scalar_type() == torch::kFloat);
    const torch::Tensor& g16 = item.value().grad();
    const torch::Tensor& g32 = p32[item.key()].grad();
    if (!g32.defined()) continue;
    REQUIRE(g16.defined());
    CHECK(g16.scalar_type() == torch::kFloat);
    const double norm = g32.norm().item<double>();
    CHECK((g16 - g32).norm().item<double>() <= 0.1 * norm + 1e-4);
  }
  // Generation (with the prefix cache's keys and values in bfloat16) answers as float32 does, nearly.
  const std::vector<int> prompt = {1, 4, 9, 10, 11, 12, 13};
  std::vector<GenerateQuery> q{GenerateQuery{0, &prompt, 3}};
  q[0].cache_key = 1;
  const auto g32 = Greedy(fp32, q), g16 = Greedy(bf16, q), again = Greedy(bf16, q);
  REQUIRE(g16.size() == 1);
  CHECK(g16[0].tokens.size() == g32[0].tokens.size());
  CHECK(g16[0].logprobs[0] == Approx(g32[0].logprobs[0]).margin(0.05));
  CHECK(again[0].tokens == g16[0].tokens);
}

TEST_CASE("a run's thread count holds OpenBLAS's own pool to it as well", "[models][threads]") {
  const int torch_before = at::get_num_threads(), blas_before = BlasThreads();
  if (blas_before == 0) {
    WARN("LibTorch does not run on OpenBLAS here: nothing to hold");
    return;
  }
  SetBlasThreads(2);
  SetTorchThreads(1);
  CHECK(BlasThreads() == 1);  // not the pool of one thread per core OpenBLAS starts with
  SetTorchThreads(torch_before);
  SetBlasThreads(blas_before);
}
