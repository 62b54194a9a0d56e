// Node-driven pipelines: the reference, template and condition languages,
// answer parsers, pipeline mistakes refused at file:line:col, tools batched
// per tick with retries and fail-open, and a QA pipeline over the real
// Factbook search index on a small text model: one request per model per
// tick whatever the number of questions, and oracle demonstrations that
// retrieve and answer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <set>

#include "core/base/errors.h"
#include "core/pipeline_task.h"
#include "core/text/bpe_trainer.h"
#include "core/text/tokenizer.h"
#include "core/text/tokenizer_folder.h"
#include "games/qa/answer_scoring.h"
#include "games/qa/factbook_qa.h"
#include "games/qa/qa_dataset.h"
#include "tests/test_support.h"
#include "tests/workflows/config_test_support.h"
#include "tests/workflows/direct_policy.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/serve_specs.h"
#include "workflows/config/output_parser.h"
#include "workflows/config/pipeline_expr.h"
#include "workflows/run/evaluate.h"
#include "workflows/rollout/pipeline_credit.h"
#include "workflows/rollout/rollout.h"
#include "workflows/report/spread.h"
#include "workflows/runtime/worker_hub.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

using troupe::testing::At;
using troupe::testing::ErrorOf;

// Two nodes: "plan" (keys raw, items, end) and "look" (keys raw, docs).
RefScope TwoNodes() {
  RefScope s;
  s.node = [](const std::string& n) { return n == "plan" ? 0 : n == "look" ? 1 : -1; };
  s.keys = [](int n) {
    return n == 0 ? std::vector<std::string>{"raw", "items", "end"} : std::vector<std::string>{"raw", "docs"};
  };
  return s;
}

std::vector<NodeOutput> Outputs() {
  std::vector<NodeOutput> o(2);
  o[0].ran = o[0].valid = true;
  o[0].raw = "{\"items\": [\"a\", \"b\"]}";
  o[0].values["items"] = {"a", "b"};
  o[1].ran = true;
  o[1].values["docs"] = {"3"};
  return o;
}

// A tool that counts its batched calls and fails its first `fail_batches` of them.
std::atomic<int> g_tool_batches{0};
class CountingTool : public PipelineTool {
 public:
  explicit CountingTool(const Params& p) : fail_(static_cast<int>(p.Int("fail_batches"))) {}
  std::vector<std::string> Keys() const override { return {"echo"}; }
  std::vector<ToolResult> Run(const std::vector<ToolCall>& calls) const override {
    if (g_tool_batches++ < fail_) throw Error("the service is down");
    std::vector<ToolResult> out;
    for (const auto& c : calls) out.push_back({true, "", {{"echo", c.inputs}}});
    return out;
  }

 private:
  int fail_;
};
TROUPE_REGISTER_TOOL("test_counting_tool", (std::vector<ParamSpec>{{"fail_batches", ParamType::kInt, int64_t{0}, "", 0, 100}}),
                     CountingTool);

// reverse_digits: a proposer, then the counting tool on its answer, then the end.
std::string ToolPipeline(const std::string& tool_lines) {
  return R"(name: "p" seed: 3
pipeline {
  task: "reverse_digits"
  node { name: "propose" role: "proposer" max_tokens: 3 prompt: "{question}" }
  node { name: "check" kind: TOOL_NODE tool: "test_counting_tool" input: "propose.text" )" +
         tool_lines + R"( }
  node { name: "done" kind: END_NODE }
  edge { from: "propose" to: "check" }
  edge { from: "check" to: "done" }
  start: "propose"
  answer: "propose"
}
model { name: "m" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 32 } }
role { name: "proposer" model: "m" }
reward { level: TRAJECTORY signal: "score" }
)";
}



// Training episodes of `w` through a model worker, one query each; with
// `oracle`, the oracle answers in every trained role (demonstrations).
RolloutBatch HubRollout(const CompiledWorkflow& w, int episodes, uint64_t seed, bool oracle) {
  WorkerHub hub(MakeHubSpec(w));
  Rollout rollout(w.rollout, hub);
  Rng rng(seed);
  RolloutOptions o;
  o.episodes = episodes;
  o.group_size = 1;
  o.scripted_for_trained = oracle;
  if (oracle) o.teacher = "oracle";
  return rollout.Run(o, rng);
}

RolloutBatch OracleRollout(const CompiledWorkflow& w, int episodes, uint64_t seed) {
  return HubRollout(w, episodes, seed, true);
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  return text;
}

