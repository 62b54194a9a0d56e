// Config mistakes and the messages they produce: syntax and schema errors at
// file:line:col, semantic errors at the offending field or naming the culprit.
#include <catch2/catch.hpp>

#include "tests/test_paths.h"

#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

#include <google/protobuf/text_format.h>

#include "core/base/errors.h"
#include "core/device_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/workflow_reference.h"
#include "workflows/config/defaults.h"
#include "tests/workflows/config_test_support.h"

using namespace troupe;

namespace {

using troupe::testing::At;
using troupe::testing::ErrorOf;

const char* kBase = R"(name: "t"
game {
  name: "red_black"
  param { name: "team_size" int: 2 }
  param { name: "rounds" int: 3 }
}
model { name: "m" transformer { d_model: 16 heads: 2 } }
role { name: "a" seats: "a*" model: "m" }
role { name: "b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";

// Replaces line `n` (1-based) of the base text.
std::string WithLine(int n, const std::string& line) {
  std::istringstream in(kBase);
  std::string l, out;
  for (int i = 1; std::getline(in, l); ++i) out += (i == n ? line : l) + "\n";
  return out;
}



}  // namespace

TEST_CASE("the base workflow of these tests is valid", "[config]") { CHECK(ErrorOf(kBase) == ""); }

TEST_CASE("a syntax error reports its line and column", "[config]") {
  const std::string text = WithLine(7, "model { name: \"m\" transformer { d_model: 16 heads: 2 }");
  const std::string e = ErrorOf(text);
  CHECK_THAT(e, Catch::StartsWith("t.textproto:8:1:"));
}

TEST_CASE("an unknown field is reported where it is written", "[config]") {
  const std::string text = WithLine(7, "modle { name: \"m\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith("t.textproto:7:1:") && Catch::Contains("modle"));
}

TEST_CASE("an unknown enum value is reported where it is written", "[config]") {
  const std::string text = WithLine(10, "reward { level: TRAJ signal: \"team_score\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 10, "TRAJ")) && Catch::Contains("TRAJ"));
}

TEST_CASE("an unknown game names the registered ones", "[config]") {
  const std::string text = WithLine(3, "  name: \"chess\"");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 3, "name")) && Catch::Contains("unknown game 'chess'") &&
                                Catch::Contains("red_black"));
}

