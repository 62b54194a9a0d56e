// The layering of the source tree (docs/layout.md): each folder may
// include only the layers below it. This reads every source file's #include
// lines, so a change that makes a lower layer reach up fails here.
#include <catch2/catch.hpp>

#include "tests/test_paths.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// The layer of a project path ("core/models/trainer.h" -> "models"), or "" when it is not layered.
std::string LayerOf(const std::string& path) {
  auto starts = [&](const char* prefix) { return path.rfind(prefix, 0) == 0; };
  if (starts("core/base/")) return "base";
  // Each architecture's torch-free half: its options, defaults and config.json.
  static const std::regex spec_file(R"(core/models/(architecture_spec|[a-z0-9_]+/[a-z0-9_]+_spec)\.(h|cc))");
  if (std::regex_match(path, spec_file)) return "arch_specs";
  if (starts("core/models/")) return "models";
  if (starts("core/")) return "core";
  if (starts("comms/proto/")) return "proto";
  if (starts("comms/")) return "comms";
  if (starts("games/")) return "games";
  // The narrow specs the runtime is given: no workflow, no game.
  if (starts("workflows/specs/")) return "specs";
  if (starts("workflows/config/")) return "config";
  if (starts("workflows/runtime/")) return "runtime";
  if (starts("workflows/rollout/")) return "rollout";
  if (starts("workflows/report/")) return "report";
  if (starts("workflows/run/")) return "run";
  if (starts("workflows/")) return "workflows";  // cli: the top
  if (starts("viewer/")) return "viewer";
  return "";
}

// What each layer may include from the project, and which outside libraries.
struct Rule {
  std::set<std::string> layers;
  bool torch = false;
  bool zmq = false;
  bool protobuf = false;
};

const std::map<std::string, Rule>& Rules() {
  static const std::map<std::string, Rule> rules = {
      {"base", {{"base"}, false, false, false}},
      {"proto", {{"proto"}, false, false, true}},
      {"comms", {{"base", "proto", "comms"}, false, true, true}},
      {"core", {{"base", "core"}, false, false, false}},
      {"arch_specs", {{"base", "proto", "core", "arch_specs"}, false, false, true}},
      {"models", {{"base", "proto", "core", "arch_specs", "models"}, true, false, true}},
      {"games", {{"base", "core", "games"}, false, false, false}},
      {"specs", {{"base", "proto", "core", "arch_specs", "models", "specs"}, false, false, true}},
      {"config", {{"base", "proto", "comms", "core", "arch_specs", "models", "specs", "config"}, false, false, true}},
      {"runtime", {{"base", "proto", "comms", "core", "arch_specs", "models", "specs", "runtime"}, false, true, true}},
      {"rollout", {{"base", "proto", "comms", "core", "arch_specs", "models", "specs", "config", "runtime", "rollout"},
                   false, false, true}},
      {"report",
       {{"base", "proto", "comms", "core", "arch_specs", "models", "specs", "config", "runtime", "rollout", "report"},
        false,
        true,
        true}},
      {"run",
       {{"base", "proto", "comms", "core", "arch_specs", "models", "specs", "config", "runtime", "rollout", "report",
         "run"},
        false,
        true,
        true}},
      {"workflows",
       {{"base", "proto", "comms", "core", "arch_specs", "models", "games", "specs", "config", "runtime", "rollout",
         "report", "run", "workflows"},
        false,
        true,
        true}},
      {"viewer", {{"base", "proto", "comms", "viewer"}, false, true, true}},
  };
  return rules;
}

// "file: includes X (layer L may not)" for every include that breaks the rules under `root`.
std::vector<std::string> LayeringViolations(const fs::path& root) {
  static const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<std::string> found;
  for (const char* top : {"core", "comms", "games", "workflows", "viewer"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
      const std::string file = fs::relative(entry.path(), root).generic_string();
      const std::string layer = LayerOf(file);
      const Rule& rule = Rules().at(layer);
      std::ifstream in(entry.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line)) {
        if (!std::regex_search(line, m, include_line)) continue;
        const std::string inc = m[1];
        const std::string target = LayerOf(inc);
        std::string why;
        if (!target.empty() && rule.layers.count(target) == 0) why = "layer " + target;
        if (!rule.torch && (inc.rfind("torch/", 0) == 0 || inc.rfind("ATen/", 0) == 0 || inc.rfind("c10/", 0) == 0)) {
          why = "LibTorch";
        }
        if (!rule.zmq && (inc == "zmq.hpp" || inc == "zmq.h")) why = "ZeroMQ";
        if (!rule.protobuf && inc.rfind("google/protobuf/", 0) == 0) why = "Protobuf";
        if (!why.empty()) found.push_back(file + ": includes " + inc + " (" + why + "; layer " + layer + " may not)");
      }
    }
  }
  return found;
}