// A small BPE vocabulary learnt on the Factbook QA set's questions and a slice of its passages.
const std::string& QaTokenizer() {
  static const std::string dir = [] {
    const std::string data = qa::EnsureDefaultQaData();
    BpeTrainerOptions o;
    o.vocab_size = 700;
    BpeTrainer trainer(o);
    for (const auto& q : qa::ReadQuestions(data + "/train.jsonl")) trainer.Add(q.question + " " + q.answers.front());
    const auto passages = qa::ReadPassages(data + "/passages.jsonl");
    for (size_t i = 0; i < passages.size(); i += 20) trainer.Add(passages[i].title + ": " + passages[i].text);
    const std::string d = (fs::temp_directory_path() / "troupe-pipeline-tokenizer").string();
    fs::create_directories(d);
    WriteTokenizerFolder(Tokenizer(trainer.Train()), d);
    return d;
  }();
  return dir;
}

// qa_decompose's graph on a tiny text model.
std::string QaDecompose(int answer_tokens) {
  return R"(name: "qa" seed: 5
pipeline {
  task: "factbook_qa"
  node { name: "decompose" role: "decomposer" max_tokens: 96
         prompt: "Write search queries as JSON {{\"sub_queries\": [...]}}.\nQuestion: {question}"
         parser { kind: JSON_KEY key: "sub_queries" max_items: 3 } }
  node { name: "retrieve" kind: TOOL_NODE tool: "retriever" input: "decompose.sub_queries"
         param { name: "top_k" int: 2 } param { name: "max_docs" int: 4 } param { name: "doc_chars" int: 80 } }
  node { name: "answer" role: "answerer" max_tokens: )" +
         std::to_string(answer_tokens) + R"(
         prompt: "Passages:\n{retrieve.docs}\nQuestion: {question}" parser { kind: TAG open: "<answer>" } }
  node { name: "done" kind: END_NODE }
  edge { from: "decompose" to: "retrieve" when: "count(decompose.sub_queries) >= 1" }
  edge { from: "decompose" to: "answer" when: "count(decompose.sub_queries) == 0" }
  edge { from: "retrieve" to: "answer" }
  edge { from: "answer" to: "done" }
  start: "decompose"
  answer: "answer"
}
model { name: "m" llama { hidden_size: 32 heads: 2 kv_heads: 1 layers: 1 intermediate_size: 64 max_len: 384 }
        tokenizer: ")" + QaTokenizer() + R"(" }
role { name: "decomposer" model: "m" }
role { name: "answerer" model: "m" }
reward { level: TRAJECTORY signal: "score" }
reward { level: ROLE signal: "format" weight: 0.5 }
trainer { sft { episodes: 8 teacher: "oracle" } }
)";
}

// qa_decompose's graph whose answerer reads the decomposer's vectors across a `mode` channel.
std::string QaDecomposeLatent(const std::string& mode, const std::string& answer_prompt = "{decompose.latents}\\nPassages:\\n{retrieve.docs}\\nQuestion: {question}") {
  std::string text = Replace(QaDecompose(8), "prompt: \"Passages:\\n{retrieve.docs}\\nQuestion: {question}\"",
                             "prompt: \"" + answer_prompt + "\"");
  if (!mode.empty()) text += "channel { from: \"decomposer\" to: \"answerer\" mode: " + mode + " latent_vectors: 3 }\n";
  return text;
}

}  // namespace

TEST_CASE("conditions compare counts, text and numbers, and test existence and validity", "[pipeline]") {
  const RefScope scope = TwoNodes();
  const std::vector<NodeOutput> out = Outputs();
  auto holds = [&](const std::string& text) { return Condition(text, scope).Holds(out); };
  CHECK(holds("count(plan.items) >= 2"));
  CHECK_FALSE(holds("count(plan.items) > 2"));
  CHECK(holds("plan.items == 'a'"));
  CHECK(holds("plan.items.1 == 'b'"));
  CHECK(holds("look.docs < 10"));  // numeric, not text, comparison
  CHECK(holds("exists(plan.items) and not exists(plan.end)"));
  CHECK(holds("plan.end or (valid(plan) and not valid(look))"));
  CHECK(holds(""));  // no condition: always
  CHECK(Condition("count(plan.items) >= 1", scope).refs().front().node == 0);

  auto error = [&](const std::string& text) -> std::pair<size_t, std::string> {
    try {
      Condition c(text, scope);
    } catch (const PipelineExprError& e) {
      return {e.offset(), e.what()};
    }
    return {std::string::npos, ""};
  };
  CHECK(error("count(plam.items) >= 1") == std::pair<size_t, std::string>{6, "unknown node 'plam'"});
  CHECK(error("plan.item == 'a'").first == 5);
  CHECK_THAT(error("plan.item == 'a'").second, Catch::Contains("has no key 'item'") && Catch::Contains("items"));
  CHECK_THAT(error("plan.items == 'a").second, Catch::Contains("not closed"));
  CHECK_THAT(error("count(plan.items)").second, Catch::Contains("compares"));
  CHECK_THAT(error("valid(plan.items)").second, Catch::Contains("takes a node"));
  CHECK_THAT(error("plan.items == 'a' xor").second, Catch::Contains("unexpected"));
}

