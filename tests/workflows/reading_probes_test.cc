// The reading probes tell a model that reads its context from one that does
// not: a model that copies by construction (it predicts what followed the
// last occurrence of its current token, the rule an induction head learns)
// passes induction and copy (and gains from the evidence), a bigram model of
// real text passes none and gains nothing, and
// `troupe lm probe` reports the three scores of a real model folder.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/models/language_model.h"
#include "core/text/bpe_trainer.h"
#include "core/text/corpora.h"
#include "core/text/invented_names.h"
#include "tests/test_support.h"
#include "workflows/run/reading_probes.h"

using namespace troupe;

namespace {

// A language model whose next token is chosen by `next(context)`.
class RuleModel : public LanguageModel {
 public:
  using Rule = std::function<int(const std::vector<int>&)>;
  RuleModel(Rule next, int vocab) : next_(std::move(next)), vocab_(vocab) {}
  std::vector<float> Score(const std::vector<int>& ids) const override {
    std::vector<float> out;
    for (size_t i = 1; i < ids.size(); ++i) out.push_back(Next(ids, i) == ids[i] ? 0.0f : -20.0f);
    return out;
  }
  std::vector<int> Predict(const std::vector<int>& ids) const override {
    std::vector<int> out;
    for (size_t i = 1; i < ids.size(); ++i) out.push_back(Next(ids, i));
    return out;
  }
  std::vector<int> Generate(const std::vector<int>& prompt, int max_new, bool, double, uint64_t,
                            const std::vector<int>&) const override {
    std::vector<int> ids = prompt, out;
    for (int i = 0; i < max_new; ++i) {
      out.push_back(Next(ids, ids.size()));
      ids.push_back(out.back());
    }
    return out;
  }
  int vocab_size() const override { return vocab_; }
  int max_len() const override { return 4096; }
  int64_t parameter_count() const override { return 0; }

 private:
  int Next(const std::vector<int>& ids, size_t n) const {
    return next_(std::vector<int>(ids.begin(), ids.begin() + n));
  }
  Rule next_;
  int vocab_;
};

// What followed the earlier place whose preceding tokens match the context's
// end longest (the latest of equals; 0 when the last token never came before):
// the prefix-matching rule of an induction head.
int Induct(const std::vector<int>& context) {
  const size_t n = context.size();
  size_t best = 0, best_match = 0;
  for (size_t j = 0; j + 1 < n; ++j) {
    size_t match = 0;
    while (match <= j && context[j - match] == context[n - 1 - match]) ++match;
    if (match > 0 && match >= best_match) best = j, best_match = match;
  }
  return best_match > 0 ? context[best + 1] : 0;
}

const std::string& MobyDickText() {
  static const std::string text = [] {
    std::string t;
    for (const Document& d : ReadCorpus("moby_dick")) {
      t += d.text;
      if (t.size() > 300000) break;
    }
    return t;
  }();
  return text;
}

const Tokenizer& RealTokenizer() {
  static const Tokenizer tokenizer = [] {
    BpeTrainerOptions options;
    options.vocab_size = 1024;
    BpeTrainer trainer(options);
    trainer.Add(MobyDickText());
    return Tokenizer(trainer.Train());
  }();
  return tokenizer;
}

std::map<std::string, ProbeScore> ByName(const std::vector<ProbeScore>& probes) {
  std::map<std::string, ProbeScore> out;
  for (const ProbeScore& p : probes) out[p.name] = p;
  return out;
}

}  // namespace