TEST_CASE("an unknown game parameter points at the parameter", "[config]") {
  const std::string text = WithLine(4, "  param { name: \"teams\" int: 2 }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 4, "param")) && Catch::Contains("unknown parameter 'teams'"));
}

TEST_CASE("a parameter of the wrong type says which type it takes", "[config]") {
  const std::string text = WithLine(5, "  param { name: \"rounds\" text: \"ten\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 5, "param")) && Catch::Contains("'rounds' takes a int"));
}

TEST_CASE("a parameter out of range gives the range", "[config]") {
  const std::string text = WithLine(4, "  param { name: \"team_size\" int: 99 }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 4, "param")) && Catch::Contains("outside [1, 15]"));
}

TEST_CASE("a role mapped to an undefined model is reported at its model field", "[config]") {
  const std::string text = WithLine(8, "role { name: \"a\" seats: \"a*\" model: \"mm\" }");
  CHECK_THAT(ErrorOf(text),
             Catch::StartsWith(At(text, 8, "model")) && Catch::Contains("role 'a' maps to undefined model 'mm'"));
}

TEST_CASE("a role with both a model and a strategy is rejected", "[config]") {
  const std::string text = WithLine(9, "role { name: \"b\" seats: \"b*\" model: \"m\" scripted: \"tit_for_tat\" }");
  CHECK_THAT(ErrorOf(text),
             Catch::StartsWith(At(text, 9, "scripted")) && Catch::Contains("both a model and a scripted"));
}

TEST_CASE("an unknown scripted strategy lists the registered ones", "[config]") {
  const std::string text = WithLine(9, "role { name: \"b\" seats: \"b*\" scripted: \"tit_for_two_tats\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 9, "scripted")) &&
                                Catch::Contains("unknown scripted strategy 'tit_for_two_tats'") &&
                                Catch::Contains("forgiver"));
}

TEST_CASE("a seat played by no role is named", "[config]") {
  const std::string text = WithLine(9, "");
  CHECK_THAT(ErrorOf(text), Catch::Contains("seat 'b0' is played by no role"));
}

TEST_CASE("a seat played by two roles is reported at the second", "[config]") {
  const std::string text = WithLine(9, "role { name: \"b\" seats: \"b*\" seats: \"a1\" scripted: \"tit_for_tat\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 9, "seats: \"a1")) &&
                                Catch::Contains("seat 'a1' is already played by role 'a'"));
}

TEST_CASE("a seat pattern that matches no seat is reported", "[config]") {
  const std::string text = WithLine(9, "role { name: \"b\" seats: \"c*\" scripted: \"tit_for_tat\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 9, "seats")) && Catch::Contains("'c*' matches no seat"));
}

TEST_CASE("a role defined twice is reported at its second name", "[config]") {
  const std::string text = WithLine(9, "role { name: \"a\" seats: \"b*\" scripted: \"tit_for_tat\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 9, "name")) && Catch::Contains("role 'a' is defined twice"));
}

TEST_CASE("a model no role uses is reported", "[config]") {
  const std::string text = WithLine(7, "model { name: \"m\" } model { name: \"unused\" }");
  CHECK_THAT(ErrorOf(text), Catch::Contains("model 'unused' is used by no role"));
}

TEST_CASE("a device that is not cpu or cuda:N is reported", "[config]") {
  const std::string text = WithLine(7, "model { name: \"m\" device: \"gpu0\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 7, "device")) && Catch::Contains("not cpu or cuda:N"));
}

TEST_CASE("a CUDA device this LibTorch build cannot use is refused at validation", "[config]") {
  // This build's LibTorch answers how many CUDA devices it has (none on a CPU build); no machine has 100.
  REQUIRE(CudaDeviceCount().has_value());
  const std::string text = WithLine(7, "model { name: \"m\" device: \"cuda:99\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 7, "device")) && Catch::Contains("this build of LibTorch"));
  const std::string huge = WithLine(7, "model { name: \"m\" device: \"cuda:99999999999999999999\" }");
  CHECK_THAT(ErrorOf(huge), Catch::StartsWith(At(huge, 7, "device")) && Catch::Contains("this build of LibTorch"));
  if (*CudaDeviceCount() == 0) {
    const std::string first = WithLine(7, "model { name: \"m\" device: \"cuda:0\" }");
    CHECK_THAT(ErrorOf(first), Catch::StartsWith(At(first, 7, "device")) && Catch::Contains("has no CUDA devices"));
  }
}

TEST_CASE("gpt2 options are validated at their lines", "[config][gpt2]") {
  const std::string heads = WithLine(7, "model { name: \"m\" gpt2 { hidden_size: 30 heads: 4 } }");
  CHECK_THAT(ErrorOf(heads), Catch::StartsWith(At(heads, 7, "heads")) && Catch::Contains("not divisible by heads 4"));
  const std::string act = WithLine(7, "model { name: \"m\" gpt2 { activation: \"relu\" } }");
  CHECK_THAT(ErrorOf(act), Catch::StartsWith(At(act, 7, "activation")) && Catch::Contains("'relu'"));
}

TEST_CASE("d_model must divide into the heads", "[config]") {
  const std::string text = WithLine(7, "model { name: \"m\" transformer { d_model: 30 heads: 4 } }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 7, "heads")) && Catch::Contains("not divisible by heads"));
}

TEST_CASE("a channel to an unknown role is reported at its endpoint", "[config]") {
  const std::string text = std::string(kBase) + "channel { from: \"a\" to: \"c\" }\n";
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 11, "to")) && Catch::Contains("'c' is not a role"));
}

TEST_CASE("a latent channel's mistakes are reported where they are written", "[config]") {
  const std::string text = std::string(kBase) + "channel { from: \"a\" to: \"a\" mode: LATENT text_words: 2 }\n";
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 11, "text_words")) && Catch::Contains("for HYBRID channels"));
  const std::string k = std::string(kBase) + "channel { from: \"a\" to: \"a\" mode: HYBRID latent_vectors: 65 }\n";
  CHECK_THAT(ErrorOf(k), Catch::StartsWith(At(k, 11, "latent_vectors")) && Catch::Contains("1..64"));
}

