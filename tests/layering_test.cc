// The layering of the source tree (docs/layout.md): each folder may
// include only the layers below it. This reads every source file's #include
// lines, so a change that makes a lower layer reach up fails here.
#include <catch2/catch.hpp>

#include "tests/test_paths.h"

#include <filesystem>
#include <fstream>
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
  if (path == "workflows/config/model_spec.h" || path == "workflows/config/runtime_settings.h") return "specs";
  if (starts("workflows/config/")) return "config";
  if (starts("workflows/runtime/")) return "runtime";
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
      {"run", {{"base", "proto", "comms", "core", "arch_specs", "models", "specs", "config", "runtime", "run"}, false, true, true}},
      {"workflows",
       {{"base", "proto", "comms", "core", "arch_specs", "models", "games", "specs", "config", "runtime", "run",
         "workflows"},
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

}  // namespace

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
  std::ofstream(root / "workflows/runtime/spec.cc") << "#include \"workflows/config/model_spec.h\"\n"
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