TEST_CASE("templates fill the question and earlier outputs", "[pipeline]") {
  const RefScope scope = TwoNodes();
  PromptTemplate t("Q: {question}\n{plan.items}|{plan.items.1}|{look.docs.5}|{{literal}}", scope);
  CHECK(t.Render("why?", Outputs()) == "Q: why?\na\nb|b||{literal}");
  CHECK(t.refs().size() == 3);
  CHECK_THROWS_AS(PromptTemplate("{nobody}", scope), PipelineExprError);
  CHECK_THROWS_AS(PromptTemplate("{plan", scope), PipelineExprError);
  CHECK_THROWS_AS(PromptTemplate("{plan.items.x}", scope), PipelineExprError);
}

TEST_CASE("parsers read tags, JSON keys, regexes and markers, and write what they read", "[pipeline]") {
  config::ParserSpec tag;
  tag.set_kind(config::TAG);
  tag.set_open("<search>");
  tag.add_marker("<end>");
  tag.set_max_items(3);
  const OutputParser search(tag, "");
  CHECK(search.output_key() == "search");
  NodeOutput o = search.Parse("I will look: <search> capital of Chad </search>");
  CHECK(o.valid);
  CHECK(o.values.at("search") == std::vector<std::string>{"capital of Chad"});
  o = search.Parse("nothing more <end>");
  CHECK(o.valid);
  CHECK(o.values.count("end") == 1);
  CHECK_FALSE(search.Parse("<search>unclosed").valid);
  CHECK(search.Parse(search.Format({"x", "y"})).values.at("search") == std::vector<std::string>{"x", "y"});

  config::ParserSpec alternatives;
  alternatives.set_kind(config::TAG);
  alternatives.set_open("<update>|<add>");
  alternatives.set_max_items(3);
  const OutputParser update(alternatives, "evidence");
  CHECK(update.Parse("<add>b</add> then <update>a</update>").values.at("evidence") == std::vector<std::string>{"b", "a"});
  CHECK(update.Format({"x"}) == "<update>x</update>");

  config::ParserSpec json;
  json.set_kind(config::JSON_KEY);
  json.set_key("sub_queries");
  json.set_max_items(2);
  const OutputParser queries(json, "");
  o = queries.Parse("sure: {\"sub_queries\": [\"a\", \"b\", \"c\"]} done");
  CHECK(o.values.at("sub_queries") == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(queries.Parse("{\"sub_queries\": 3}").valid);
  CHECK_FALSE(queries.Parse("{not json").valid);
  CHECK(queries.Parse(queries.Format({"q"})).values.at("sub_queries") == std::vector<std::string>{"q"});

  config::ParserSpec regex;
  regex.set_kind(config::REGEX);
  regex.set_pattern("answer is (\\w+)");
  regex.set_max_items(1);
  CHECK(OutputParser(regex, "ans").Parse("the answer is Bern").values.at("ans") == std::vector<std::string>{"Bern"});
  regex.set_pattern("(unclosed");
  CHECK_THROWS_WITH(OutputParser(regex, ""), Catch::Contains("not a regular expression"));
}

TEST_CASE("pipeline mistakes are refused at the file, line and column that make them", "[pipeline][config]") {
  const std::string ok = ToolPipeline("");
  REQUIRE(ErrorOf(ok).empty());
  SECTION("an unknown node in a condition") {
    const std::string text = Replace(ok, "edge { from: \"check\" to: \"done\" }",
                                     "edge { from: \"check\" to: \"done\" when: \"exists(chek.echo)\" }");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 8, "chek.echo")) && Catch::Contains("unknown node 'chek'"));
  }
  SECTION("an unknown key in a template") {
    const std::string text = Replace(ok, "prompt: \"{question}\"", "prompt: \"{question} {check.ech}\"");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 4, "ech}")) && Catch::Contains("has no key 'ech'"));
  }
  SECTION("a tool's input from a node that cannot precede it") {
    const std::string text = Replace(ok, "input: \"propose.text\"", "input: \"done\"");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 5, "done\"")) && Catch::Contains("cannot run before it"));
  }
  SECTION("a template reading a node that only runs later") {
    const std::string text = Replace(ok, "prompt: \"{question}\"", "prompt: \"{check.echo}\"");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 4, "check.echo")) && Catch::Contains("no path from 'check'"));
  }
  SECTION("a parser on a tool node") {
    const std::string text = ToolPipeline("parser { kind: TAG open: \"<x>\" }");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 5, "parser")) && Catch::Contains("belongs to role nodes"));
  }
  SECTION("a cycle without max_steps") {
    const std::string text = Replace(ok, "edge { from: \"check\" to: \"done\" }",
                                     "edge { from: \"check\" to: \"propose\" when: \"check.echo == '1'\" }\n"
                                     "  edge { from: \"check\" to: \"done\" }");
    CHECK_THAT(ErrorOf(text), Catch::Contains("cycle but no max_steps"));
    CHECK(ErrorOf(Replace(text, "answer: \"propose\"", "answer: \"propose\" max_steps: 6")).empty());
  }
  SECTION("a bad parser") {
    const std::string text = Replace(ok, "prompt: \"{question}\"", "prompt: \"{question}\" parser { kind: JSON_KEY }");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 4, "parser")) && Catch::Contains("needs `key`"));
  }
  SECTION("an oracle node that is no role node, or the answer node") {
    const std::string tool = Replace(ok, "answer: \"propose\"", "answer: \"propose\" oracle: \"check\"");
    CHECK_THAT(ErrorOf(tool), Catch::StartsWith(At(tool, 10, "oracle")) && Catch::Contains("oracle must name role nodes"));
    const std::string answer = Replace(ok, "answer: \"propose\"", "answer: \"propose\" oracle: \"propose\"");
    CHECK_THAT(ErrorOf(answer), Catch::Contains("cannot be an oracle node"));
  }
  SECTION("a tool's unknown parameter") {
    const std::string text = ToolPipeline("param { name: \"retries\" int: 2 }");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 5, "param")) && Catch::Contains("retries"));
  }
}