TEST_CASE("runtime mistakes are reported where they are written", "[config][runtime]") {
  const std::string bad_endpoint = std::string(kBase) + "runtime {\n  endpoint: \"udp://x:1\"\n}\n";
  CHECK_THAT(ErrorOf(bad_endpoint),
             Catch::StartsWith(At(bad_endpoint, 12, "endpoint")) && Catch::Contains("not inproc, ipc or tcp"));
  const std::string unknown =
      std::string(kBase) + "runtime {\n  endpoint: \"tcp://127.0.0.1:5\"\n  worker { model: \"zz\" }\n}\n";
  CHECK_THAT(ErrorOf(unknown), Catch::Contains("worker for unknown model 'zz'"));
  const std::string inproc = std::string(kBase) + "runtime {\n  worker { model: \"m\" }\n}\n";
  CHECK_THAT(ErrorOf(inproc), Catch::Contains("need a tcp:// or ipc:// endpoint"));
}

TEST_CASE("an unknown reward signal lists the game's signals", "[config]") {
  const std::string text = WithLine(10, "reward { level: TURN signal: \"team_score\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 10, "signal")) && Catch::Contains("round_payoff"));
}

TEST_CASE("episodes per iteration must fill whole groups", "[config]") {
  const std::string text = std::string(kBase) + "credit { group_size: 8 }\ntrainer { episodes_per_iteration: 12 }\n";
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 12, "episodes_per_iteration")) &&
                                Catch::Contains("not a multiple of credit.group_size 8"));
}

TEST_CASE("an adapter on a model that serves one role is refused", "[config]") {
  const std::string text = WithLine(8, "role { name: \"a\" seats: \"a*\" model: \"m\" adapter: LORA }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 8, "adapter")) && Catch::Contains("serves no other role"));
}

TEST_CASE("a workflow needs a game or a pipeline", "[config]") {
  CHECK_THAT(ErrorOf("name: \"x\"\n"), Catch::Contains("needs a game { } or a pipeline { }"));
}

namespace {
const char* kPipeline = R"(name: "p"
pipeline {
  task: "reverse_digits"
  node { name: "propose" role: "proposer" inputs: "critic" }
  node { name: "critic" role: "critic" inputs: "propose" }
  node { name: "done" kind: END_NODE }
  edge { from: "propose" to: "critic" }
  edge { from: "critic" to: "propose" when: "critic.text == 'reject'" }
  edge { from: "critic" to: "done" when: "critic.text != 'reject'" }
  start: "propose"
  max_steps: 6
  answer: "propose"
}
model { name: "m" }
role { name: "proposer" model: "m" }
role { name: "critic" model: "m" }
reward { level: TRAJECTORY signal: "score" }
)";
std::string PipelineWith(const std::string& from, const std::string& to) {
  std::string t = kPipeline;
  t.replace(t.find(from), from.size(), to);
  return t;
}
}  // namespace

TEST_CASE("a valid pipeline compiles and has a bounded cycle", "[config][pipeline]") {
  CompiledWorkflow w = CompileWorkflow(ParseWorkflowText(kPipeline, "t.textproto"));
  CHECK(w.rollout.pipeline->has_cycle);
  CHECK(w.rollout.pipeline->max_steps == 6);
  CHECK(w.models[0].num_roles == 2);
}

