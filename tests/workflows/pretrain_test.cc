// Pretraining on real text (Moby-Dick) at a tiny size: the model learns (its
// held-out loss falls below where it started and below the unigram baseline),
// the run folder ends with a Hugging Face model folder that `troupe lm`
// scores and continues from, and a run split by a resume equals the unsplit
// one. Pretraining workflows are checked like the others.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/models/language_model.h"
#include "core/models/model_pool.h"
#include "core/models/pretrainer.h"
#include "core/rng.h"
#include "core/text/invented_names.h"
#include "games/qa/factbook_qa.h"
#include "tests/test_paths.h"
#include "tests/test_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/pretrain_config.h"
#include "workflows/run/pretrain_run.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

const char* kTiny = R"(name: "tiny_base"
seed: 3
model {
  name: "base"
  llama { hidden_size: 32 intermediate_size: 64 layers: 1 heads: 2 kv_heads: 1 max_len: 64 }
  optimizer { lr: 0.01 }
}
pretrain {
  corpus: "moby_dick"
  heldout_every: 10
  vocab_size: 512
  seq_len: 32
  batch: 8
  max_tokens: 24000
  epochs: 3
  warmup_steps: 5
  eval_every: 30
  eval_tokens: 4096
  checkpoint_every: 30
  sample_prompt: "Call me"
}
)";

CompiledPretrain Tiny(const std::string& text = kTiny) {
  return CompilePretrain(ParseWorkflowText(text, "tiny.textproto"));
}

// kTiny with `fields` (each ending "\n  ") at the start of its pretrain block's settings, from line 10 on.
std::string WithPretrainFields(const std::string& fields) {
  std::string text = kTiny;
  text.replace(text.find("heldout_every"), 0, fields);
  return text;
}

std::string Temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("troupe-pretrain-" + name);
  fs::remove_all(p);
  return p.string();
}

// Options for a run without a progress line into a fresh folder named for `name`.
PretrainOptions Quiet(const std::string& name) {
  PretrainOptions o;
  o.out_dir = Temp(name);
  o.progress = false;
  return o;
}

PretrainResult Run(const std::string& dir, bool resume = false, int stop_at = 0) {
  PretrainOptions o;
  o.out_dir = dir;
  o.resume = resume;
  o.progress = false;
  o.stop_at = stop_at;
  std::ostringstream sink;
  return Pretrain(Tiny(), o, sink);
}

std::vector<nlohmann::json> Metrics(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("time/elapsed_s");
    j.erase("tokens_per_s");
    lines.push_back(j);
  }
  return lines;
}

// `key`'s values in a run's metrics.jsonl, in order, from the lines that have it.
std::vector<double> MetricValues(const std::string& dir, const std::string& key) {
  std::vector<double> values;
  for (const nlohmann::json& line : Metrics(dir)) {
    if (line.contains(key)) values.push_back(line[key]);
  }
  return values;
}

}  // namespace