TEST_CASE("latent channels between pipeline nodes are checked at the file, line and column that misuse them",
          "[pipeline][config][hybrid]") {
  REQUIRE(ErrorOf(QaDecomposeLatent("HYBRID")).empty());
  REQUIRE(ErrorOf(QaDecomposeLatent("LATENT")).empty());
  SECTION("vectors read without a channel") {
    const std::string text = QaDecomposeLatent("");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 10, "decompose.latents")) &&
                                  Catch::Contains("no LATENT or HYBRID channel joins role 'decomposer' to role 'answerer'"));
  }
  SECTION("a LATENT channel's reader reading the sender's text too") {
    const std::string text = QaDecomposeLatent("LATENT", "{decompose.latents} {decompose.sub_queries}\\nQuestion: {question}");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith("t.textproto:10:") && Catch::Contains("LATENT (vectors only)"));
    CHECK(ErrorOf(QaDecomposeLatent("HYBRID", "{decompose.latents} {decompose.sub_queries}\\nQuestion: {question}")).empty());
  }
  SECTION("a latent channel whose vectors no prompt shows") {
    const std::string text = QaDecomposeLatent("HYBRID", "Passages:\\n{retrieve.docs}\\nQuestion: {question}");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 26, "mode")) && Catch::Contains("no prompt of role 'answerer' shows its vectors"));
  }
  SECTION("text_words, a game's message size") {
    const std::string text = Replace(QaDecomposeLatent("HYBRID"), "latent_vectors: 3", "latent_vectors: 3 text_words: 2");
    CHECK_THAT(ErrorOf(text), Catch::Contains("text_words is for games"));
  }
  SECTION("a tool reading vectors") {
    const std::string text = Replace(QaDecomposeLatent("HYBRID"), "input: \"decompose.sub_queries\"", "input: \"decompose.latents\"");
    CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 7, "latents")) && Catch::Contains("read by role nodes"));
  }
}