// The project's libraries and programs and what each links, from every
// CMakeLists.txt under `root`: "torch" stands for LibTorch; a library linked
// whole ("$<LINK_LIBRARY:WHOLE_ARCHIVE,x>") counts as x.
std::map<std::string, std::set<std::string>> LinkEdges(const fs::path& root) {
  static const std::regex target(R"((?:add_library|add_executable)\(\s*([A-Za-z0-9_-]+))");
  static const std::regex links(R"(target_link_libraries\(\s*([A-Za-z0-9_-]+)([^)]*)\))");
  static const std::regex token(R"(\$<LINK_LIBRARY:[A-Z_]+,([A-Za-z0-9_-]+)>|\$\{TORCH_LIBRARIES\}|[A-Za-z0-9_:-]+)");
  std::map<std::string, std::set<std::string>> edges;
  std::vector<std::string> texts;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(entry.path(), root).generic_string();
    if (rel.rfind("build", 0) == 0 || entry.path().filename() != "CMakeLists.txt") continue;
    std::ifstream in(entry.path());
    texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const std::string& text : texts) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), target); it != std::sregex_iterator(); ++it) {
      edges[(*it)[1]];
    }
  }
  for (const std::string& text : texts) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), links); it != std::sregex_iterator(); ++it) {
      const std::string from = (*it)[1], list = (*it)[2];
      for (auto t = std::sregex_iterator(list.begin(), list.end(), token); t != std::sregex_iterator(); ++t) {
        std::string to = (*t)[1].matched ? (*t)[1].str() : (*t)[0].str();
        if (to == "${TORCH_LIBRARIES}") to = "torch";
        if (to == "torch" || edges.count(to)) edges[from].insert(to);
      }
    }
  }
  return edges;
}

// Everything `from` links, directly or through what it links.
std::set<std::string> Reaches(const std::map<std::string, std::set<std::string>>& edges, const std::string& from) {
  std::set<std::string> seen;
  std::vector<std::string> todo{from};
  while (!todo.empty()) {
    const std::string t = todo.back();
    todo.pop_back();
    auto it = edges.find(t);
    if (it == edges.end()) continue;
    for (const std::string& next : it->second) {
      if (seen.insert(next).second) todo.push_back(next);
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("no library links a layer above it: the runtime links no config code, the viewer no LibTorch", "[layering]") {
  const auto edges = LinkEdges(troupe::testing::SourceDir());
  // library -> what it must never reach, directly or not
  const std::map<std::string, std::set<std::string>> forbidden = {
      {"troupe_base", {"torch", "troupe_models", "troupe_config"}},
      {"troupe_proto", {"torch", "troupe_models", "troupe_config"}},
      {"troupe_core", {"torch", "troupe_models", "troupe_config"}},
      {"troupe_architecture_specs", {"torch", "troupe_models", "troupe_config"}},
      {"troupe_comms", {"torch", "troupe_models", "troupe_config"}},
      {"troupe_text", {"torch", "troupe_models", "troupe_config"}},
      {"troupe_specs", {"torch", "troupe_models", "troupe_config", "troupe_runtime"}},
      {"troupe_config", {"torch", "troupe_models", "troupe_runtime", "troupe_run"}},
      {"troupe_models", {"troupe_config", "troupe_specs", "troupe_runtime", "troupe_run"}},
      {"troupe_runtime", {"troupe_config", "troupe_run", "troupe_games"}},
      {"troupe_viewer", {"torch", "troupe_models", "troupe_config", "troupe_runtime"}},
      {"troupe-view", {"torch", "troupe_models", "troupe_config", "troupe_runtime"}},
  };
  for (const auto& [library, never] : forbidden) {
    INFO(library);
    REQUIRE(edges.count(library) == 1);
    const std::set<std::string> reached = Reaches(edges, library);
    for (const std::string& n : never) {
      INFO("reaches " << n);
      CHECK(reached.count(n) == 0);
    }
  }
  // The check sees real edges: the runtime reaches the models and LibTorch's users, the program everything.
  CHECK(Reaches(edges, "troupe_runtime").count("troupe_models") == 1);
  CHECK(Reaches(edges, "troupe").count("troupe_config") == 1);
  CHECK(Reaches(edges, "troupe").count("torch") == 1);
}

TEST_CASE("no layer of the source tree includes a layer above it", "[layering]") {
  const std::vector<std::string> violations = LayeringViolations(troupe::testing::SourceDir());
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
}

TEST_CASE("the layering check finds a lower layer reaching up", "[layering]") {
  const fs::path root = fs::temp_directory_path() / "troupe-layering";
  fs::remove_all(root);
  fs::create_directories(root / "core/base");
  fs::create_directories(root / "viewer");
  fs::create_directories(root / "comms");
  fs::create_directories(root / "workflows/runtime");
  std::ofstream(root / "core/base/ok.h") << "#include <string>\n#include \"core/base/errors.h\"\n";
  std::ofstream(root / "core/base/up.cc") << "#include \"workflows/run/train_run.h\"\n";
  std::ofstream(root / "viewer/torch.cc") << "#  include <torch/torch.h>\n";
  std::ofstream(root / "comms/models.cc") << "#include \"core/models/trainer.h\"\n";
  // The runtime gets narrow specs, never the compiled workflow (and its game).
  std::ofstream(root / "workflows/runtime/spec.cc") << "#include \"workflows/specs/model_spec.h\"\n"
                                                    << "#include \"workflows/config/compiled_workflow.h\"\n";
  const std::vector<std::string> v = LayeringViolations(root);
  REQUIRE(v.size() == 4);
  std::string all;
  for (const auto& s : v) all += s + "\n";
  CHECK_THAT(all, Catch::Contains("core/base/up.cc: includes workflows/run/train_run.h (layer run"));
  CHECK_THAT(all, Catch::Contains("viewer/torch.cc: includes torch/torch.h (LibTorch"));
  CHECK_THAT(all, Catch::Contains("comms/models.cc: includes core/models/trainer.h (layer models"));
  CHECK_THAT(all,
             Catch::Contains("workflows/runtime/spec.cc: includes workflows/config/compiled_workflow.h (layer config"));
  fs::remove_all(root);
}