TEST_CASE("a tiny base model learns from real text and ends as a model folder troupe lm reads", "[pretrain]") {
  const std::string dir = Temp("whole");
  const PretrainResult r = Run(dir);
  REQUIRE(r.finished);
  INFO("held-out perplexity " << r.heldout_perplexity << ", unigram " << r.unigram_perplexity << ", bigram "
                              << r.bigram_perplexity);
  const auto lines = Metrics(dir);
  REQUIRE(lines.size() >= 3);
  CHECK(lines.back()["loss"].get<double>() < lines.front()["loss"].get<double>() - 0.5);
  CHECK(r.heldout_perplexity < r.unigram_perplexity);  // it learnt more than word frequencies
  CHECK(r.heldout_perplexity < 512);                   // and far more than a uniform guess
  for (const char* f :
       {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    INFO(f);
    CHECK(fs::exists(fs::path(r.model_dir) / f));
  }
  CHECK(fs::exists(fs::path(dir) / "summary.json"));
  CHECK(testing::ReadFile(dir + "/samples.txt").find("Call me") != std::string::npos);

  // troupe lm: per-token log-probabilities of a text, and a greedy continuation.
  const std::string troupe = testing::TroupeBinary();
  std::ofstream(dir + "/text.txt") << "Call me Ishmael.";
  const auto score =
      testing::RunCommand(troupe + " lm score --model " + r.model_dir + " --file " + dir + "/text.txt --json");
  REQUIRE(score.status == 0);
  const nlohmann::json scored = nlohmann::json::parse(score.output);
  REQUIRE(scored["tokens"].size() >= 3);
  CHECK(scored["tokens"][0]["logprob"].is_null());
  for (size_t i = 1; i < scored["tokens"].size(); ++i) CHECK(scored["tokens"][i]["logprob"].get<double>() < 0);
  CHECK(std::isfinite(scored["perplexity"].get<double>()));
  const auto greedy = testing::RunCommand(troupe + " lm generate --model " + r.model_dir +
                                          " --prompt 'Call me' --greedy --max-new 5 --json");
  REQUIRE(greedy.status == 0);
  const nlohmann::json generated = nlohmann::json::parse(greedy.output);
  CHECK(generated["ids"].size() >= 1);
  CHECK(generated["ids"].size() <= 5);
  const auto again = testing::RunCommand(troupe + " lm generate --model " + r.model_dir +
                                         " --prompt 'Call me' --greedy --max-new 5 --json");
  CHECK(again.output == greedy.output);  // greedy is deterministic
  // The tokenizer commands read the model folder's tokenizer.
  const auto ids = testing::RunCommand("printf 'Call me Ishmael.' | " + troupe + " tokenizer encode --tokenizer " +
                                       r.model_dir + " --json");
  REQUIRE(ids.status == 0);
  const auto text = testing::RunCommand("printf '" + ids.output.substr(0, ids.output.size() - 1) + "' | " + troupe +
                                        " tokenizer decode --tokenizer " + r.model_dir);
  CHECK(text.output == "Call me Ishmael.");

  // Scoring a text longer than the model's 64 positions: overlapping windows,
  // the first of which scores exactly what a text of 64 tokens scores alone.
  const auto lm = LanguageModel::Load(r.model_dir);
  std::vector<int> long_ids;
  for (int i = 0; i < 150; ++i) long_ids.push_back((i * 37) % 500);
  const std::vector<float> all = lm->Score(long_ids);
  REQUIRE(all.size() == long_ids.size() - 1);
  const std::vector<float> first = lm->Score(std::vector<int>(long_ids.begin(), long_ids.begin() + 64));
  REQUIRE(first.size() == 63);
  for (size_t i = 0; i < first.size(); ++i) CHECK(all[i] == first[i]);
  for (float v : all) CHECK((std::isfinite(v) && v < 0));
  // Predict (teacher-forced argmax, the induction probe's reading) agrees with greedy generation.
  const std::vector<int> prompt(long_ids.begin(), long_ids.begin() + 20);
  const std::vector<int> predicted = lm->Predict(prompt);
  REQUIRE(predicted.size() == prompt.size() - 1);
  CHECK(predicted.back() == lm->Generate(prompt, 1, true, 1.0, 0, {}).at(0));
  CHECK(lm->Predict(long_ids).size() == long_ids.size() - 1);
}

TEST_CASE("a pretraining run split by a resume equals the unsplit run", "[pretrain][resume]") {
  const std::string whole = Temp("resume-whole"), split = Temp("resume-split");
  const PretrainResult full = Run(whole);
  const PretrainResult first = Run(split, false, 40);
  CHECK_FALSE(first.finished);
  CHECK(first.steps == 40);
  const PretrainResult second = Run(split, true);
  REQUIRE(second.finished);
  CHECK(Metrics(split) == Metrics(whole));
  CHECK(second.heldout_perplexity == full.heldout_perplexity);
  CHECK_THROWS_WITH(Run(whole), Catch::Contains("--resume"));
}

TEST_CASE("a pretraining workflow is checked whole, with errors at their line", "[pretrain][config]") {
  std::string text = kTiny;
  text.replace(text.find("corpus: \"moby_dick\""), 19, "corpus: \"gutenberg\"");
  CHECK_THROWS_WITH(Tiny(text), Catch::Contains("tiny.textproto:9:3") && Catch::Contains("unknown corpus 'gutenberg'"));
  std::string long_seq = kTiny;
  long_seq.replace(long_seq.find("seq_len: 32"), 11, "seq_len: 128");
  CHECK_THROWS_WITH(Tiny(long_seq), Catch::Contains("exceeds the model's max_len 64"));
  std::string micro = kTiny;
  const std::string llama =
      "llama { hidden_size: 32 intermediate_size: 64 layers: 1 heads: 2 kv_heads: 1 max_len: 64 }";
  micro.replace(micro.find(llama), llama.size(), "transformer { d_model: 16 heads: 2 }");
  CHECK_THROWS_WITH(Tiny(micro), Catch::Contains("tiny.textproto:3:1") && Catch::Contains("transformer has none"));
  CHECK_THROWS_WITH(Tiny(WithPretrainFields("unseen_questions: \"q.jsonl\"\n  ")),
                    Catch::Contains("tiny.textproto:10:3") && Catch::Contains("no corpus is 'factbook'"));
  std::string reading = WithPretrainFields("reading_share: 0.95\n  ");
  CHECK_THROWS_WITH(Tiny(reading),
                    Catch::Contains("tiny.textproto:10:3") && Catch::Contains("reading_share is between 0 and 0.9"));
  reading.replace(reading.find("0.95"), 4, "0.3");
  PretrainOptions without_documents;
  without_documents.out_dir = Temp("no-reading-documents");
  std::ostringstream sink;
  CHECK_THROWS_WITH(Pretrain(Tiny(reading), without_documents, sink), Catch::Contains("no reading documents"));
  CHECK_THROWS_WITH(Tiny(WithPretrainFields("reading_share: 0.5\n  induction_share: 0.5\n  ")),
                    Catch::Contains("tiny.textproto:11:3") && Catch::Contains("at most 0.9"));
  CHECK_THROWS_WITH(Tiny(WithPretrainFields("induction_share: 0.5\n  renamed_share: 0.5\n  ")),
                    Catch::Contains("tiny.textproto:11:3") && Catch::Contains("renamed_share is 0 or more"));
  CHECK_THROWS_WITH(Tiny(WithPretrainFields("renamed_share: 0.3\n  renamed_echo: 1.5\n  ")),
                    Catch::Contains("tiny.textproto:11:3") && Catch::Contains("renamed_echo is a share"));
  CHECK_THROWS_WITH(Tiny(WithPretrainFields("repeated_text_share: 0.95\n  ")),
                    Catch::Contains("tiny.textproto:10:3") && Catch::Contains("repeated_text_share is 0 or more"));
  // A CUDA device this build cannot use (none has 99), before any data is read.
  std::string gpu = kTiny;
  gpu.replace(gpu.find(llama), llama.size(), llama + " device: \"cuda:99\"");
  CHECK_THROWS_WITH(Tiny(gpu), Catch::Contains("tiny.textproto:5:") && Catch::Contains("this build of LibTorch"));
  // A game workflow is not pretrained, and a pretraining one is not trained with `troupe train`.
  CHECK_THROWS_WITH(CompileWorkflow(ParseWorkflowText(kTiny, "tiny.textproto")), Catch::Contains("troupe pretrain"));
}

TEST_CASE("unseen questions leave their supporting Factbook pages out of pretraining, and only those",
          "[pretrain][qa]") {
  const std::string dir = Temp("unseen");
  fs::create_directories(dir);
  const std::string questions = dir + "/questions.jsonl";
  {
    std::ofstream q(questions);
    q << R"({"id":"a","question":"Which country is larger by area, Brunei or Egypt?","answers":["Egypt"],)"
      << R"("supporting":["bx:Geography:Area","eg:Geography:Area"]})"
      << "\n";
    q << R"({"id":"b","question":"Own data","answers":["x"],"supporting":["my-passage-7"]})"
      << "\n";
  }
  std::string text = kTiny;
  text.replace(text.find("corpus: \"moby_dick\""), 19, "corpus: \"factbook\"");
  const CompiledPretrain all = Tiny(text);
  text.replace(text.find("heldout_every"), 0, "unseen_questions: \"" + questions + "\"\n  ");
  const CompiledPretrain unseen = Tiny(text);
  std::ostringstream log_all, log_unseen;
  const std::set<std::string> pages = qa::UnseenFactbookPages(unseen.unseen_questions);
  CHECK(pages == std::set<std::string>{"bx", "eg"});  // an id of another shape names no page
  const PretrainDocuments with = ReadPretrainDocuments(all, {}, log_all);
  const PretrainDocuments without = ReadPretrainDocuments(unseen, pages, log_unseen);
  auto names = [](const PretrainDocuments& d) {
    std::set<std::string> n;
    for (const auto* split : {&d.train, &d.heldout}) {
      for (const Document& doc : *split) n.insert(doc.name.substr(doc.name.rfind('/') + 1));
    }
    return n;
  };
  const std::set<std::string> a = names(with), b = names(without);
  CHECK(a.count("eg") == 1);
  CHECK(a.count("bx") == 1);
  CHECK(b.count("eg") == 0);
  CHECK(b.count("bx") == 0);
  CHECK(b.size() == a.size() - 2);
  CHECK(log_unseen.str().find("left out 2 Factbook pages") != std::string::npos);
  CHECK(log_all.str().find("left out") == std::string::npos);
}

TEST_CASE("reading documents are mixed into the corpus stream, each inside one training sequence",
          "[pretrain][reading]") {
  std::vector<int> corpus(1000);
  for (int i = 0; i < 1000; ++i) corpus[i] = 1000 + i;
  std::vector<std::vector<int>> reading;
  for (int k = 0; k < 12; ++k) reading.push_back(std::vector<int>(5 + 2 * k, -1 - k));  // each shorter than a sequence
  const int L = 32, eot = 0;
  const std::vector<int> mixed = MixWithinSequences(corpus, reading, L, eot);
  // Every corpus token once, in order.
  std::vector<int> kept;
  for (int t : mixed) {
    if (t >= 1000) kept.push_back(t);
  }
  CHECK(kept == corpus);
  // Each document whole, followed by <|endoftext|>, in one sequence [cL, cL + L).
  for (int k = 0; k < 12; ++k) {
    INFO("document " << k);
    const auto first = std::find(mixed.begin(), mixed.end(), -1 - k);
    REQUIRE(first != mixed.end());
    const size_t at = static_cast<size_t>(first - mixed.begin()), size = reading[k].size();
    CHECK(std::count(mixed.begin(), mixed.end(), -1 - k) == static_cast<long>(size));
    CHECK(mixed[at + size] == eot);
    CHECK(at / L == (at + size) / L);
  }
  // Spread through the corpus, not bunched at one end.
  const auto last = std::find(mixed.begin(), mixed.end(), -12);
  CHECK(static_cast<size_t>(last - mixed.begin()) > mixed.size() / 2);
  CHECK(std::find(mixed.begin(), mixed.end(), -1) - mixed.begin() < 40);
}

TEST_CASE("repeated random sequences and renamed prose take their shares of the pretraining tokens",
          "[pretrain][reading]") {
  std::string text = kTiny;
  text.replace(text.find("heldout_every"), 0,
               "induction_share: 0.2\n  renamed_share: 0.2\n  renamed_echo: 0.5\n  repeated_text_share: 0.1\n  ");
  text.replace(text.find("seq_len: 32"), 11, "seq_len: 64");
  PretrainOptions o = Quiet("induction");
  std::ostringstream log;
  const PretrainResult r = Pretrain(Tiny(text), o, log);
  INFO(log.str());
  CHECK(r.finished);
  CHECK(r.train_tokens == 24000);  // max_tokens: the corpus's share and the sequences' together
  CHECK_THAT(log.str(), Catch::Contains("repeated random sequences, ") &&
                            Catch::Contains("windows of renamed prose, ") &&
                            Catch::Contains("repeated spans of the corpora mixed in"));
  // The tiny model's 64 positions cannot hold the probes' prompts: the summary says so.
  CHECK_THAT(testing::ReadFile(o.out_dir + "/summary.json"), Catch::Contains("not_run"));
}

TEST_CASE("repeated text spans are pieces of one document of the corpora, each said twice", "[pretrain][reading]") {
  // Documents 1..30 and 100..139, each ended by <eot> (9).
  std::vector<int> corpus;
  for (int t = 1; t <= 30; ++t) corpus.push_back(t);
  corpus.push_back(9);
  for (int t = 100; t < 140; ++t) corpus.push_back(t);
  corpus.push_back(9);
  const std::vector<std::vector<int>> spans = RepeatedTextSpans(corpus, 9, 64, 5, 2000);
  int64_t tokens = 0;
  std::set<size_t> lengths;
  for (const std::vector<int>& s : spans) {
    REQUIRE(s.size() % 2 == 0);
    const size_t n = s.size() / 2;
    lengths.insert(n);
    CHECK(n >= 8);
    CHECK(n <= 31);
    CHECK(std::equal(s.begin(), s.begin() + n, s.begin() + n));  // said twice
    for (size_t i = 1; i < n; ++i) CHECK(s[i] == s[i - 1] + 1);  // consecutive text of one document, no <eot>
    tokens += static_cast<int64_t>(s.size()) + 1;
  }
  CHECK(tokens >= 2000);
  CHECK(lengths.size() > 5);
  CHECK(RepeatedTextSpans(corpus, 9, 64, 5, 2000) == spans);  // fixed by the seed
  // Documents shorter than every span cannot give one.
  CHECK_THROWS_WITH(RepeatedTextSpans({1, 2, 9, 3, 4, 9, 5, 6, 9, 7, 8, 9, 1, 2, 9, 3, 4, 9, 5, 6, 9}, 9, 64, 5, 100),
                    Catch::Contains("repeated_text_share"));
}

TEST_CASE("reading documents take their share of a run, and a run whose documents do not fit is refused",
          "[pretrain][reading]") {
  std::string text = kTiny;
  text.replace(text.find("heldout_every"), 0, "reading_share: 0.3\n  ");
  text.replace(text.find("epochs: 3"), 9, "epochs: 1");
  PretrainOptions o = Quiet("reading");
  // Every fifth document is longer than a training sequence of 32 tokens: those are left out and counted.
  o.reading_document = [](uint64_t i) {
    return i % 5 == 4 ? std::string(400, 'x') : "Question: who is " + InventedName(i) + "?\nAnswer: " + InventedName(i);
  };
  std::ostringstream log;
  const PretrainResult r = Pretrain(Tiny(text), o, log);
  INFO(log.str());
  CHECK(r.finished);
  CHECK_THAT(log.str(),
             Catch::Contains(" reading documents (") && Catch::Contains(" longer than seq_len left out) mixed in"));
  // When most do not fit, the run stops before training rather than keep only the few short ones.
  o.out_dir = Temp("reading-too-long");
  o.reading_document = [](uint64_t i) { return i % 5 == 4 ? "short" : std::string(400, 'x'); };
  std::ostringstream refused;
  CHECK_THROWS_WITH(
      Pretrain(Tiny(text), o, refused),
      Catch::Contains("pretrain.reading_share: most of its documents") && Catch::Contains("longer than seq_len 32"));
  CHECK_FALSE(fs::exists(o.out_dir + "/checkpoints"));
}

TEST_CASE("a pretraining run stopped at its time limit still ends with its model and report", "[pretrain]") {
  std::string text = kTiny;
  text.replace(text.find("heldout_every"), 0, "max_minutes: 0.0005\n  ");  // 30 ms: a few of its ~280 steps
  PretrainOptions o = Quiet("time-limit");
  std::ostringstream log;
  const PretrainResult r = Pretrain(Tiny(text), o, log);
  INFO(log.str());
  CHECK_THAT(log.str(), Catch::Contains("stopping at the time limit"));
  CHECK(r.steps < r.total_steps);
  CHECK(r.finished);
  CHECK(fs::exists(fs::path(r.model_dir) / "model.safetensors"));
  const nlohmann::json summary = nlohmann::json::parse(testing::ReadFile(o.out_dir + "/summary.json"));
  CHECK(summary["steps"].get<int>() == r.steps);
  CHECK(std::isfinite(summary["heldout_perplexity"].get<double>()));
}

namespace {
// Guided heads whose separator is 9, as the targets' tests below use.
GuidedAttention Guide(bool only_where_right = false, bool lookup = false) {
  GuidedAttention g;
  g.unmatched_token = 9;
  g.induction_only_where_right = only_where_right;
  if (lookup) g.heads.push_back({GuidedHeadKind::kLookup, 2, 1.0});
  return g;
}

// Answers after the cue 20 21, up to the line's end 30 or the separator 9.
AnswerLoss Answers() {
  AnswerLoss answers;
  answers.cue = {20, 21};
  answers.end = 30;
  answers.separator = 9;
  return answers;
}

// kTiny with three layers (room for a guided head after the previous-token and induction heads) and
// sequences of 64 tokens (a reading document's lines): 46 steps of 8 x 64 tokens.
std::string ThreeLayersOf64Tokens() {
  std::string text = kTiny;
  text.replace(text.find("layers: 1"), 9, "layers: 3");
  text.replace(text.find("max_len: 64"), 11, "max_len: 128");
  text.replace(text.find("seq_len: 32"), 11, "seq_len: 64");
  text.replace(text.find("epochs: 3"), 9, "epochs: 1");
  return text;
}

// Pretrains `w` on `document`s as its reading documents, into a fresh folder named for `name`; the folder.
std::string RunOnDocuments(const CompiledPretrain& w, const std::string& name,
                           const std::function<std::string(uint64_t)>& document) {
  PretrainOptions o = Quiet(name);
  o.reading_document = document;
  std::ostringstream log;
  const PretrainResult r = Pretrain(w, o, log);
  INFO(log.str());
  REQUIRE(r.finished);
  return o.out_dir;
}

// Three layers of 64 tokens reading documents at half the mix, with a lookup head on layer 2 and
// `guide_fields` in its guided_attention.
CompiledPretrain LookupWorkflow(const std::string& guide_fields) {
  std::string text = ThreeLayersOf64Tokens();
  text.replace(text.find("heldout_every"), 0,
               "reading_share: 0.5\n  guided_attention { steps: 1000 lookup_layer: 2 " + guide_fields + " }\n  ");
  return Tiny(text);
}

// A reading document whose answer is the capital named in its passage.
std::string CapitalDocument(uint64_t i) {
  return "Capital: name: " + InventedName(i) + "; time difference: UTC+3\nAnswer: " + InventedName(i) + "\n";
}

// Rows of 12 inputs and one more target token, with answers after the cue.
const std::vector<int> kAnswered = {5, 6, 7, 8,  3,  7, 2,  8, 20, 21, 7,  8,  30,  //
                                    5, 6, 3, 20, 21, 4, 30, 3, 3,  3,  20, 21, 5};
}  // namespace

TEST_CASE("guided attention's targets are the previous position and the place after the last match",
          "[pretrain][guided]") {
  // Two rows of 6: a b c a b <eot> and <eot> x <eot> x y x (9 is the separator, never matched).
  const AttentionTargets t = GuidedAttentionTargets({1, 2, 3, 1, 2, 9, 9, 4, 9, 4, 5, 4}, 6, 0, Guide());
  CHECK(t.previous == std::vector<int64_t>{-1, 0, 1, 2, 3, 4, -1, 0, 1, 2, 3, 4});
  CHECK(t.induction == std::vector<int64_t>{-1, -1, -1, 1, 2, -1, -1, -1, -1, 2, -1, 4});
  CHECK_THROWS_AS(GuidedAttentionTargets({1, 2, 3}, 2, 0, Guide()), ModelError);
}

TEST_CASE("the induction head can be guided only where copying what it finds is right", "[pretrain][guided]") {
  // The rows above: only row 1's second a is followed by what followed its first (b); b's next is
  // <eot>, not c, and row 2's last x has no next token in its row.
  const AttentionTargets t = GuidedAttentionTargets({1, 2, 3, 1, 2, 9, 9, 4, 9, 4, 5, 4}, 6, 0, Guide(true));
  CHECK(t.induction == std::vector<int64_t>{-1, -1, -1, 1, -1, -1, -1, -1, -1, -1, -1, -1});
  CHECK(t.previous == std::vector<int64_t>{-1, 0, 1, 2, 3, 4, -1, 0, 1, 2, 3, 4});  // unchanged
  // A row of 6 inputs and its target token: the last input's next token is that target.
  CHECK(GuidedAttentionTargets({1, 2, 3, 1, 2, 3, 1}, 6, 7, Guide(true)).induction ==
        std::vector<int64_t>{-1, -1, -1, 1, 2, 3});
  CHECK(GuidedAttentionTargets({1, 2, 3, 1, 2, 3, 7}, 6, 7, Guide(true)).induction ==
        std::vector<int64_t>{-1, -1, -1, 1, 2, -1});
}

TEST_CASE("the lookup head's target is where the answer after the cue stands earlier", "[pretrain][guided]") {
  // Row 1: the answer 7 8 stands at 2 (7 alone stands at 5 too: the whole answer is matched);
  // row 2: an answer 4 never seen before the cue, and a cue whose answer runs past the row's inputs (5 at 0).
  const AnswerLoss answers = Answers();
  const AttentionTargets t = GuidedAttentionTargets(kAnswered, 12, 13, Guide(false, true), &answers);
  std::vector<int64_t> expected(24, -1);
  expected[9] = 2;        // row 1, at the cue's end (21)
  expected[12 + 11] = 0;  // row 2's second cue: 5 stands at its start
  CHECK(t.lookup == expected);
  CHECK(t.induction.size() == 24);                                                // the other targets as before
  CHECK(GuidedAttentionTargets(kAnswered, 12, 13, Guide(false, true)).lookup.empty());  // no answers, no lookup
  CHECK(GuidedAttentionTargets(kAnswered, 12, 13, Guide(), &answers).lookup.empty());   // answers but no lookup head
}

TEST_CASE("the line-start head's target is its line's first token", "[pretrain][guided]") {
  GuidedAttention guide = Guide();
  guide.heads.push_back({GuidedHeadKind::kLineStart, 2, 1.0});
  guide.line_breaks = {30, 31};  // 31 as a token holding two line ends would be
  // Row 1: two lines after a first the row does not begin, then an empty one; row 2: the separator 9
  // ends a line too, and each row starts afresh.
  const AttentionTargets t =
      GuidedAttentionTargets({5, 6, 30, 7, 8, 31, 30, 4, 1, 30, 9, 2, 3, 4, 30, 4}, 8, 0, guide);
  CHECK(t.line_start == std::vector<int64_t>{-1, -1, -1, 3, 3, 3, 6, 7, -1, -1, 2, 3, 3, 3, 3, 7});
  CHECK(t.previous.size() == 16);  // the other targets as before
  guide.heads.pop_back();
  CHECK(GuidedAttentionTargets({5, 6, 30, 7}, 4, 0, guide).line_start.empty());
}

TEST_CASE("the subject head's targets bind an answered line to its title and the cue to the question's name",
          "[pretrain][guided]") {
  GuidedAttention guide = Guide(false, true);
  guide.heads.insert(guide.heads.begin() + 2, {GuidedHeadKind::kSubject, 3, 1.0});
  guide.line_breaks = {30};
  guide.word_starts = {40, 41, 42, 43, 44, 45};  // tokens whose text begins with a space
  // <eot> | K ike " -" " Capital:" Br ouru \n | Gu aim " -" Th odi \n | " What" " capital" " K" ike "?" \n |
  // Answer: Br ouru \n. The question's first token of the name (" K") is not the title's ("K"); its last is.
  const std::vector<int> row = {9, 1, 2, 40, 41, 7, 8, 30, 3, 4, 40, 5, 6, 30, 42, 43, 44, 2, 45, 30, 20, 21, 7, 8, 30};
  const AnswerLoss answers = Answers();
  const AttentionTargets t = GuidedAttentionTargets(row, 24, 25, guide, &answers);
  REQUIRE(t.lookup.size() == 24);
  CHECK(t.lookup[21] == 5);  // the cue's end finds the answer
  std::vector<int64_t> expected(24, -1);
  // The answered line, after its title's first word: that word's last token; the cue: where that
  // token stands in the question. The other country's line, never asked about, has none.
  for (int p = 3; p <= 6; ++p) expected[p] = 2;
  expected[21] = 17;
  CHECK(t.subject == expected);
  CHECK(GuidedAttentionTargets(row, 24, 25, guide).subject.empty());  // no answers, no subject
  guide.heads.erase(guide.heads.begin() + 2);
  CHECK(GuidedAttentionTargets(row, 24, 25, guide, &answers).subject.empty());  // no subject head
}

TEST_CASE("the answer loss is on the tokens after the cue, to the line's end", "[pretrain][reading]") {
  // The rows of the lookup test above: inputs whose next token is an answer's.
  const std::vector<int>& tokens = kAnswered;
  AnswerLoss answers = Answers();
  // Row 1: after the cue's end (input 9) come 7 and 8 (targets of inputs 9 and 10), then the line's end
  // (input 11's target) is not an answer. Row 2: 4 after the first cue (input 4); after the second (input 11),
  // 5 is the row's last target.
  CHECK(AnswerPositions(tokens, 12, 13, answers) == std::vector<int64_t>{9, 10, 12 + 4, 12 + 11});
  answers.end = 4;  // an answer ends at its line's end or, as here, before the first token that closes it
  CHECK(AnswerPositions(tokens, 12, 13, answers) == std::vector<int64_t>{9, 10, 11, 12 + 11});
  answers.cue.clear();
  CHECK(AnswerPositions(tokens, 12, 13, answers).empty());
  CHECK_THROWS_AS(AnswerPositions({1, 2, 3}, 2, 0, answers), ModelError);
}

TEST_CASE("guided attention teaches two heads where to look, and only while it is on", "[pretrain][guided]") {
  std::string text = kTiny;
  text.replace(text.find("layers: 1"), 9, "layers: 2");
  const bool only_where_right = GENERATE(false, true);  // the induction head guided everywhere, or where copying is right
  text.replace(text.find("heldout_every"), 0,
               std::string("induction_share: 0.6\n  guided_attention { steps: 60 induction_only_where_right: ") +
                   (only_where_right ? "true" : "false") + " }\n  ");
  text.replace(text.find("epochs: 3"), 9, "epochs: 1");  // 93 steps
  const CompiledPretrain w = Tiny(text);
  REQUIRE(w.guided_attention.Find(GuidedHeadKind::kInduction) != nullptr);
  CHECK(w.guided_attention.heads.size() == 2);
  for (const GuidedHead& h : w.guided_attention.heads) CHECK((h.from_step == 0 && h.until_step == 60));
  CHECK(w.guided_attention.Find(GuidedHeadKind::kInduction)->layer == 1);
  CHECK(w.guided_attention.induction_only_where_right == only_where_right);
  PretrainOptions o = Quiet(only_where_right ? "guided-where-right" : "guided");
  std::ostringstream log;
  const PretrainResult r = Pretrain(w, o, log);
  INFO(log.str());
  REQUIRE(r.finished);
  std::vector<double> previous, induction;
  bool after_guidance_reports = false;
  for (const nlohmann::json& line : Metrics(o.out_dir)) {
    if (line.contains("attention_previous")) {
      CHECK(line["step"].get<int>() <= 60);
      previous.push_back(line["attention_previous"]);
      induction.push_back(line["attention_induction"]);
    } else if (line.contains("step") && line["step"].get<int>() > 60) {
      after_guidance_reports = true;
    }
  }
  REQUIRE(previous.size() >= 5);
  CHECK(after_guidance_reports);
  // Uniform attention over ~16 earlier positions costs about log(16) = 2.8 nats; guided, the
  // previous-token head learns to look one back within the first steps.
  CHECK(previous.front() > 1.5);
  CHECK(previous.back() < 0.5 * previous.front());
  CHECK(induction.back() < induction.front());
}

TEST_CASE("a lookup head is led to reading documents' answers", "[pretrain][guided][reading]") {
  auto lookup_losses = [](const std::string& weight) {
    const CompiledPretrain w = LookupWorkflow("lookup_weight: " + weight);
    REQUIRE(w.guided_attention.Find(GuidedHeadKind::kLookup) != nullptr);
    CHECK(w.guided_attention.Find(GuidedHeadKind::kLookup)->layer == 2);
    CHECK(w.guided_attention.Find(GuidedHeadKind::kLookup)->weight == std::stod(weight));
    return MetricValues(RunOnDocuments(w, "lookup-" + weight, CapitalDocument), "attention_lookup");
  };
  const std::vector<double> lookup = lookup_losses("1");
  // Half of every batch is documents with an answer to find; the head's -log weight on where it
  // stands falls from about that of attention spread over the document's positions.
  REQUIRE(lookup.size() >= 3);
  CHECK(lookup.front() > 1.5);
  CHECK(lookup.back() < 0.5 * lookup.front());
  // Its own weight: at a thousandth the same run's head hardly learns where to look.
  const std::vector<double> faint = lookup_losses("0.001");
  REQUIRE(faint.size() == lookup.size());
  CHECK(faint.back() > 2 * lookup.back());
}

TEST_CASE("the lookup head's output is led to name the token it finds", "[pretrain][guided][reading]") {
  auto copy_losses = [](const std::string& weight) {
    const CompiledPretrain w = LookupWorkflow("lookup_copy_weight: " + weight);
    REQUIRE(w.guided_attention.Find(GuidedHeadKind::kLookup) != nullptr);
    CHECK(w.guided_attention.Find(GuidedHeadKind::kLookup)->copy_weight == std::stod(weight));
    const bool reaching = weight.find("reaches_stream") != std::string::npos;
    CHECK(w.guided_attention.Find(GuidedHeadKind::kLookup)->copy_reaches_stream == reaching);
    return MetricValues(RunOnDocuments(w, reaching ? "lookup-copy-reaching" : "lookup-copy-" + weight, CapitalDocument),
                        "lookup_copy_loss");
  };
  const std::vector<double> copies = copy_losses("1");
  // What the head writes from the answer's first token, read as logits, names that token: its
  // cross-entropy falls from about that of a guess among the vocabulary's tokens. The loss trains
  // the head's value and output projections only, so in these few steps it falls by about 40%.
  REQUIRE(copies.size() >= 3);
  CHECK(copies.front() > 2.0);
  CHECK(copies.back() < 0.7 * copies.front());
  // At a thousandth of the weight the same head's output hardly learns to.
  const std::vector<double> faint = copy_losses("0.001");
  REQUIRE(faint.size() == copies.size());
  CHECK(faint.back() > 0.9 * faint.front());
  CHECK(faint.back() > 1.5 * copies.back());
  // Let it train what the stream holds at the answer's token too, and it names the token better.
  const std::vector<double> reaching = copy_losses("1 lookup_copy_reaches_stream: true");
  REQUIRE(reaching.size() == copies.size());
  INFO("copy loss kept to the projections " << copies.back() << ", reaching the stream " << reaching.back());
  CHECK(reaching.back() < 0.9 * copies.back());
}

TEST_CASE("the reading heads are guided over their own steps", "[pretrain][guided][reading]") {
  const CompiledPretrain w = LookupWorkflow("reading_from_step: 10 reading_until_step: 30");
  const GuidedAttention& guide = w.guided_attention;
  REQUIRE(guide.Find(GuidedHeadKind::kLookup) != nullptr);
  CHECK(guide.HeadsAt(9) == std::vector<size_t>{0, 1});
  CHECK(guide.HeadsAt(10) == std::vector<size_t>{0, 1, 2});
  CHECK(guide.At(29).heads.size() == 3);
  CHECK(guide.At(30).Find(GuidedHeadKind::kLookup) == nullptr);
  // A line every 10 steps: the lookup's loss on the lines of steps 11-20 and 21-30 only; the
  // previous and induction heads' on every line.
  const std::string run = RunOnDocuments(w, "reading-steps", CapitalDocument);
  std::vector<int> lookup_lines;
  int previous_lines = 0, lines = 0;
  for (const nlohmann::json& line : Metrics(run)) {
    if (!line.contains("step")) continue;
    ++lines;
    if (line.contains("attention_previous")) ++previous_lines;
    if (line.contains("attention_lookup")) lookup_lines.push_back(line["step"].get<int>());
  }
  CHECK(lookup_lines == std::vector<int>{20, 30});
  CHECK(lines >= 4);
  CHECK(previous_lines == lines);
}

TEST_CASE("a line-start head is led to the first token of each line", "[pretrain][guided]") {
  std::string text = ThreeLayersOf64Tokens();
  text.replace(text.find("heldout_every"), 0,
               "reading_share: 0.5\n  guided_attention { steps: 1000 line_start_layer: 2 }\n  ");
  const CompiledPretrain w = Tiny(text);
  REQUIRE(w.guided_attention.Find(GuidedHeadKind::kLineStart) != nullptr);
  CHECK(w.guided_attention.Find(GuidedHeadKind::kLineStart)->layer == 2);
  // Lines of a passage: each begins with the country whose fact it states.
  const auto document = [](uint64_t i) {
    return InventedName(i) + " - Capital: name: " + InventedName(i + 1) + "\n" + InventedName(i + 2) +
           " - Languages: " + InventedName(i + 3) + "ish\n";
  };
  const std::vector<double> line_start =
      MetricValues(RunOnDocuments(w, "line-start", document), "attention_line_start");
  // Spread over a line's earlier positions the head's -log weight on its start is a few nats; led,
  // it falls.
  REQUIRE(line_start.size() >= 3);
  CHECK(line_start.front() > 1.0);
  CHECK(line_start.back() < 0.5 * line_start.front());
}

TEST_CASE("a subject head is led to whose fact an answered line states, and to carry it", "[pretrain][guided][reading]") {
  // Rows of 128 tokens, that a document of three lines of invented names fits in: 47 steps of 8 x 128.
  const auto workflow = [](const std::string& copy) {
    std::string text = ThreeLayersOf64Tokens();
    text.replace(text.find("layers: 3"), 9, "layers: 4");
    text.replace(text.find("seq_len: 64"), 11, "seq_len: 128");
    text.replace(text.find("max_tokens: 24000"), 17, "max_tokens: 48000");
    text.replace(text.find("heldout_every"), 0,
                 "reading_share: 0.9\n  guided_attention { steps: 1000 subject_layer: 2 lookup_layer: 3 "
                 "subject_copy_weight: " + copy + " }\n  ");
    return Tiny(text);
  };
  const CompiledPretrain w = workflow("1");
  CHECK(w.guided_attention.Find(GuidedHeadKind::kSubject)->copy_weight == 1.0);
  CHECK(w.guided_attention.Find(GuidedHeadKind::kSubject)->copy_scale_layer == -1);  // at its write's own scale
  CHECK(w.guided_attention.Find(GuidedHeadKind::kLookup)->copy_weight == 0.0);
  CHECK(w.guided_attention.Find(GuidedHeadKind::kLookup)->copy_scale_layer == 3);  // the last layer's
  // Two countries' capitals, then a question on each in either order: an answer's line and its
  // question share the country's name.
  const auto document = [](uint64_t i) {
    const std::string country[2] = {InventedName(i), InventedName(i + 7)};
    const std::string capital[2] = {InventedName(i + 1), InventedName(i + 8)};
    std::string text;
    for (int c : {0, 1}) text += country[c] + " - Capital: " + capital[c] + "\n";
    for (int c : {int(i % 2), int(1 - i % 2)}) text += "Capital of " + country[c] + "?\nAnswer: " + capital[c] + "\n";
    return text;
  };
  const std::string run = RunOnDocuments(w, "subject", document);
  const std::vector<double> subject = MetricValues(run, "attention_subject");
  // Spread over the earlier positions its -log weight on the title's (or the question's) name is a
  // few nats; led, it falls.
  REQUIRE(subject.size() >= 3);
  CHECK(subject.front() > 1.0);
  CHECK(subject.back() < 0.5 * subject.front());
  CHECK(MetricValues(run, "attention_lookup").size() == subject.size());  // the lookup beside it, measured
  // What it writes from the name it looks at, read as logits, names that token: its cross-entropy
  // falls from about that of a guess among the vocabulary's tokens (by about 30% in these few
  // steps: the loss trains the head's value and output projections only). The lookup has none.
  const std::vector<double> carried = MetricValues(run, "subject_copy_loss");
  REQUIRE(carried.size() == subject.size());
  CHECK(carried.front() > 2.0);
  CHECK(carried.back() < 0.8 * carried.front());
  CHECK(MetricValues(run, "lookup_copy_loss").empty());
  // At a thousandth of the weight the same head's output hardly learns to.
  const std::vector<double> faint = MetricValues(RunOnDocuments(workflow("0.001"), "subject-faint", document),
                                                 "subject_copy_loss");
  REQUIRE(faint.size() == carried.size());
  CHECK(faint.back() > 1.2 * carried.back());
  // Read at its own scale the loss cannot see how loud the write is beside the stream it lands in;
  // read at the stream's scale (its layer's output where it looks) it can. In this tiny model the
  // stream is faint and the next-token loss grows both runs' writes (weighted 10, the copy loss
  // leads: 0.39 -> 0.84 of the stream's norm at its own scale, 0.41 -> 0.96 at the stream's, as
  // measured); a full model's stream is loud, where it matters (docs/language_models.md, "r25").
  const CompiledPretrain loud = workflow("10 subject_copy_at_stream_scale: true");
  CHECK(loud.guided_attention.Find(GuidedHeadKind::kSubject)->copy_scale_layer == 2);
  const std::vector<double> quiet_share =
      MetricValues(RunOnDocuments(workflow("10"), "subject-own-scale", document), "subject_write_share");
  const std::vector<double> loud_share =
      MetricValues(RunOnDocuments(loud, "subject-stream-scale", document), "subject_write_share");
  REQUIRE(quiet_share.size() == carried.size());
  REQUIRE(loud_share.size() == carried.size());
  INFO("write share, own scale " << quiet_share.front() << " -> " << quiet_share.back() << "; stream scale "
                                 << loud_share.front() << " -> " << loud_share.back());
  CHECK(loud_share.back() > 1.05 * quiet_share.back());
}

TEST_CASE("a run reports its reading documents' answer loss, and trains on it with a weight", "[pretrain][reading]") {
  std::string text = kTiny;
  text.replace(text.find("epochs: 3"), 9, "epochs: 1");
  text.replace(text.find("heldout_every"), 0, "reading_share: 0.5\n  ");
  // Answers the next-token loss hardly weighs: a name to copy from far back, after a long line.
  auto document = [](uint64_t i) {
    return "name: " + InventedName(i) + "; a b c d\nAnswer: " + InventedName(i) + "\n";
  };
  auto last_answer_loss = [&](const std::string& extra, const std::string& name) {
    std::string t = text;
    t.replace(t.find("heldout_every"), 0, extra);
    PretrainOptions o = Quiet(name);
    o.reading_document = document;
    std::ostringstream log;
    const PretrainResult r = Pretrain(Tiny(t), o, log);
    INFO(log.str());
    REQUIRE(r.finished);
    const std::vector<double> answer = MetricValues(o.out_dir, "answer_loss");
    REQUIRE(answer.size() >= 3);
    return answer.back();
  };
  const double reported = last_answer_loss("", "answers-reported");
  const double trained = last_answer_loss("answer_weight: 5\n  ", "answers-trained");
  CHECK(trained < reported);  // the same run and seed: only the weight differs
  std::string no_reading = kTiny;
  no_reading.replace(no_reading.find("heldout_every"), 0, "answer_weight: 1\n  ");
  CHECK_THROWS_WITH(Tiny(no_reading), Catch::Contains("tiny.textproto:10:") &&
                                          Catch::Contains("answer_weight needs reading_share above 0"));
  std::string negative = text;
  negative.replace(negative.find("heldout_every"), 0, "answer_weight: -1\n  ");
  CHECK_THROWS_WITH(Tiny(negative), Catch::Contains("answer_weight is 0 (reported only) or more"));
  std::string facts = kTiny;
  facts.replace(facts.find("heldout_every"), 0, "reading_fact_share: 0.5\n  ");
  CHECK_THROWS_WITH(Tiny(facts), Catch::Contains("tiny.textproto:10:") &&
                                     Catch::Contains("reading_fact_share is a share of the reading documents"));
  facts.replace(facts.find("reading_fact_share"), 0, "reading_share: 0.3\n  ");
  CHECK(Tiny(facts).reading_fact_share == 0.5);
  facts.replace(facts.find("reading_fact_share: 0.5"), 23, "reading_fact_share: 0.9");
  CHECK_THROWS_WITH(Tiny(facts), Catch::Contains("between 0 and 0.8"));
}

TEST_CASE("replicas share each batch and train as one copy of the model does", "[pretrain][replicas]") {
  std::string text = kTiny;
  text.replace(text.find("layers: 1"), 9, "layers: 2");
  ModelConfig config = Tiny(text).model;
  config.vocab_size = 512;
  config.num_roles = 1;
  const int batch = 8, length = 32;
  Rng rng(4);
  std::vector<std::vector<int>> batches(4);
  for (auto& b : batches) {
    for (int i = 0; i < batch * (length + 1); ++i) b.push_back(rng.Below(64));  // repeats, for the induction targets
  }
  GuidedAttention guide;
  AnswerLoss answers;  // after token 5, up to token 7: answers in every row of random tokens below 64
  answers.cue = {5};
  answers.end = 7;
  answers.weight = 2.0;
  // One copy on one thread, then 2 and 3 (uneven shares: 3, 3, 2 rows) replicas of one thread each;
  // guided attention on the even steps, the answer loss on the odd ones.
  std::vector<std::vector<PretrainStep>> steps;
  std::vector<double> held_out;
  const int blas_threads = BlasThreads();
  for (int replicas : {1, 2, 3}) {
    Pretrainer model(config, 9, replicas, replicas);
    steps.emplace_back();
    for (size_t k = 0; k + 1 < batches.size(); ++k) {
      steps.back().push_back(model.Step(batches[k], batch, length, 1e-2, k % 2 == 0 ? &guide : nullptr,
                                        k % 2 == 1 ? &answers : nullptr));
    }
    held_out.push_back(model.Loss(batches.back(), batch, length));
  }
  CHECK(BlasThreads() == blas_threads);  // the replicas' one-thread products end with them
  for (size_t r = 1; r < steps.size(); ++r) {
    for (size_t k = 0; k < steps[0].size(); ++k) {
      CHECK(steps[r][k].loss == Approx(steps[0][k].loss).epsilon(1e-5));
      CHECK(steps[r][k].grad_norm == Approx(steps[0][k].grad_norm).epsilon(1e-4));
      if (k % 2 == 0) {
        REQUIRE(steps[r][k].attention.size() == 2);  // previous, induction
        CHECK(steps[r][k].attention[0] == Approx(steps[0][k].attention[0]).epsilon(1e-5));
        CHECK(steps[r][k].attention[1] == Approx(steps[0][k].attention[1]).epsilon(1e-5));
        CHECK(std::isnan(steps[r][k].answer_loss));
      } else {
        CHECK(steps[r][k].attention.empty());
        CHECK(steps[r][k].answer_loss == Approx(steps[0][k].answer_loss).epsilon(1e-5));
      }
    }
    // After three updates the copies hold the same weights: the same held-out loss.
    CHECK(held_out[r] == Approx(held_out[0]).epsilon(1e-5));
  }
  CHECK(steps[0].back().loss < steps[0].front().loss);  // and they did learn
  CHECK_THROWS_AS(Pretrainer(config, 9, 2, 0), ModelError);
  std::string too_many = kTiny;
  too_many.replace(too_many.find("heldout_every"), 0, "replicas: 9\n  ");
  CHECK_THROWS_WITH(Tiny(too_many),
                    Catch::Contains("tiny.textproto:") && Catch::Contains("replicas 9 exceeds batch 8"));
}

TEST_CASE("guided attention that cannot work is refused at its line", "[pretrain][guided][config]") {
  std::string one_layer = kTiny;
  one_layer.replace(one_layer.find("heldout_every"), 0, "guided_attention { steps: 10 }\n  ");
  CHECK_THROWS_WITH(Tiny(one_layer),
                    Catch::Contains("tiny.textproto:10:") && Catch::Contains("before induction_layer"));
  std::string head = kTiny;
  head.replace(head.find("layers: 1"), 9, "layers: 2");
  head.replace(head.find("heldout_every"), 0, "guided_attention { steps: 10 head: 2 }\n  ");
  CHECK_THROWS_WITH(Tiny(head), Catch::Contains("head 2 is not one of the model's 2 heads"));
  std::string gpt2 = kTiny;
  const std::string llama =
      "llama { hidden_size: 32 intermediate_size: 64 layers: 1 heads: 2 kv_heads: 1 max_len: 64 }";
  gpt2.replace(gpt2.find(llama), llama.size(), "gpt2 { hidden_size: 32 layers: 2 heads: 2 max_len: 64 }");
  gpt2.replace(gpt2.find("heldout_every"), 0, "guided_attention { steps: 10 }\n  ");
  CHECK_THROWS_WITH(Tiny(gpt2), Catch::Contains("needs a llama model"));
  std::string lookup = kTiny;
  lookup.replace(lookup.find("layers: 1"), 9, "layers: 2");
  lookup.replace(lookup.find("heldout_every"), 0,
                 "reading_share: 0.2\n  guided_attention { steps: 10 lookup_layer: 1 }\n  ");
  CHECK_THROWS_WITH(Tiny(lookup), Catch::Contains("lookup_layer (1) is -1 (off) or a layer after induction_layer"));
  lookup.replace(lookup.find("layers: 2"), 9, "layers: 3");
  lookup.replace(lookup.find("lookup_layer: 1"), 15, "lookup_layer: 2");
  CHECK_NOTHROW(Tiny(lookup));
  lookup.replace(lookup.find("lookup_layer: 2"), 15, "lookup_layer: 2 lookup_weight: 0");
  CHECK_THROWS_WITH(Tiny(lookup), Catch::Contains("lookup_weight must be positive"));
  lookup.replace(lookup.find(" lookup_weight: 0"), 17, " lookup_copy_weight: -1");
  CHECK_THROWS_WITH(Tiny(lookup), Catch::Contains("lookup_copy_weight is 0 (off) or more"));
  std::string copy_without_lookup = lookup;
  copy_without_lookup.replace(copy_without_lookup.find("lookup_layer: 2 lookup_copy_weight: -1"), 38,
                              "lookup_copy_weight: 1");
  CHECK_THROWS_WITH(Tiny(copy_without_lookup), Catch::Contains("tiny.textproto:11:") &&
                                                   Catch::Contains("lookup_copy_weight leads the lookup head's "
                                                                   "output: lookup_layer is -1 (off)"));
  lookup.replace(lookup.find(" lookup_copy_weight: -1"), 23, "");
  lookup.replace(lookup.find("reading_share: 0.2"), 18, "reading_share: 0");
  CHECK_THROWS_WITH(Tiny(lookup), Catch::Contains("needs reading_share above 0"));
  std::string line_start = kTiny;
  line_start.replace(line_start.find("layers: 1"), 9, "layers: 3");
  line_start.replace(line_start.find("heldout_every"), 0, "guided_attention { steps: 10 line_start_layer: 1 }\n  ");
  CHECK_THROWS_WITH(Tiny(line_start), Catch::Contains("tiny.textproto:10:") &&
                                          Catch::Contains("line_start_layer (1) is -1 (off) or one of the model's 3 "
                                                          "layers that no other guided head uses"));
  line_start.replace(line_start.find("line_start_layer: 1"), 19, "line_start_layer: 2");
  CHECK(Tiny(line_start).guided_attention.Find(GuidedHeadKind::kLineStart)->layer == 2);
  std::string subject = kTiny;
  subject.replace(subject.find("layers: 1"), 9, "layers: 4");
  subject.replace(subject.find("heldout_every"), 0,
                  "reading_share: 0.2\n  guided_attention { steps: 10 subject_layer: 2 }\n  ");
  CHECK_THROWS_WITH(Tiny(subject), Catch::Contains("tiny.textproto:11:") &&
                                       Catch::Contains("subject_layer (2) is -1 (off) or a layer before lookup_layer"));
  subject.replace(subject.find("subject_layer: 2"), 16, "subject_layer: 1 lookup_layer: 3");
  CHECK_THROWS_WITH(Tiny(subject), Catch::Contains("subject_layer (1) is -1 (off) or one of the model's 4 layers that "
                                                   "no other guided head uses (previous_layer 0, induction_layer 1, "
                                                   "lookup_layer 3)"));
  subject.replace(subject.find("subject_layer: 1"), 16, "subject_layer: 2");
  CHECK(Tiny(subject).guided_attention.Find(GuidedHeadKind::kSubject)->layer == 2);
  std::string carries = subject;
  carries.replace(carries.find("subject_layer: 2"), 16, "subject_layer: 2 subject_copy_weight: -1");
  CHECK_THROWS_WITH(Tiny(carries), Catch::Contains("subject_copy_weight is 0 (off) or more"));
  const std::string negative = "subject_layer: 2 subject_copy_weight: -1";
  carries.replace(carries.find(negative), negative.size(), "subject_copy_weight: 1");
  CHECK_THROWS_WITH(Tiny(carries), Catch::Contains("subject_copy_weight leads the subject head's output: subject_layer "
                                                   "is -1 (off)"));
  std::string louder = subject;
  louder.replace(louder.find("subject_layer: 2"), 16, "subject_layer: 2 subject_copy_at_stream_scale: true");
  CHECK_THROWS_WITH(Tiny(louder), Catch::Contains("subject_copy_at_stream_scale changes a copy loss that is off: "
                                                  "subject_copy_weight is 0"));
  louder.replace(louder.find("subject_copy_at_stream_scale: true"), 34, "lookup_copy_reaches_stream: true");
  CHECK_THROWS_WITH(Tiny(louder), Catch::Contains("lookup_copy_reaches_stream changes a copy loss that is off: "
                                                  "lookup_copy_weight is 0"));
  // The reading heads' own steps: with a reading head, and ending after they start.
  std::string steps = subject;
  steps.replace(steps.find("subject_layer: 2"), 16, "subject_layer: 2 reading_from_step: 10");
  CHECK_THROWS_WITH(Tiny(steps), Catch::Contains("tiny.textproto:11:") &&
                                     Catch::Contains("stops at step 10 (reading_until_step 0: `steps`), not after it "
                                                     "starts (reading_from_step 10)"));
  steps.replace(steps.find("reading_from_step: 10"), 21, "reading_from_step: 5 reading_until_step: 40");
  const GuidedAttention guide = Tiny(steps).guided_attention;
  CHECK((guide.heads[0].from_step == 0 && guide.heads[0].until_step == 10));
  CHECK((guide.Find(GuidedHeadKind::kSubject)->from_step == 5 && guide.Find(GuidedHeadKind::kSubject)->until_step == 40));
  CHECK((guide.Find(GuidedHeadKind::kLookup)->from_step == 5 && guide.Find(GuidedHeadKind::kLookup)->until_step == 40));
  std::string no_reading_head = kTiny;
  no_reading_head.replace(no_reading_head.find("layers: 1"), 9, "layers: 2");
  no_reading_head.replace(no_reading_head.find("heldout_every"), 0,
                          "guided_attention { steps: 10 reading_until_step: 20 }\n  ");
  CHECK_THROWS_WITH(Tiny(no_reading_head), Catch::Contains("need a reading head: lookup_layer is -1 (off)"));
}

TEST_CASE("a first lesson reads its own documents for its first steps and the mix after them", "[pretrain][reading]") {
  std::string text = kTiny;
  text.replace(text.find("epochs: 3"), 9, "epochs: 1");
  text.replace(text.find("heldout_every"), 0, "reading_share: 0.3\n  ");
  // The lesson's documents have answers, the mix's none: the answer loss is reported only while the lesson runs.
  auto run = [&](const std::string& t, const std::string& name, std::ostringstream* log) {
    PretrainOptions o = Quiet(name);
    o.reading_document = [](uint64_t i) { return "name: " + InventedName(i) + "; a b c d\n"; };
    o.first_lesson_document = [](uint64_t i) { return "name: " + InventedName(i) + "\nAnswer: " + InventedName(i); };
    const PretrainResult r = Pretrain(Tiny(t), o, *log);
    INFO(log->str());
    REQUIRE(r.finished);
    return std::make_pair(r, o.out_dir);
  };
  std::ostringstream lesson_log, plain_log;
  std::string with_lesson = text;
  with_lesson.replace(with_lesson.find("heldout_every"), 0, "first_lesson { steps: 20 }\n  ");
  const auto [lesson, dir] = run(with_lesson, "first-lesson", &lesson_log);
  std::vector<int> with_answers, without;
  for (const nlohmann::json& line : Metrics(dir)) {
    (line.contains("answer_loss") ? with_answers : without).push_back(line["step"]);
  }
  CHECK(with_answers == std::vector<int>{10, 20});
  REQUIRE_FALSE(without.empty());
  CHECK(without.front() == 30);
  CHECK_THAT(lesson_log.str(), Catch::Contains("first lesson ") && Catch::Contains(" reading documents mixed in") &&
                                   Catch::Contains("the first 20 the first lesson"));
  // Its steps come out of max_tokens: the mix has 20 steps' tokens fewer than a run without the lesson.
  std::string fewer = text;
  fewer.replace(fewer.find("max_tokens: 24000"), 17, "max_tokens: 18880");  // 24000 - 20 x 8 x 32
  const auto [plain, plain_dir] = run(fewer, "first-lesson-none", &plain_log);
  (void)plain_dir;
  CHECK(lesson.total_steps == plain.total_steps + 20);
  // Refused at its line: without reading documents, or with steps that take all of max_tokens.
  CHECK_THROWS_WITH(Tiny(WithPretrainFields("first_lesson { steps: 20 }\n  ")),
                    Catch::Contains("tiny.textproto:10:") && Catch::Contains("needs reading_share above 0"));
  std::string all = with_lesson;
  all.replace(all.find("steps: 20"), 9, "steps: 100");
  CHECK_THROWS_WITH(Tiny(all), Catch::Contains("take all of max_tokens 24000"));
  all.replace(all.find("steps: 100"), 10, "steps: 5 reading_share: 0.95");
  CHECK_THROWS_WITH(Tiny(all), Catch::Contains("reading_share is between 0.1 and 0.9"));
}