TEST_CASE("across a HYBRID pipeline channel the decomposer sends K vectors and the answerer reads them, as the trainer scores them, in demonstrations too",
          "[pipeline][hybrid]") {
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(QaDecomposeLatent("HYBRID"), "qa.textproto"));
  testing::DirectPolicy policy(w);
  const RolloutBatch batch = testing::DirectRollout(w, policy, 4, 1);
  const auto [bot, eot] = w.rollout.Codec(0).MessageMarkers();
  const int width = 32;
  int senders = 0, readers = 0;
  for (const auto& r : batch.records) {
    const auto slots = std::count(r.prompt.begin(), r.prompt.end(), Vocab::kSoft);
    if (r.phase == "decompose") {
      ++senders;
      REQUIRE(r.latent_steps == 3);
      CHECK(r.latents.size() == 3u * width);
      const size_t n = r.prompt.size();
      CHECK(r.prompt[n - 5] == bot);
      CHECK(r.prompt[n - 1] == eot);
      CHECK(slots == 3);
      CHECK(r.soft_inputs.empty());
    } else {
      ++readers;
      CHECK(r.latent_steps == 0);
      CHECK(slots == 3);  // the decomposer's message, where the template shows it
      CHECK(r.soft_inputs.size() == 3u * width);
      CHECK(r.soft_width == width);
      const auto at = std::find(r.prompt.begin(), r.prompt.end(), bot);
      REQUIRE(at + 4 < r.prompt.end());
      CHECK(*(at + 4) == eot);
    }
  }
  CHECK(senders == 4);
  CHECK(readers == 4);
  for (const auto& e : batch.episodes) CHECK(e.metrics.at("latent_vectors") == 3);

  // The trainer scores each call as it was sampled: the sender's vectors
  // recomputed from its prompt, the reader's read as data.
  const std::vector<std::vector<float>> sampled = testing::SampledLogProbs(batch.records);
  CHECK(testing::LargestLogProbGap(policy.trainer, batch.records, sampled) < 1e-4);
  // What the answerer reads matters: other vectors give other probabilities.
  const std::vector<std::vector<float>> scored = policy.trainer.ResponseLogProbs(batch.records);
  CHECK(testing::LargestLogProbGap(policy.trainer, testing::WithOtherVectors(batch.records), scored) > 1e-4);

  // Oracle demonstrations have the same shape, with the oracle's text: the
  // decomposer's model sends the vectors, the answerer reads them.
  const RolloutBatch demos = OracleRollout(w, 4, 1);
  int demo_senders = 0;
  for (const auto& r : demos.records) {
    const auto slots = std::count(r.prompt.begin(), r.prompt.end(), Vocab::kSoft);
    CHECK(slots == 3);
    CHECK(std::all_of(r.logprobs.begin(), r.logprobs.end(), [](float lp) { return lp == 0.f; }));  // not sampled
    if (r.phase == "decompose") {
      ++demo_senders;
      CHECK(r.latent_steps == 3);
      CHECK(r.prompt.back() == eot);
      CHECK(w.rollout.Codec(0).Text(r.response).find("sub_queries") != std::string::npos);  // the oracle's JSON
    } else {
      CHECK(r.latent_steps == 0);
      CHECK(r.soft_inputs.size() == 3u * width);
    }
  }
  CHECK(demo_senders == 4);
}

TEST_CASE("a tool node runs once per tick for every episode, retried and fail-open", "[pipeline]") {
  auto run = [](const std::string& tool_lines, int episodes) {
    CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(ToolPipeline(tool_lines), "t.textproto"));
    WorkerHub hub(MakeHubSpec(w));
    Rollout rollout(w.rollout, hub);
    Rng rng(1);
    RolloutOptions o;
    o.episodes = episodes;
    o.group_size = 1;
    g_tool_batches = 0;
    RolloutBatch b = rollout.Run(o, rng);
    double errors = 0, finished = 0;
    for (const auto& e : b.episodes) {
      errors += e.metrics.at("tool_errors");
      finished += e.metrics.at("finished");
      CHECK(e.metrics.at("steps") == 2);  // propose, then the tool
    }
    return std::tuple<int, double, double>{g_tool_batches.load(), errors, finished / episodes};
  };
  // 2 and 40 episodes: one batch each.
  CHECK(std::get<0>(run("", 2)) == 1);
  CHECK(std::get<0>(run("", 40)) == 1);
  // A failed batch is tried again.
  auto [batches, errors, finished] = run("param { name: \"fail_batches\" int: 1 } retries: 1", 8);
  CHECK(batches == 2);
  CHECK(errors == 0);
  CHECK(finished == 1);
  // Failing past the retries: fail-open goes on to the end node...
  std::tie(batches, errors, finished) = run("param { name: \"fail_batches\" int: 5 } retries: 1", 8);
  CHECK(batches == 2);
  CHECK(errors == 8);
  CHECK(finished == 1);
  // ...fail-closed ends the episode at the tool.
  std::tie(batches, errors, finished) = run("param { name: \"fail_batches\" int: 5 } retries: 0 fail_open: false", 8);
  CHECK(errors == 8);
  CHECK(finished == 0);
}

