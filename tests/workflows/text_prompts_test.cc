// Games in natural language: a model with a tokenizer reads a game's text view
// as a ChatML conversation and answers in words the game parses; the model
// trained in Red-Black, with the tokenizer its checkpoint carries, loads as a
// role model in split_facts; workflows that cannot work that way are refused.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "core/models/model_pool.h"
#include "core/text/bpe_trainer.h"
#include "core/text/tokenizer_folder.h"
#include "tests/test_support.h"
#include "tests/workflows/text_model_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/prompt_codec.h"
#include "workflows/run/train_run.h"

using namespace troupe;
namespace fs = std::filesystem;
using testing::GameTexts;
using testing::TinyTokenizer;

namespace {

std::string Temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("troupe-text-" + name);
  fs::remove_all(p);
  return p.string();
}

// Team A of a tiny Red-Black game on one language model reading text.
std::string RedBlackText(const std::string& trainer) {
  return testing::ReadingText(testing::TinyRedBlack(3, "trainer { guided_choices: true " + trainer + " }"),
                              "transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 }");
}

CompiledWorkflow Compile(const std::string& text) { return CompileWorkflow(ParseWorkflowText(text, "t.textproto")); }

std::string ErrorOf(const std::string& text) {
  try {
    Compile(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TrainResult Run(const CompiledWorkflow& w, const std::string& dir, bool final_eval) {
  TrainOptions o;
  o.out_dir = dir;
  o.progress = false;
  o.final_eval = final_eval;
  std::ostringstream sink;
  return Train(w, o, sink);
}

}  // namespace

TEST_CASE("a text codec wraps a game's text view in ChatML and reads answers back as words", "[text]") {
  const CompiledWorkflow w = Compile(RedBlackText("iterations: 1"));
  REQUIRE(w.rollout.codecs.size() == 1);
  const PromptCodec& codec = *w.rollout.codecs[0];
  REQUIRE(codec.reads_text());
  const Tokenizer tokenizer = LoadTokenizer(TinyTokenizer());
  CHECK(w.models[0].vocab_size == tokenizer.vocab_size());
  CHECK(w.models[0].eos_token == *tokenizer.TokenId("<|im_end|>"));
  CHECK(DescribeWorkflow(w).find("text prompts") != std::string::npos);

  const std::vector<int> prompt = codec.TextPrompt(0, "Vote red or black.");
  CHECK(codec.Show(prompt) ==
        "<|im_start|>system\nYou are a.<|im_end|>\n<|im_start|>user\nVote red or black.<|im_end|>\n"
        "<|im_start|>assistant\n");
  // An answer of words ends with <|im_end|> and reads back as the same words.
  const std::vector<int> answer = codec.Answer({"black", "we", "trust"}, 3);
  CHECK(answer.back() == codec.eos());
  CHECK(codec.Words(answer) == std::vector<std::string>{"black", "we", "trust"});
  CHECK(static_cast<int>(answer.size()) <= codec.MaxNewTokens(3));
  // Guided choices: one first token per option, each the start of that option's answer.
  const std::vector<int> first = codec.FirstTokens({"red", "black"});
  REQUIRE(first.size() == 2);
  CHECK(first[0] == codec.Answer({"red"}, 1).front());
  CHECK(first[1] == codec.Answer({"black"}, 1).front());
  CHECK(WordsOfText("Black, we SHOULD trust them!\n+6 #3") ==
        std::vector<std::string>{"black", "we", "should", "trust", "them", "+6", "#3"});
}

TEST_CASE("a language model trained in Red-Black from text prompts loads as a role model in split_facts",
          "[text][training][llama]") {
  const std::string red_black_dir = Temp("red-black");
  const TrainResult r = Run(Compile(RedBlackText("iterations: 2 episodes_per_iteration: 4 checkpoint_every: 2 "
                                                 "eval_episodes: 4")),
                            red_black_dir, true);
  CHECK(r.iterations == 2);
  REQUIRE(r.after);
  // Guided choices hold a vote to an option's first token, and this vocabulary holds each option whole.
  CHECK(r.after->metrics.at("invalid_vote") == 0.0);
  const auto checkpoint = FindCheckpoint(red_black_dir);
  REQUIRE(checkpoint);
  const std::string model_dir = *checkpoint + "/model-m";
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
    INFO(file);
    CHECK(fs::exists(fs::path(model_dir) / file));
  }

  const std::string split_facts = R"(name: "transfer" seed: 2
game { name: "split_facts" param { name: "entities" int: 4 } param { name: "values" int: 4 } param { name: "asks" int: 1 } }
model { name: "lm" hf_dir: ")" + model_dir + R"(" optimizer { lr: 0.001 } }
role { name: "a" seats: "a" model: "lm" }
role { name: "b" seats: "b" model: "lm" }
reward { level: TRAJECTORY signal: "correct" }
credit { group_size: 4 }
trainer { iterations: 1 episodes_per_iteration: 4 guided_choices: true }
)";
  const CompiledWorkflow w = Compile(split_facts);
  REQUIRE(w.rollout.codecs[0]->reads_text());  // the tokenizer came with the checkpoint
  CHECK(w.models[0].vocab_size == LoadTokenizer(TinyTokenizer()).vocab_size());
  const std::string split_dir = Temp("split-facts");
  CHECK(Run(w, split_dir, false).iterations == 1);
  std::ifstream metrics(split_dir + "/metrics.jsonl");
  std::string line;
  REQUIRE(std::getline(metrics, line));
  const double accuracy = nlohmann::json::parse(line).at("game/accuracy").get<double>();
  CHECK(accuracy >= 0.0);
  CHECK(accuracy <= 1.0);
}

