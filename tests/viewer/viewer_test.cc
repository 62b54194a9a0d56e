// troupe-view as a person would use it: the session model follows runs,
// restarts and ends; the workflow graph has roles, the game and channels; the
// real binary renders every panel of a recorded session headless (under
// xvfb-run), each image different and none blank; it shows what it could read
// of a truncated or corrupted file without crashing; it follows a live run.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "comms/session_file.h"
#include "tests/test_support.h"
#include "viewer/graph_layout.h"
#include "viewer/session_model.h"

extern "C" {
unsigned char* stbi_load(const char* filename, int* x, int* y, int* comp, int req_comp);
void stbi_image_free(void* retval_from_stbi_load);
}

using namespace troupe;
using namespace troupe::view;
namespace fs = std::filesystem;

namespace {

using Result = troupe::testing::CommandResult;
Result Run(const std::string& cmd) { return troupe::testing::RunCommand(cmd); }

std::string Temp(const std::string& name) {
  return (fs::temp_directory_path() / ("troupe-view-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::string View(const std::string& args) {
  return "xvfb-run -a -s \"-screen 0 1280x800x24\" " + troupe::testing::ViewBinary() + " " + args;
}

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgba;
};

Image Load(const std::string& path) {
  Image img;
  int comp = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &comp, 4);
  REQUIRE(data != nullptr);
  img.rgba.assign(data, data + static_cast<size_t>(img.w) * img.h * 4);
  stbi_image_free(data);
  return img;
}

// Distinct colours, a cheap "is anything drawn" measure.
size_t Colours(const Image& img) {
  std::map<uint32_t, int> seen;
  for (size_t i = 0; i + 3 < img.rgba.size(); i += 4 * 7) {
    seen[(img.rgba[i] << 16) | (img.rgba[i + 1] << 8) | img.rgba[i + 2]]++;
  }
  return seen.size();
}

double Difference(const Image& a, const Image& b) {
  if (a.rgba.size() != b.rgba.size()) return 1.0;
  size_t differ = 0;
  for (size_t i = 0; i < a.rgba.size(); i += 4) differ += a.rgba[i] != b.rgba[i] || a.rgba[i + 1] != b.rgba[i + 1];
  return static_cast<double>(differ) / (a.rgba.size() / 4);
}

// The episode panel of `session` at `where` ("--iteration I --episode E ..."), rendered headless into NAME.png.
Image EpisodePanel(const std::string& session, const std::string& where, const std::string& name) {
  const std::string png = Temp(name + ".png");
  Result r = Run(View(session + " --screenshot " + png + " " + where + " --panel episode"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  return Load(png);
}

// How many pixels' colours pass `test` (r, g, b).
template <typename Test>
size_t Pixels(const Image& img, Test test) {
  size_t n = 0;
  for (size_t i = 0; i + 3 < img.rgba.size(); i += 4) n += test(img.rgba[i], img.rgba[i + 1], img.rgba[i + 2]);
  return n;
}

// A small recorded Red-Black session, made once per test process with the real troupe binary.
const std::string& Fixture() {
  static std::string path;
  if (!path.empty()) return path;
  path = Temp("fixture.session");
  const std::string cmd = troupe::testing::TroupeBinary() + " train " + troupe::testing::SourceDir() +
                          "/workflows/shipped/red_black.textproto --quiet --no-eval --out " + Temp("fixture-run") +
                          " --set trainer.iterations=3 --set trainer.episodes_per_iteration=8 --record " + path;
  Result r = Run(cmd);
  INFO(r.output);
  REQUIRE(r.status == 0);
  return path;
}

}  // namespace

TEST_CASE("the session model follows a run, says when it ends, and starts over when the run restarts", "[viewer]") {
  SessionModel m;
  CHECK(m.status() == "waiting for a run");
  session::Event e;
  e.mutable_run_start()->set_run_id("one");
  e.mutable_run_start()->add_role("team_a");
  e.mutable_run_start()->set_workflow_text("name: \"w\" role { name: \"team_a\" model: \"m\" }");
  m.Add(e);
  CHECK(m.status() == "running");
  CHECK(m.workflow().role(0).name() == "team_a");
  for (int it = 1; it <= 3; ++it) {
    session::Event x;
    (*x.mutable_metrics()->mutable_values())["loss/m"] = 1.0 / it;
    x.mutable_metrics()->set_iteration(it);
    m.Add(x);
    session::Event c;
    c.mutable_credit()->set_iteration(it);
    c.mutable_credit()->set_reward_mean(it);
    m.Add(c);
    session::Event msg;
    msg.mutable_message()->set_iteration(it);
    msg.mutable_message()->set_text("red because");
    m.Add(msg);
  }
  CHECK(m.metrics.at("loss/m").y.size() == 3);
  CHECK(m.role_curves.at(0).at("reward").y.back() == 3.0f);
  CHECK(m.EpisodesOf(2).size() == 1);
  CHECK(m.last_iteration() == 3);
  session::Event end;
  end.mutable_run_end()->set_failed(true);
  end.mutable_run_end()->set_reason("model worker m#0 lost");
  m.Add(end);
  CHECK_THAT(m.status(), Catch::StartsWith("failed: model worker"));
  e.mutable_run_start()->set_run_id("two");
  m.Add(e);
  CHECK(m.status() == "restarted");
  CHECK(m.messages.empty());
}

TEST_CASE("the workflow graph holds roles, the game and channels, with a stable layout", "[viewer]") {
  config::Workflow w;
  w.mutable_game()->set_name("red_black");
  for (const char* name : {"a", "b", "c"}) {
    auto* r = w.add_role();
    r->set_name(name);
    r->set_model(std::string(name) == "c" ? "" : "m");
  }
  auto* ch = w.add_channel();
  ch->set_from("a");
  ch->set_to("b");
  ch->set_mode(config::HYBRID);
  session::RunStart run;
  for (int m : {0, 0, -1}) run.add_role_model(m);
  WorkflowGraph g = BuildWorkflowGraph(run, w);
  REQUIRE(g.nodes.size() == 4);  // three roles and the game
  CHECK(g.nodes[0].detail == "model m (shared)");
  CHECK(g.nodes[2].detail == "scripted: ");
  int channels = 0;
  for (const auto& e : g.edges) channels += e.mode == config::HYBRID;
  CHECK(channels == 1);
  WorkflowGraph again = BuildWorkflowGraph(run, w);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    CHECK(g.nodes[i].x == again.nodes[i].x);
    CHECK(g.nodes[i].x >= 0.0f);
    CHECK(g.nodes[i].x <= 1.0f);
  }
}

TEST_CASE("troupe-view renders each panel of a recorded session headless: not blank, and different by panel",
          "[viewer][screenshot]") {
  const std::string session = Fixture();
  std::map<std::string, Image> shots;
  for (const std::string panel : {"", "graph", "episode", "messages", "training", "controls"}) {
    const std::string png = Temp("shot-" + (panel.empty() ? std::string("all") : panel) + ".png");
    Result r = Run(View(session + " --screenshot " + png + " --iteration 3 --episode 0 --message 200" +
                        (panel.empty() ? "" : " --panel " + panel)));
    INFO(panel << ": " << r.output);
    REQUIRE(r.status == 0);
    Image img = Load(png);
    CHECK(img.w == 1280);
    CHECK(img.h == 800);
    CHECK(Colours(img) > 20);
    shots[panel] = img;
  }
  for (const auto& [a, ia] : shots) {
    for (const auto& [b, ib] : shots) {
      if (a < b) {
        INFO(a << " vs " << b);
        CHECK(Difference(ia, ib) > 0.02);
      }
    }
  }
}

TEST_CASE("troupe-view shows what it could read of a truncated or corrupted session and does not crash", "[viewer]") {
  const std::string session = Fixture();
  const std::string cut = Temp("cut.session"), bad = Temp("bad.session");
  fs::copy_file(session, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(cut) * 2 / 3 + 3);
  fs::copy_file(session, bad, fs::copy_options::overwrite_existing);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(bad) / 3));
    f.write("garbage!", 8);
  }
  for (const auto& file : {cut, bad}) {
    const std::string png = file + ".png";
    Result r = Run(View(file + " --screenshot " + png + " --panel controls"));
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("troupe-view: ") && Catch::Contains("events "));
    CHECK(Colours(Load(png)) > 20);
  }
  Result missing = Run(View(Temp("no-such.session") + " --screenshot " + Temp("none.png")));
  CHECK(missing.status == 1);
  CHECK_THAT(missing.output, Catch::Contains("cannot open"));
  CHECK_FALSE(fs::exists(Temp("none.png")));
  const std::string junk = Temp("junk.session");
  std::ofstream(junk) << "these bytes are not a session file at all, whatever their length";
  Result not_session = Run(View(junk + " --screenshot " + Temp("none.png")));
  CHECK(not_session.status == 1);
  CHECK_THAT(not_session.output, Catch::Contains("is not a troupe session file"));
}