TEST_CASE("a pipeline cycle without max_steps is refused", "[config][pipeline]") {
  CHECK_THAT(ErrorOf(PipelineWith("  max_steps: 6\n", "")), Catch::Contains("cycle but no max_steps"));
}

TEST_CASE("an unreachable pipeline node is named", "[config][pipeline]") {
  const std::string text =
      PipelineWith("  start: \"propose\"", "  node { name: \"orphan\" kind: END_NODE }\n  start: \"propose\"");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 10, "name")) && Catch::Contains("'orphan' is unreachable"));
}

TEST_CASE("an edge to an unknown node is reported at its endpoint", "[config][pipeline]") {
  const std::string text = PipelineWith("to: \"critic\" }", "to: \"critics\" }");
  CHECK_THAT(ErrorOf(text), Catch::StartsWith(At(text, 7, "to:")) && Catch::Contains("'critics' is not a node"));
}

TEST_CASE("a command-line override of an unknown field names the override", "[config]") {
  LoadedWorkflow w = ParseWorkflowText(kBase, "t.textproto");
  CHECK_THROWS_WITH(ApplyOverride(w, "trainer.iteratons=3"),
                    Catch::Contains("--set trainer.iteratons=3") && Catch::Contains("no field 'iteratons'"));
  CHECK_THROWS_WITH(ApplyOverride(w, "trainer.iterations=many"), Catch::Contains("not a valid value"));
  ApplyOverride(w, "model[0].transformer.d_model=32");
  CHECK(w.proto.model(0).transformer().d_model() == 32);
}

namespace {

// The shipped main job with one game parameter and max_len changed.
std::string MainJob(const std::string& param, int max_len) {
  std::string text = R"(name: "t"
game {
  name: "red_black"
  param { name: "team_size" int: 5 }
  param { name: "multipliers" text: "5:3,8:5,10:10" }
  param { name: "reason_words" int: 3 }
  )" + param + R"(
}
model { name: "m" transformer { d_model: 32 layers: 2 heads: 4 ff_mult: 2 max_len: )" +
                     std::to_string(max_len) + R"( } }
role { name: "team_a" seats: "a*" model: "m" }
role { name: "team_b" seats: "b*" scripted: "tit_for_tat" }
reward { level: TRAJECTORY signal: "team_score" }
)";
  return text;
}

// The max_len the validator asks for ("set max_len to at least N"), or 0 when it is valid.
int NeededMaxLen(const std::string& text) {
  const std::string e = ErrorOf(text);
  const auto at = e.find("at least ");
  return at == std::string::npos ? 0 : std::stoi(e.substr(at + 9));
}

}  // namespace

TEST_CASE("a max_len too short for the longest prompt is refused at max_len, naming the prompt", "[config][max_len]") {
  // The shipped main job fits 96; ten and fifteen agents a side, or a discussion round, do not.
  CHECK(ErrorOf(MainJob("", 96)) == "");
  for (const char* param : {"param { name: \"team_size\" int: 10 }", "param { name: \"team_size\" int: 15 }",
                            "param { name: \"discussion_rounds\" int: 1 }"}) {
    INFO(param);
    const std::string text = MainJob(param, 96);
    const std::string e = ErrorOf(text);
    CHECK_THAT(e, Catch::StartsWith(At(text, 9, "max_len")) &&
                      Catch::Contains("model 'm': max_len 96 is too short for role 'team_a': the longest '") &&
                      Catch::Contains("' prompt red_black can give it is"));
    // The figure it asks for is exact: one less is refused, that much is valid.
    const int needed = NeededMaxLen(text);
    REQUIRE(needed > 96);
    CHECK(NeededMaxLen(MainJob(param, needed - 1)) == needed);
    CHECK(ErrorOf(MainJob(param, needed)) == "");
  }
  // Fifteen agents need more than ten; a discussion round more than none.
  CHECK(NeededMaxLen(MainJob("param { name: \"team_size\" int: 15 }", 96)) >
        NeededMaxLen(MainJob("param { name: \"team_size\" int: 10 }", 96)));
  // A model whose max_len is the default is reported at the model.
  std::string defaulted =
      MainJob("param { name: \"team_size\" int: 15 } param { name: \"discussion_rounds\" int: 2 }", 96);
  defaulted.replace(defaulted.find(" max_len: 96"), 12, "");
  CHECK_THAT(ErrorOf(defaulted), Catch::StartsWith(At(defaulted, 9, "model")) && Catch::Contains("(the default)"));
}