TEST_CASE("text prompts are refused where they cannot work, at the field that asks for them", "[text][config]") {
  const std::string ok = RedBlackText("iterations: 1");
  REQUIRE(ErrorOf(ok).empty());
  const std::string tokenizer_field = "tokenizer: \"" + TinyTokenizer() + "\"";
  SECTION("a tokenizer that is not there") {
    std::string text = ok;
    text.replace(text.find(tokenizer_field), tokenizer_field.size(), "tokenizer: \"/nonexistent/tokenizer.json\"");
    const std::string e = ErrorOf(text);
    CHECK_THAT(e, Catch::StartsWith("t.textproto:5:"));
    CHECK_THAT(e, Catch::Contains("/nonexistent/tokenizer.json"));
  }
  SECTION("a prompt longer than the model's max_len, counted in tokens") {
    std::string text = ok;
    text.replace(text.find("max_len: 512"), 12, "max_len: 40");
    CHECK_THAT(ErrorOf(text), Catch::Contains("max_len 40 is too short for role 'a'") &&
                                  Catch::Contains("tokens"));
  }
  SECTION("latent messages") {
    const std::string e = ErrorOf(ok + "channel { from: \"a\" to: \"a\" mode: HYBRID }\n");
    CHECK_THAT(e, Catch::StartsWith("t.textproto:5:"));
    CHECK_THAT(e, Catch::Contains("latent and hybrid messages in games need word-vocabulary models"));
  }
}

TEST_CASE("a text model starts from a trained run (init_from) with its weights, and another tokenizer is refused",
          "[text][init][llama]") {
  const std::string source = Temp("init-source");
  REQUIRE(Run(Compile(RedBlackText("iterations: 1 episodes_per_iteration: 4 checkpoint_every: 1")), source, false)
              .iterations == 1);
  const CompiledWorkflow src = Compile(testing::ReadFile(source + "/workflow.resolved.textproto"));
  ModelPool trained(src.models, src.seed);
  LoadCheckpoint(*FindCheckpoint(source), [&](const std::string& d) { trained.Load(d); });
  const uint64_t digest = trained.ParameterDigest(0);
  CHECK(ModelPool(src.models, src.seed).ParameterDigest(0) != digest);  // the update moved it
  // The same model started from the run: the trained weights, whatever its own seed.
  std::string text = RedBlackText("iterations: 1");
  const std::string tokenizer = "tokenizer: \"" + TinyTokenizer() + "\"";
  const std::string from = " init_from: \"" + source + "\"";
  text.replace(text.find(tokenizer), tokenizer.size(), tokenizer + from);
  const CompiledWorkflow started = Compile(text);
  REQUIRE(started.models[0].init);
  CHECK(ModelPool(started.models, started.seed + 1).ParameterDigest(0) == digest);
  // Another tokenizer cannot read the rows the checkpoint learnt: refused at init_from.
  BpeTrainerOptions o;
  o.vocab_size = 300;  // fewer merges than TinyTokenizer's
  BpeTrainer other(o);
  other.Add(GameTexts());
  const std::string other_dir = Temp("other-tokenizer");
  fs::create_directories(other_dir);
  WriteTokenizerFolder(Tokenizer(other.Train()), other_dir);
  text = RedBlackText("iterations: 1");
  text.replace(text.find(tokenizer), tokenizer.size(), "tokenizer: \"" + other_dir + "\"" + from);
  CHECK_THAT(ErrorOf(text), Catch::StartsWith("t.textproto:5:") && Catch::Contains("another tokenizer"));
}