TEST_CASE("troupe-view follows a live run over tcp and sees it end", "[viewer][live]") {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(troupe::testing::FreeTestPort(0));
  const std::string png = Temp("live.png");
  const std::string viewer = View("--connect " + endpoint + " --screenshot " + png + " --seconds 25 --panel controls");
  FILE* v = popen((viewer + " 2>&1").c_str(), "r");
  REQUIRE(v != nullptr);
  ::sleep(2);
  Result train = Run(troupe::testing::TroupeBinary() + " train " + troupe::testing::SourceDir() +
                     "/workflows/shipped/red_black.textproto --quiet --no-eval --out " + Temp("live-run") +
                     " --set trainer.iterations=2 --set trainer.episodes_per_iteration=8 --publish " + endpoint);
  INFO(train.output);
  REQUIRE(train.status == 0);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), v)) > 0) out.append(buf.data(), n);
  const int status = pclose(v);
  INFO(out);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(out, Catch::Contains("status: ended"));
  CHECK(Colours(Load(png)) > 20);
}

TEST_CASE("the Sugarscape view draws the recorded world: sugar and spice hills, traders and their trades",
          "[viewer][screenshot][sugarscape]") {
  const std::string session = Temp("sugarscape.session");
  Result run = Run(troupe::testing::TroupeBinary() + " run " + troupe::testing::SourceDir() +
                   "/workflows/shipped/sugarscape_g1mt.textproto --steps 40 --quiet --record " + session);
  INFO(run.output);
  REQUIRE(run.status == 0);
  const Image img = EpisodePanel(session, "--iteration 1 --episode 0", "sugarscape");
  // The grid's cells: gold where sugar grows, rust where spice does, light dots for traders.
  size_t gold = 0, rust = 0, light = 0;
  for (int y = 80; y < 640 && y < img.h; ++y) {
    for (int x = 8; x < 568 && x < img.w; ++x) {
      const unsigned char* p = &img.rgba[(static_cast<size_t>(y) * img.w + x) * 4];
      gold += p[1] > 120 && p[1] + 20 >= p[0] && p[2] < 80;
      rust += p[0] > 110 && p[0] > p[1] + 50 && p[2] < 80;
      light += p[0] > 150 && p[1] > 150 && p[2] > 150;
    }
  }
  CHECK(gold > 10000);
  CHECK(rust > 10000);
  CHECK(light > 500);
}