TEST_CASE("defaults come from one table and the resolved workflow states every value that runs", "[config][defaults]") {
  CompiledWorkflow c = CompileWorkflow(ParseWorkflowText(kBase, "t.textproto"));
  const config::Workflow& table = WorkflowDefaults();
  // Unset fields take the table's values, in the compiled settings and in the resolved workflow.
  CHECK(c.proto.trainer().has_iterations());
  CHECK(c.proto.trainer().iterations() == table.trainer().iterations());
  CHECK(c.run.iterations == table.trainer().iterations());
  CHECK(c.trainer.clip == table.trainer().clip());
  // Architecture options default in their architecture's own table.
  config::ModelSpec transformer_defaults;
  transformer_defaults.mutable_transformer();
  ApplyArchitectureDefaults(&transformer_defaults);
  CHECK(transformer_defaults.transformer().max_len() == 160);
  CHECK(c.proto.model(0).transformer().max_len() == transformer_defaults.transformer().max_len());
  CHECK(c.models[0].sizes().max_len == transformer_defaults.transformer().max_len());
  CHECK(c.models[0].sizes().width == 16);  // written in the file: kept
  CHECK(c.proto.model(0).optimizer().grad_clip() == table.model(0).optimizer().grad_clip());
  CHECK(c.proto.runtime().heartbeat_ms() == table.runtime().heartbeat_ms());
  CHECK(c.proto.credit().group_by_size() == 3);
  CHECK_FALSE(c.proto.trainer().has_hybrid());  // a section whose presence means something stays absent
  // Zero is a value, not "the default": grad_clip 0 turns clipping off; a zero minibatch is refused where written.
  CompiledWorkflow off = CompileWorkflow(ParseWorkflowText(
      WithLine(7, "model { name: \"m\" transformer { d_model: 16 heads: 2 } optimizer { grad_clip: 0 } }"),
      "t.textproto"));
  CHECK(off.models[0].grad_clip == 0.0);
  const std::string zero = std::string(kBase) + "trainer { minibatch: 0 }\n";
  CHECK_THAT(ErrorOf(zero),
             Catch::StartsWith(At(zero, 11, "minibatch")) && Catch::Contains("minibatch must be positive"));
}

TEST_CASE("the schema's comments state the same defaults as the defaults tables", "[config][defaults]") {
  // Every default the table holds, by (message, field), as text.
  // Every default the tables hold (the workflow's and each architecture's), by (message, field).
  const std::map<std::pair<std::string, std::string>, std::string> table = WorkflowDefaultValues();
  // Fields of workflow.proto whose comment says "default VALUE".
  std::ifstream in(troupe::testing::SourceDir() + "/comms/proto/workflow.proto");
  const std::regex message_line(R"(^message (\w+) \{)");
  const std::regex field_line(R"(^\s+optional \w+ (\w+) = \d+;.*\bdefault ([-+0-9.e]+|"[^"]*"))");
  std::string line, message;
  int checked = 0;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, message_line)) message = m[1];
    if (!std::regex_search(line, m, field_line)) continue;
    INFO(message << "." << m[1].str() << ": the comment says " << m[2].str());
    const auto it = table.find({message, m[1].str()});
    REQUIRE(it != table.end());
    const std::string stated = m[2];
    if (stated.front() == '"') CHECK(it->second == stated);
    else CHECK(std::stod(it->second) == Approx(std::stod(stated)));
    ++checked;
  }
  CHECK(checked >= 30);
}