TEST_CASE("forward calls per QA pipeline tick do not grow with the number of questions", "[pipeline][qa][batching]") {
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(QaDecompose(8), "qa.textproto"));
  REQUIRE(w.rollout.codecs[0]->reads_text());
  auto run = [&](int episodes) {
    WorkerHub hub(MakeHubSpec(w));
    Rollout rollout(w.rollout, hub);
    Rng rng(2);
    RolloutOptions o;
    o.episodes = episodes;
    o.group_size = 1;
    RolloutBatch b = rollout.Run(o, rng);
    REQUIRE(b.episodes.size() == static_cast<size_t>(episodes));
    return std::pair<double, double>{static_cast<double>(b.generate_calls),
                                     static_cast<double>(b.forward_calls) / std::max<int64_t>(1, b.generate_calls)};
  };
  const auto few = run(2), many = run(48);
  INFO("requests " << few.first << " vs " << many.first << "; forward calls per request " << few.second << " vs "
                   << many.second);
  // One request per tick with role nodes (decompose, then answer, which may come a tick later after retrieval).
  CHECK(few.first <= 3);
  CHECK(many.first <= 3);
  CHECK(many.second <= 1.5 * few.second + 1);
}

TEST_CASE("oracle demonstrations decompose, retrieve the supporting passages and answer right", "[pipeline][qa]") {
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(QaDecompose(48), "qa.textproto"));
  RolloutBatch b = OracleRollout(w, 16, 4);
  double f1 = 0, recall = 0;
  for (const auto& e : b.episodes) {
    f1 += e.metrics.at("f1");
    recall += e.metrics.at("recall_at_k");
    CHECK(e.metrics.at("recall_any_at_k") >= e.metrics.at("recall_at_k"));  // one found, when all are
    CHECK(e.metrics.at("calls") == 2);
    CHECK(e.metrics.at("invalid_outputs") == 0);
  }
  CHECK(f1 / 16 > 0.9);
  CHECK(recall / 16 > 0.7);
  // Two demonstrations an episode, each with the oracle's tokens and a prompt in the model's tokenizer.
  REQUIRE(b.records.size() == 32);
  std::set<std::string> phases;
  for (const auto& r : b.records) {
    phases.insert(r.phase);
    CHECK(r.valid);
    CHECK(r.format == 0.0);
    CHECK_FALSE(r.response.empty());
  }
  CHECK(phases == std::set<std::string>{"decompose", "answer"});
}

TEST_CASE("an oracle node writes the oracle's text in rollouts, finds the supporting passages and is no model call",
          "[pipeline][qa][ablation]") {
  const std::string text = Replace(QaDecompose(8), "answer: \"answer\"", "answer: \"answer\" oracle: \"decompose\"");
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(text, "qa.textproto"));
  CompiledWorkflow plain = CompileWorkflow(ParseWorkflowText(QaDecompose(8), "qa.textproto"));
  // Training rollouts: the untrained model answers (and, without the ablation, decomposes).
  const RolloutBatch ablated = HubRollout(w, 16, 4, false), model = HubRollout(plain, 16, 4, false);
  double recall[2] = {0, 0};
  for (const auto& e : ablated.episodes) {
    recall[0] += e.metrics.at("recall_at_k") / 16;
    CHECK(e.metrics.at("calls") == 1);  // the answerer's call only
  }
  for (const auto& e : model.episodes) recall[1] += e.metrics.at("recall_at_k") / 16;
  CHECK(recall[0] > 0.7);  // the oracle's sub-questions find the supporting passages...
  CHECK(recall[1] < 0.2);  // ...which an untrained decomposer's text does not
  REQUIRE(ablated.records.size() == 16);  // nothing of the oracle node is trained
  for (const auto& r : ablated.records) CHECK(r.phase == "answer");
}