TEST_CASE("the pipeline view draws the graph with the active node and each tick's calls", "[viewer][screenshot][pipeline]") {
  const std::string session = Temp("pipeline.session");
  Result run = Run(troupe::testing::TroupeBinary() + " train " + troupe::testing::SourceDir() +
                   "/workflows/shipped/proposer_critic.textproto --quiet --no-eval --out " + Temp("pipeline-run") +
                   " --set trainer.iterations=1 --set trainer.episodes_per_iteration=8 --record " + session);
  INFO(run.output);
  REQUIRE(run.status == 0);
  const Image img = EpisodePanel(session, "--iteration 1 --episode 0", "pipeline");
  // Nodes and calls that ran are green; the nodes of the tick at the cursor (the last) are yellow.
  CHECK(Pixels(img, [](int r, int g, int b) { return g > 180 && r > 80 && r < 130 && b > 90 && b < 140; }) > 100);
  CHECK(Pixels(img, [](int r, int g, int b) { return r > 220 && g > 170 && g < 220 && b < 90; }) > 30);
}

TEST_CASE("the Red-Black view tints seats by model and marks the votes a persuasion probe saw swayed",
          "[viewer][screenshot][persuasion]") {
  // Team A: a teacher at one drawn seat among conformists, who vote as team B did last unless persuaded; team B:
  // always_defect with an untrained word model at b0. An evaluation with persuasion probes, recorded.
  const std::string workflow = Temp("persuaded.textproto");
  std::ofstream(workflow) << R"(name: "persuaded" seed: 3
game { name: "red_black" param { name: "team_size" int: 4 } param { name: "rounds" int: 4 } }
model { name: "m" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 160 } frozen: true }
role { name: "teacher" seats: "a*" draw: 1 scripted: "teacher" }
role { name: "pop" seats: "a*" scripted: "conformist" }
role { name: "rival" seats: "b0" model: "m" }
role { name: "b" seats: "b1" seats: "b2" seats: "b3" scripted: "always_defect" }
runtime { detail_episodes: 2 }
)";
  const std::string session = Temp("persuaded.session");
  Result run = Run(troupe::testing::TroupeBinary() + " eval " + workflow + " --episodes 4 --persuasion --record " +
                   session);
  INFO(run.output);
  REQUIRE(run.status == 0);
  CHECK_THAT(run.output, Catch::Contains("persuadability/pop"));
  SessionModel m;
  for (const auto& e : ReadSessionFile(session).events) m.Add(e);
  const EpisodeRecord* ep = m.Episode(0, 0);
  REQUIRE(ep != nullptr);
  REQUIRE(ep->seat_role.size() == 8);
  int teachers = 0, probed = 0, persuaded = 0;
  for (int seat = 0; seat < 4; ++seat) teachers += m.RoleName(m.RoleOfSeat(*ep, seat)) == "teacher";
  CHECK(teachers == 1);
  CHECK(m.ModelOfRole(m.RoleOfSeat(*ep, 4)) == 0);  // b0: model m
  CHECK(m.ModelOfRole(m.RoleOfSeat(*ep, 0)) == -1);  // team A: scripted
  for (size_t i : ep->messages) {
    const MessageRow& r = m.messages[i];
    if (r.phase != "vote" || r.recommended.empty()) continue;
    ++probed;
    persuaded += Persuaded(r);
  }
  CHECK(probed > 0);
  CHECK(persuaded > 0);
  const Image img = EpisodePanel(session, "--iteration 0 --episode 0 --message 400", "persuaded");
  // The "persuaded" marks' amber, and model m's seat (and its legend swatch).
  CHECK(Pixels(img, [](int r, int g, int b) { return r > 235 && g > 185 && g < 220 && b < 90; }) > 30);
  CHECK(Pixels(img, [](int r, int g, int b) { return r == 40 && g == 110 && b == 120; }) > 200);
}