TEST_CASE("a model that copies by construction passes the induction and copy probes", "[probe]") {
  const Tokenizer& tokenizer = RealTokenizer();
  const RuleModel copier(Induct, tokenizer.vocab_size());
  const auto probes = ByName(ProbeReading(copier, tokenizer));
  REQUIRE(probes.size() == 3);
  CHECK(probes.at("induction").count == 40 * 23);
  CHECK(probes.at("induction").score >= 0.95);
  CHECK(probes.at("copy").count == 60);
  for (const std::string& e : probes.at("copy").examples) UNSCOPED_INFO(e);
  CHECK(probes.at("copy").score >= 0.9);
  // Reading is what made it right: without the evidence the copier's answer scores -20 a token, not 0.
  CHECK(probes.at("induction").evidence_gain >= 19.0);
  CHECK(probes.at("copy").evidence_gain >= 15.0);
  // Copying the token after "Answer:" is not reading: the passages never say "Answer:".
  CHECK(probes.at("needle").count == 60);
  CHECK(probes.at("needle").score <= 0.1);
}

TEST_CASE("a bigram model of real text fails every reading probe", "[probe]") {
  const Tokenizer& tokenizer = RealTokenizer();
  // The commonest successor of each token in the text: fluent-looking, but blind to the prompt.
  std::map<int, std::map<int, int>> counts;
  const std::vector<int> ids = tokenizer.Encode(MobyDickText(), false);
  for (size_t i = 1; i < ids.size(); ++i) ++counts[ids[i - 1]][ids[i]];
  std::map<int, int> best;
  for (const auto& [prev, next] : counts) {
    best[prev] =
        std::max_element(next.begin(), next.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  }
  const RuleModel bigram([&](const std::vector<int>& c) { return best.count(c.back()) ? best.at(c.back()) : 0; },
                         tokenizer.vocab_size());
  for (const ProbeScore& p : ProbeReading(bigram, tokenizer)) {
    INFO(p.name << " " << p.score);
    CHECK(p.score <= 0.05);
    CHECK(p.count > 0);
    // Blind to all but the last token, it gains nothing from what the prompt says earlier.
    CHECK(std::abs(p.evidence_gain) < 1e-9);
  }
}

TEST_CASE("the probes' items are fixed by their seed and the names are invented", "[probe]") {
  CHECK(InventedName(11) == InventedName(11));
  std::set<std::string> names;
  for (uint64_t d = 0; d < 200; ++d) names.insert(InventedName(d));
  CHECK(names.size() >= 190);
  const Tokenizer& tokenizer = RealTokenizer();
  const RuleModel copier(Induct, tokenizer.vocab_size());
  ProbeOptions other;
  other.seed = 8;
  const auto a = ProbeReading(copier, tokenizer), b = ProbeReading(copier, tokenizer);
  CHECK(a[1].examples == b[1].examples);
  CHECK(a[0].score == b[0].score);
  // A model too short for the prompts is told so, not scored.
  class Short : public RuleModel {
   public:
    using RuleModel::RuleModel;
    int max_len() const override { return 32; }
  };
  CHECK_THROWS_AS(ProbeReading(Short(Induct, tokenizer.vocab_size()), tokenizer), ModelError);
}

TEST_CASE("troupe lm probe reports the three scores of a model folder", "[probe][cli]") {
  const std::string dir = testing::MakeStandInBaseModel("troupe-probe-base");
  const auto r =
      testing::RunCommand(testing::TroupeBinary() + " lm probe --model " + dir + "/runs/base_model/model --json");
  INFO(r.output);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.output);
  for (const char* probe : {"induction", "copy", "needle"}) {
    INFO(probe);
    REQUIRE(j.contains(probe));
    CHECK(j[probe]["score"].get<double>() >= 0.0);
    CHECK(j[probe]["score"].get<double>() <= 1.0);
    CHECK(j[probe]["count"].get<int>() > 0);
    CHECK(std::isfinite(j[probe]["evidence_gain"].get<double>()));
  }
  const auto table =
      testing::RunCommand(testing::TroupeBinary() + " lm probe --model " + dir + "/runs/base_model/model");
  CHECK_THAT(table.output,
             Catch::Contains("induction") && Catch::Contains("needle") && Catch::Contains("evidence gain"));
}