TEST_CASE("counterfactual training questions get another answer, which only the retrieved passages state",
          "[pipeline][qa][counterfactual]") {
  const std::string text = Replace(QaDecompose(8), "task: \"factbook_qa\"",
                                   "task: \"factbook_qa\" param { name: \"counterfactual\" real: 1 }");
  const CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(text, "qa.textproto"));
  const CompiledPipeline& p = *w.rollout.pipeline;
  int retrieve = -1;
  for (size_t n = 0; n < p.nodes.size(); ++n) {
    if (p.nodes[n].name == "retrieve") retrieve = static_cast<int>(n);
  }
  REQUIRE(retrieve >= 0);
  auto joined = [](const ToolResult& r) {
    std::string all;
    for (const auto& d : r.values.at("docs")) all += d + "\n";
    return all;
  };
  auto whole_word = [](const std::string& text, const std::string& word) {
    auto inside = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || (c & 0x80); };
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
      const size_t end = at + word.size();
      if ((at == 0 || !inside(text[at - 1])) && (end >= text.size() || !inside(text[end]))) return true;
    }
    return false;
  };
  int rewritten = 0, stated = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const PipelineQuery q = p.task->MakeQuery(seed);
    INFO(q.id << ": " << q.question);
    const std::string original_answer = qa::NormaliseAnswer(q.rewrites.empty() ? q.answers.front() : q.rewrites.front().first);
    if (q.type == "comparison" || original_answer == "yes" || original_answer == "no") {
      CHECK(q.rewrites.empty());  // no passage states these as words
      continue;
    }
    REQUIRE_FALSE(q.rewrites.empty());
    REQUIRE(q.answers.size() == 1);
    const std::string& from = q.rewrites.front().first;
    CHECK(qa::AnswerF1(q.answers.front(), {from}) < 1.0);  // a different answer
    PipelineQuery original = q;
    original.rewrites.clear();
    const auto got = p.tools[retrieve]->Run({ToolCall{&q, q.decomposition}, ToolCall{&original, q.decomposition}});
    const std::string docs = joined(got[0]), source = joined(got[1]);
    if (!whole_word(source, from)) continue;  // the source names it as a word: rewritten
    ++rewritten;
    // No whole-word `from` is left (it may stand inside a longer word, or inside the new answer).
    if (q.answers.front().find(from) == std::string::npos) CHECK_FALSE(whole_word(docs, from));
    stated += docs.find(q.answers.front()) != std::string::npos;
  }
  CHECK(rewritten >= 10);
  CHECK(stated >= rewritten / 2);  // the rest lost it to the cut at doc_chars
  // Evaluation questions are never rewritten.
  for (int i = 0; i < 10; ++i) CHECK(p.task->EvalQuery(i).rewrites.empty());
}

TEST_CASE("QA evaluation plays the test split and reports EM and F1 per question type", "[pipeline][qa]") {
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(QaDecompose(8), "qa.textproto"));
  WorkerHub hub(MakeHubSpec(w));
  const EvalResult r = Evaluate(w, hub, 24, 1, true, 1.0, 0, nullptr);
  for (const char* k : {"em", "f1", "f1/single_hop", "calls", "steps"}) CHECK(r.metrics.count(k) == 1);
  CHECK(r.metrics.at("f1") >= 0.0);
  CHECK(r.metrics.at("f1") <= 1.0);
  CHECK(r.ci95.count("f1") == 1);
  REQUIRE(r.bootstrap.count("f1") == 1);
  CHECK(r.bootstrap.at("f1").lo <= r.metrics.at("f1"));
  CHECK(r.bootstrap.at("f1").hi >= r.metrics.at("f1"));
  // Each episode in order, so two evaluations of the split pair up question by question.
  REQUIRE(r.per_episode.size() == 24);
  double f1 = 0;
  for (size_t i = 0; i < r.per_episode.size(); ++i) {
    CHECK(r.per_episode[i].first == static_cast<int>(i));
    f1 += r.per_episode[i].second.at("f1") / 24;
  }
  CHECK(f1 == Approx(r.metrics.at("f1")));
  const std::string lines = EvalEpisodesJsonl(r);
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 24);
  CHECK(lines.rfind("{\"episode\":0,", 0) == 0);
  CHECK_THAT(EvalJson(r), Catch::Contains("\"ci95_lo/f1\"") && Catch::Contains("\"ci95_hi/f1\""));
  // The headline metrics name each question type of the test split.
  const auto& h = w.headline_metrics;
  for (const char* k : {"f1/single_hop", "f1/bridge", "f1/comparison", "recall_at_k"}) {
    CHECK(std::find(h.begin(), h.end(), k) != h.end());
  }
}

TEST_CASE("bootstrap intervals hold the mean, stay inside the values' bounds and repeat with the seed", "[pipeline][eval]") {
  // 2 answers right of 100: Student's t interval crosses 0, the bootstrap's stays at or above it.
  std::vector<double> rare(100, 0.0);
  rare[10] = rare[60] = 1.0;
  const Interval b = BootstrapInterval(rare);
  CHECK(SpreadOf(rare).mean - SpreadOf(rare).half_width < 0.0);
  CHECK(b.lo >= 0.0);
  CHECK(b.lo < 0.02);
  CHECK(b.hi > 0.02);
  CHECK(b.hi < 0.07);
  CHECK(BootstrapInterval(rare).lo == b.lo);
  CHECK(BootstrapInterval(rare).hi == b.hi);
  // Half right: close to the normal interval 0.5 +- 1.96 * 0.5 / 20.
  std::vector<double> half(400);
  for (size_t i = 0; i < half.size(); ++i) half[i] = i % 2;
  const Interval h = BootstrapInterval(half);
  CHECK(h.lo == Approx(0.5 - 0.049).margin(0.01));
  CHECK(h.hi == Approx(0.5 + 0.049).margin(0.01));
  // Constant values, or fewer than two, give the mean at both ends.
  CHECK(BootstrapInterval(std::vector<double>(50, 0.0)).hi == 0.0);
  CHECK(BootstrapInterval({0.3}).lo == 0.3);
}