TEST_CASE("the episode view says which seats a frozen snapshot played", "[viewer][screenshot][pools]") {
  // Team b learns with a pool of its own snapshots that plays every group (share 1), from the first iteration on.
  const std::string workflow = Temp("pools.textproto");
  std::ofstream(workflow) << R"(name: "pools" seed: 3
game { name: "red_black" param { name: "team_size" int: 3 } param { name: "rounds" int: 3 } }
model { name: "ma" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 160 } }
model { name: "mb" transformer { d_model: 16 heads: 2 layers: 1 ff_mult: 2 max_len: 160 } snapshots { every: 1 } }
role { name: "a" seats: "a*" model: "ma" }
role { name: "b" seats: "b*" model: "mb" pool { share: 1 } }
reward { level: ROLE signal: "format" weight: 1 }
credit { group_size: 4 }
trainer { iterations: 1 episodes_per_iteration: 8 minibatch: 64 }
runtime { detail_episodes: 1 }
)";
  const std::string session = Temp("pools.session");
  Result run = Run(troupe::testing::TroupeBinary() + " train " + workflow + " --out " + Temp("pools-run") +
                   " --no-eval --quiet --record " + session);
  INFO(run.output);
  REQUIRE(run.status == 0);
  SessionModel m;
  for (const auto& e : ReadSessionFile(session).events) m.Add(e);
  const EpisodeRecord* ep = m.Episode(1, 0);
  REQUIRE(ep != nullptr);
  REQUIRE(ep->seat_snapshot.size() == 6);
  CHECK(ep->seat_snapshot[0].empty());                   // a0: the current model
  CHECK(ep->seat_snapshot[3] == "mb@iter-000000");       // b0: the snapshot taken at the start
  const Image img = EpisodePanel(session, "--iteration 1 --episode 0 --message 400", "pools");
  // The snapshot line's lavender.
  CHECK(Pixels(img, [](int r, int g, int b) { return r > 175 && r < 205 && g > 150 && g < 180 && b > 240; }) > 30);
}
