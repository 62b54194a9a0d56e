// What a seat can hold. Models that start from another run's checkpoint
// (init_from): a word model's rows follow its words and roles into a workflow
// of another vocabulary, a frozen one plays as it was trained and a trained
// one learns from there, and what cannot fit is refused at the field that asks
// for it. Roles that draw their seats per episode (RoleSpec.draw).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "comms/session_file.h"
#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "core/models/model_init.h"
#include "core/models/model_pool_impl.h"
#include "tests/test_support.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "tests/workflows/direct_policy.h"
#include "tests/workflows/train_support.h"
#include "workflows/run/evaluate.h"
#include "workflows/run/train_run.h"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

std::string Temp(const std::string& name) { return testing::FreshTempPath("troupe-init-" + name); }

CompiledWorkflow Compile(const std::string& text) { return CompileWorkflow(ParseWorkflowText(text, "b.textproto")); }

std::string ErrorOf(const std::string& text) {
  try {
    Compile(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TrainResult Run(const CompiledWorkflow& w, const std::string& dir, const std::string& record = "") {
  return testing::TrainQuietly(w, dir, false, record);
}

constexpr char kSizes[] = "transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 64 }";

// The source run: the tiny Red-Black team on one model "m" (role "a"), trained for two iterations. Made once.
const std::string& SourceRun() {
  static const std::string dir = [] {
    const std::string d = Temp("source");
    Run(Compile(testing::TinyRedBlack(5, "trainer { iterations: 2 episodes_per_iteration: 8 minibatch: 64 "
                                         "checkpoint_every: 2 }")),
        d);
    return d;
  }();
  return dir;
}

// The same game with other roles, so another word vocabulary: a fresh model at a0 and, at a1 and a2, `population`.
std::string StudyText(const std::string& population) {
  return R"(name: "study" seed: 7
game { name: "red_black" param { name: "team_size" int: 3 } param { name: "rounds" int: 3 }
       param { name: "multipliers" text: "3:3" } param { name: "reason_words" int: 1 } }
model { name: "seed" )" + std::string(kSizes) + R"( optimizer { lr: 0.01 } }
)" + population + R"(
role { name: "s" seats: "a0" model: "seed" }
role { name: "pop" seats: "a1" seats: "a2" model: "population" }
role { name: "b" seats: "b*" scripted: "always_defect" }
reward { level: ROLE signal: "format" weight: 1 roles: "s" }
credit { group_size: 4 }
trainer { iterations: 1 episodes_per_iteration: 8 minibatch: 64 }
)";
}

std::string Population(const std::string& extra, const std::string& sizes = kSizes) {
  return "model { name: \"population\" " + sizes + " frozen: true " + extra + " }";
}

}  // namespace

TEST_CASE("a word model starts from another run's checkpoint, its words matched by name and its roles by slot",
          "[init]") {
  const std::string source_dir = SourceRun();
  const CompiledWorkflow source = Compile(testing::ReadFile(source_dir + "/workflow.resolved.textproto"));
  const CompiledWorkflow study =
      Compile(StudyText(Population("init_from: \"" + source_dir + "\" init_model: \"m\"")));
  REQUIRE(study.models[1].init);
  CHECK_FALSE(study.models[0].init);
  REQUIRE(study.rollout.vocab.Fingerprint() != source.rollout.vocab.Fingerprint());
  CHECK(study.models[1].init->checkpoint == *FindCheckpoint(source_dir));

  ModelPool trained(source.models, source.seed);
  LoadCheckpoint(*FindCheckpoint(source_dir), [&](const std::string& d) { trained.Load(d); });
  ModelPool started(study.models, study.seed);
  std::map<std::string, torch::Tensor> before, after;
  for (const auto& p : trained.impl().models[0]->named_parameters()) before[p.key()] = p.value();
  for (const auto& p : started.impl().models[1]->named_parameters()) after[p.key()] = p.value();
  REQUIRE(before.size() == after.size());
  const Vocab& here = study.rollout.vocab;
  const Vocab& there = source.rollout.vocab;
  int rows = 0;
  for (const auto& [name, value] : after) {
    INFO(name);
    const ParameterAxes axes = ParameterAxesOf(name);
    if (axes.vocab < 0 && axes.role < 0) {
      CHECK(torch::equal(value, before.at(name)));  // the trunk: the same values
      continue;
    }
    if (axes.vocab != 0) continue;
    // Each word's row is that word's row there; the population's role token is the source's role token (slot 0).
    for (int id = 4; id < here.size(); ++id) {
      std::string word = here.Word(id);
      if (word == "<role:pop>") word = "<role:a>";
      if (word.rfind("<role:", 0) == 0) continue;  // roles on other models: not the source's
      REQUIRE(there.Word(there.Id(word)) == word);
      CHECK(torch::equal(value[id], before.at(name)[there.Id(word)]));
      ++rows;
    }
  }
  CHECK(rows > 30);
  // The fresh model beside it is not the source's.
  CHECK_FALSE(torch::equal(started.impl().models[0]->named_parameters()["tok_emb.weight"],
                           after.at("tok_emb.weight")));
}

TEST_CASE("a model started from a checkpoint plays frozen beside a trained one, or trains on from there", "[init]") {
  const std::string source_dir = SourceRun();
  // Frozen: its weights never move while the seed trains.
  const std::string frozen_dir = Temp("frozen");
  const CompiledWorkflow frozen = Compile(StudyText(Population("init_from: \"" + source_dir + "\" init_model: \"m\"")));
  const uint64_t start = ModelPool(frozen.models, frozen.seed).ParameterDigest(1);
  CHECK(Run(frozen, frozen_dir).iterations == 1);
  ModelPool saved(frozen.models, frozen.seed + 1);
  LoadCheckpoint(*FindCheckpoint(frozen_dir), [&](const std::string& d) { saved.Load(d); });
  CHECK(saved.ParameterDigest(1) == start);
  // Trained: the same start, moved by its update.
  std::string text = StudyText(Population("init_from: \"" + source_dir + "\" init_model: \"m\""));
  text.replace(text.find(" frozen: true"), 13, " optimizer { lr: 0.01 }");
  text.replace(text.find("roles: \"s\""), 10, "");
  const CompiledWorkflow trained = Compile(text);
  CHECK(ModelPool(trained.models, trained.seed).ParameterDigest(1) == start);
  const std::string trained_dir = Temp("trained");
  CHECK(Run(trained, trained_dir).iterations == 1);
  ModelPool moved(trained.models, trained.seed);
  LoadCheckpoint(*FindCheckpoint(trained_dir), [&](const std::string& d) { moved.Load(d); });
  CHECK(moved.ParameterDigest(1) != start);
  // init_from can name a checkpoint folder as well as a run folder.
  const CompiledWorkflow by_folder =
      Compile(StudyText(Population("init_from: \"" + *FindCheckpoint(source_dir) + "\" init_model: \"m\"")));
  CHECK(ModelPool(by_folder.models, by_folder.seed).ParameterDigest(1) == start);
}

TEST_CASE("init_from refuses what cannot fit, at the field that names it", "[init][config]") {
  const std::string source_dir = SourceRun();
  const std::string from = "init_from: \"" + source_dir + "\"";
  // Nothing there.
  CHECK_THAT(ErrorOf(StudyText(Population("init_from: \"" + Temp("nothing") + "\""))),
             Catch::Contains("b.textproto:5:") && Catch::Contains("no checkpoint in"));
  // No model of that name (the source's is "m").
  CHECK_THAT(ErrorOf(StudyText(Population(from))),
             Catch::Contains("b.textproto:5:") && Catch::Contains("has no model 'population' (it has: m)") &&
                 Catch::Contains("init_model"));
  CHECK_THAT(ErrorOf(StudyText(Population(from + " init_model: \"x\""))), Catch::Contains("has no model 'x'"));
  // Another architecture.
  CHECK_THAT(ErrorOf(StudyText(Population(from + " init_model: \"m\"",
                                          "transformer { d_model: 32 heads: 2 layers: 1 ff_mult: 2 max_len: 64 }"))),
             Catch::Contains("is a transformer d=16") && Catch::Contains("this model is a transformer d=32"));
  // Another game's vocabulary: a run folder whose workflow is split_facts, on a model of the same size.
  const std::string other = Temp("other-game");
  fs::create_directories(other);
  fs::copy(source_dir + "/checkpoints", other + "/checkpoints",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::ofstream(other + "/workflow.resolved.textproto") << R"(name: "other" seed: 1
game { name: "split_facts" param { name: "entities" int: 4 } param { name: "values" int: 4 } param { name: "asks" int: 1 } }
model { name: "m" )" << kSizes << R"( }
role { name: "a" seats: "a" model: "m" }
role { name: "b" seats: "b" model: "m" }
reward { level: TRAJECTORY signal: "correct" }
)";
  CHECK_THAT(ErrorOf(StudyText(Population("init_from: \"" + other + "\" init_model: \"m\""))),
             Catch::Contains("knows only") && Catch::Contains("another game's vocabulary"));
  // init_model without init_from.
  CHECK_THAT(ErrorOf(StudyText(Population("init_model: \"m\""))), Catch::Contains("set init_from"));
  // A damaged newest checkpoint: never started from, nor passed over for an older one in silence.
  const std::string damaged = Temp("damaged-run");
  fs::copy(source_dir, damaged, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const auto newest = FindCheckpoint(damaged);
  REQUIRE(newest);
  std::string bytes = testing::ReadFile(*newest + "/model-m.safetensors");
  REQUIRE(bytes.size() > 100);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(*newest + "/model-m.safetensors", std::ios::binary) << bytes;
  const std::string in_run = ErrorOf(StudyText(Population("init_from: \"" + damaged + "\" init_model: \"m\"")));
  CHECK_THAT(in_run, Catch::Contains("b.textproto:5:") && Catch::Contains("the newest checkpoint of " + damaged) &&
                         Catch::Contains("model-m.safetensors is damaged"));
  const std::string named = ErrorOf(StudyText(Population("init_from: \"" + *newest + "\" init_model: \"m\"")));
  CHECK_THAT(named, Catch::Contains(*newest + ": model-m.safetensors is damaged"));
}

TEST_CASE("a role that draws its seats plays one seat an episode, not always the same, and the other role the rest",
          "[draw]") {
  std::string text = StudyText(Population(""));
  text.replace(text.find("seats: \"a0\" model: \"seed\""), 25, "seats: \"a*\" draw: 1 model: \"seed\"");
  text.replace(text.find("seats: \"a1\" seats: \"a2\""), 23, "seats: \"a*\"");
  text += "runtime { detail_episodes: 8 }\n";  // every training episode's calls in the session
  const CompiledWorkflow w = Compile(text);
  REQUIRE(w.rollout.seat_draws.size() == 1);
  const int s = w.RoleIndex("s"), pop = w.RoleIndex("pop");
  std::set<int> seed_seats;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const std::vector<int> roles = w.rollout.SeatRoles(seed);
    CHECK(roles == w.rollout.SeatRoles(seed));  // fixed by the seed
    int drawn = 0;
    for (int seat = 0; seat < 3; ++seat) {
      CHECK((roles[seat] == s || roles[seat] == pop));
      if (roles[seat] == s) drawn++, seed_seats.insert(seat);
    }
    CHECK(drawn == 1);
    for (int seat = 3; seat < 6; ++seat) CHECK(roles[seat] == w.RoleIndex("b"));
  }
  CHECK(seed_seats.size() == 3);
  // In a run: each episode's calls of role s come from one seat, the one its start names, and not always the same.
  const std::string session = Temp("draw.session");
  Run(w, Temp("draw"), session);
  const SessionContents c = ReadSessionFile(session);
  std::map<std::pair<int, int64_t>, std::vector<int>> started;
  std::map<std::pair<int, int64_t>, std::set<int>> acted;
  for (const auto& e : c.events) {
    if (e.has_episode_start() && !e.episode_start().evaluation()) {
      const auto& st = e.episode_start();
      started[{st.iteration(), st.episode()}] = {st.seat_role().begin(), st.seat_role().end()};
    }
    if (e.has_node() && e.node().role() == s) acted[{e.node().iteration(), e.node().episode()}].insert(e.node().seat());
  }
  REQUIRE(acted.size() >= 4);
  std::set<int> seats_played;
  for (const auto& [episode, seats] : acted) {
    REQUIRE(seats.size() == 1);
    REQUIRE(started.count(episode));
    CHECK(started.at(episode).at(*seats.begin()) == s);
    seats_played.insert(*seats.begin());
  }
  CHECK(seats_played.size() >= 2);
}

TEST_CASE("draws that cannot be met are refused at the draw", "[draw][config]") {
  std::string text = StudyText(Population(""));
  text.replace(text.find("seats: \"a0\" model: \"seed\""), 25, "seats: \"a*\" draw: 4 model: \"seed\"");
  CHECK_THAT(ErrorOf(text), Catch::Contains("b.textproto:6:") && Catch::Contains("between 0 and the 3 seats"));
  // A seat only a draw could give a player.
  text = StudyText(Population(""));
  text.replace(text.find("seats: \"a0\" model: \"seed\""), 25, "seats: \"a0\" seats: \"a1\" draw: 1 model: \"seed\"");
  text.replace(text.find("seats: \"a1\" seats: \"a2\""), 23, "seats: \"a2\"");
  CHECK_THAT(ErrorOf(text), Catch::Contains("when role 's' does not draw it"));
}

// Team A of `team` seats: the teacher at the seats `draw` names, personas (`persona`) at the rest; team B always defects.
std::string ScriptedTeam(int team, const std::string& draw, const std::string& persona = "conformist") {
  return R"(name: "scripted_team" seed: 3
game { name: "red_black" param { name: "team_size" int: )" +
         std::to_string(team) + R"( } param { name: "rounds" int: 6 } }
role { name: "teacher" seats: "a*" )" + draw + R"( scripted: "teacher" }
role { name: "pop" seats: "a*" scripted: ")" + persona + R"(" }
role { name: "b" seats: "b*" scripted: "always_defect" }
)";
}

TEST_CASE("draw_share plays a share of the seats, rounded to a seat, and is refused outside 0..1 or beside draw",
          "[draw][config]") {
  auto drawn = [](const std::string& share, int team) {
    const CompiledWorkflow w = Compile(ScriptedTeam(team, "draw_share: " + share));
    REQUIRE(w.rollout.seat_draws.size() == 1);
    return w.rollout.seat_draws[0].count;
  };
  CHECK(drawn("0.2", 5) == 1);
  CHECK(drawn("0.2", 10) == 2);
  CHECK(drawn("0.2", 15) == 3);
  CHECK(drawn("0.6", 15) == 9);
  CHECK(drawn("0", 5) == 0);
  CHECK(drawn("1", 5) == 5);
  CHECK(drawn("0.5", 3) == 2);  // 1.5 rounds to 2
  CHECK_THAT(ErrorOf(ScriptedTeam(5, "draw_share: 1.5")),
             Catch::Contains("b.textproto:3:") && Catch::Contains("between 0 and 1"));
  // One or the other (a oneof): both in a file is refused where the second stands.
  CHECK_THAT(ErrorOf(ScriptedTeam(5, "draw: 1 draw_share: 0.2")),
             Catch::Contains("b.textproto:3:") && Catch::Contains("draw_share"));
}

TEST_CASE("the persuasion probe measures scripted personas' persuadability as their susceptibility says",
          "[persuasion]") {
  // One teacher speaks first for cooperation; after always_defect's first betrayal the personas' priors defect,
  // so most of their votes are cases, and each follows the teacher's side with its susceptibility.
  for (const auto& [persona, susceptibility] : std::map<std::string, double>{{"conformist", 0.9}, {"cautious", 0.5}}) {
    INFO(persona);
    const CompiledWorkflow w = Compile(ScriptedTeam(5, "draw: 1", persona));
    testing::DirectPolicy policy(w);
    const EvalResult probed = Evaluate(w, policy, 96, 11, false, 1.0, 0, nullptr, true);
    REQUIRE(probed.metrics.count("persuadability/pop"));
    CHECK(probed.metrics.at("persuasion_cases/pop") > 5);
    CHECK(probed.metrics.at("persuadability/pop") == Approx(susceptibility).margin(0.06));
    // A persona's unheard vote is its prior, every time: sampling alone never lands on the recommendation.
    CHECK(probed.metrics.at("persuasion_chance/pop") == 0.0);
    // The teacher votes as it recommends whatever it hears: never a case.
    CHECK(!probed.metrics.count("persuadability/teacher"));
    // Probing takes its own random draws: the games play as they would unprobed.
    const EvalResult plain = Evaluate(w, policy, 96, 11, false, 1.0);
    CHECK(!plain.metrics.count("persuadability/pop"));
    CHECK(plain.metrics.at("team_a_cooperation") == probed.metrics.at("team_a_cooperation"));
  }
}

TEST_CASE("the persuasion probe asks a model seat's vote again, unheard, without adding calls to train on",
          "[persuasion]") {
  // A teacher at a0 and an untrained, frozen word model at a1 and a2.
  const CompiledWorkflow w = Compile(R"(name: "probe" seed: 3
game { name: "red_black" param { name: "team_size" int: 3 } param { name: "rounds" int: 3 }
       param { name: "multipliers" text: "3:3" } param { name: "reason_words" int: 1 } }
)" + Population("") + R"(
role { name: "teacher" seats: "a0" scripted: "teacher" }
role { name: "pop" seats: "a1" seats: "a2" model: "population" }
role { name: "b" seats: "b*" scripted: "always_defect" }
)");
  testing::DirectPolicy policy(w);
  Rollout rollout(w.rollout, policy);
  RolloutOptions o;
  o.episodes = 16;
  o.group_size = 1;
  o.seed = 5;
  Rng rng_a(1), rng_b(1);
  const RolloutBatch plain = rollout.Run(o, rng_a);
  o.persuasion = true;
  const RolloutBatch probed = rollout.Run(o, rng_b);
  // Probes make no records: one vote call per model seat and round either way.
  int plain_votes = 0, probed_votes = 0;
  for (const auto& r : plain.records) plain_votes += r.phase == "vote";
  for (const auto& r : probed.records) probed_votes += r.phase == "vote";
  CHECK(plain_votes == 16 * 3 * 2);
  CHECK(probed_votes == plain_votes);
  // The probes join their tick's batch: more positions encoded in it.
  CHECK(probed.encoded_positions > plain.encoded_positions);
  int cases = 0;
  for (const auto& e : probed.episodes) {
    auto it = e.metrics.find("persuadability/pop");
    if (it == e.metrics.end()) continue;
    CHECK(it->second >= 0.0);
    CHECK(it->second <= 1.0);
    CHECK(e.metrics.at("persuasion_chance/pop") >= 0.0);
    CHECK(e.metrics.at("persuasion_chance/pop") <= 1.0);
    cases += static_cast<int>(e.metrics.at("persuasion_cases/pop"));
  }
  CHECK(cases > 0);
  for (const auto& e : plain.episodes) CHECK(!e.metrics.count("persuadability/pop"));
}