TEST_CASE("credit: marginal answer gains and shared outcomes on a hand-made trajectory", "[pipeline][credit]") {
  // Iterative search: plan, answer_0 (F1 .2), search, summary, update (the retriever ran
  // between), answer_1 (F1 .5), then a search that ends the loop.
  const std::vector<CallTick> calls = {{0, false}, {1, true}, {2, false}, {4, false}, {5, false}, {6, true}, {7, false}};
  const std::vector<double> gains = AnswerGains(calls, {{1, 0.2}, {6, 0.5}});
  const std::vector<double> expected = {0.2, 0.2, 0.3, 0.3, 0.3, 0.5, 0.0};
  REQUIRE(gains.size() == expected.size());
  for (size_t i = 0; i < gains.size(); ++i) CHECK(gains[i] == Approx(expected[i]));
  // No answer at all: nothing to gain.
  CHECK(AnswerGains({{0, false}}, {}) == std::vector<double>{0.0});

  // r = format_weight * fmt + share * R_out: `split` divides the outcome among the calls that get it.
  const std::string full = Replace(ToolPipeline(""), "reward { level: TRAJECTORY signal: \"score\" }",
                                   "reward { level: TRAJECTORY signal: \"score\" }\n"
                                   "reward { level: ROLE signal: \"format\" weight: 0.5 }\n"
                                   "reward { level: ROLE signal: \"answer_gain\" weight: 2 }");
  const std::string split = Replace(full, "signal: \"score\" }", "signal: \"score\" split: true }");
  CallRecord rec;
  rec.role = 0;
  rec.format = -1;
  rec.answer_gain = 0.25;
  const std::vector<int> receivers = {4, 4, 4};  // the episode's calls each term applies to
  double role_part = 0;
  const CompiledWorkflow wf = CompileWorkflow(ParseWorkflowText(full, "t.textproto"));
  CHECK(CallReward(wf.rollout, rec, nullptr, 0.8, &role_part, &receivers) == Approx(0.8 - 0.5 + 0.5));
  CHECK(role_part == Approx(-0.5 + 0.5));
  const CompiledWorkflow ws = CompileWorkflow(ParseWorkflowText(split, "t.textproto"));
  CHECK(CallReward(ws.rollout, rec, nullptr, 0.8, nullptr, &receivers) == Approx(0.8 / 4 - 0.5 + 0.5));
  // Split and marginal gains belong to pipelines.
  CHECK_THAT(ErrorOf(Replace(testing::TinyRedBlack(1, ""), "signal: \"round_payoff\" to_go: true", "signal: \"round_payoff\" split: true")),
             Catch::Contains("split shares a pipeline's"));
}

TEST_CASE("the shipped iterative search loop runs its turns under the oracle and ends with <end>", "[pipeline][qa]") {
  std::string text = testing::ReadFile(testing::SourceDir() + "/workflows/shipped/qa_iterative.textproto");
  text = Replace(text, "model { name: \"base\" hf_dir: \"runs/base_model/model\"",
                 "model { name: \"base\" llama { hidden_size: 32 heads: 2 kv_heads: 1 layers: 1 intermediate_size: 64 "
                 "max_len: 512 } tokenizer: \"" + QaTokenizer() + "\"");
  text = Replace(text, "max_tokens: 24", "max_tokens: 64");  // room for the longest gold answers in this tokenizer
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(text, "qa_iterative.textproto"));
  RolloutBatch b = OracleRollout(w, 12, 6);
  double f1 = 0;
  for (const auto& e : b.episodes) {
    f1 += e.metrics.at("f1");
    CHECK(e.metrics.at("finished") == 1);
    CHECK(e.metrics.at("invalid_outputs") == 0);
  }
  CHECK(f1 / 12 > 0.9);
  // Per episode: plan, answer_0, then per sub-question search, summary, update, answer; a last search says <end>.
  std::map<int64_t, std::map<std::string, int>> calls;
  for (const auto& r : b.records) ++calls[r.episode][r.phase];
  for (const auto& [episode, by] : calls) {
    INFO("episode " << episode);
    CHECK(by.at("plan") == 1);
    CHECK(by.at("search") == by.at("answer"));
    CHECK(by.at("summary") == by.at("answer") - 1);
    CHECK(by.at("answer") <= 4);
  }
  // Marginal gains: the oracle's first answer is already right, so later turns gain nothing.
  for (const auto& r : b.records) {
    if (r.phase == "search" || r.phase == "summary" || r.phase == "update") CHECK(r.answer_gain == Approx(0.0).margin(1e-9));
  }
}
