// The documentation against the code: the workflow file reference is what
// the schema and the defaults tables generate; every relative link and every
// repository path the README, docs/ and examples/ name resolves (links to a
// heading find it); every workflow they name validates.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/test_paths.h"
#include "tests/test_support.h"
#include "workflows/config/workflow_reference.h"

namespace fs = std::filesystem;

namespace {

const fs::path& Root() {
  static const fs::path root = troupe::testing::SourceDir();
  return root;
}

// README.md and every Markdown page under docs/ and examples/.
std::vector<fs::path> Pages() {
  std::vector<fs::path> pages{Root() / "README.md"};
  for (const char* folder : {"docs", "examples"}) {
    for (const auto& e : fs::recursive_directory_iterator(Root() / folder)) {
      if (e.is_regular_file() && e.path().extension() == ".md") pages.push_back(e.path());
    }
  }
  return pages;
}

// A page's text outside fenced code blocks, line by line.
std::vector<std::string> ProseLines(const fs::path& page) {
  std::ifstream in(page);
  std::vector<std::string> lines;
  bool fence = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fence = !fence;
    else if (!fence) lines.push_back(line);
  }
  return lines;
}

// The anchors of a page's headings, as Markdown renderers make them.
std::set<std::string> Anchors(const fs::path& page) {
  std::set<std::string> anchors;
  for (const std::string& line : ProseLines(page)) {
    if (line.empty() || line[0] != '#') continue;
    std::string text = line.substr(line.find_first_not_of('#')), anchor;
    for (char c : text) {
      if (std::isalnum(static_cast<unsigned char>(c))) anchor += static_cast<char>(std::tolower(c));
      else if (c == ' ' || c == '-') anchor += '-';
      else if (c == '_') anchor += '_';
    }
    while (!anchor.empty() && anchor.front() == '-') anchor.erase(anchor.begin());
    anchors.insert(anchor);
  }
  return anchors;
}

// Repository paths a page names in backticks (`core/models/gpt2/gpt2.h`),
// placeholders (NAME, FILE, *) and generated outputs left out.
std::vector<std::string> NamedPaths(const fs::path& page) {
  static const std::regex code("`([^`\\s]+)`");
  static const std::regex repo_path(
      "(core|comms|games|workflows|viewer|tests|examples|bench|scripts|docs|\\.ci)/[A-Za-z0-9_./-]*");
  std::vector<std::string> paths;
  for (const std::string& line : ProseLines(page)) {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), code); it != std::sregex_iterator(); ++it) {
      const std::string p = (*it)[1];
      if (!std::regex_match(p, repo_path) || p.find("NAME") != std::string::npos || p.find("..") != std::string::npos) {
        continue;
      }
      paths.push_back(p);
    }
  }
  return paths;
}

// Workflow files a page names: paths, and bare names (a file beside the page, or a shipped one).
std::set<std::string> NamedWorkflows(const fs::path& page) {
  static const std::regex bare("`([a-z0-9_]+\\.textproto)`");
  std::set<std::string> workflows;
  for (const std::string& p : NamedPaths(page)) {
    if (p.size() > 10 && p.substr(p.size() - 10) == ".textproto") workflows.insert(p);
  }
  for (const std::string& line : ProseLines(page)) {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), bare); it != std::sregex_iterator(); ++it) {
      const fs::path beside = page.parent_path() / (*it)[1].str();
      workflows.insert(fs::exists(beside) ? fs::relative(beside, Root()).string()
                                          : "workflows/shipped/" + (*it)[1].str());
    }
  }
  return workflows;
}

}  // namespace

TEST_CASE("the workflow file reference is what the schema and the defaults tables generate", "[docs]") {
  const std::string page = troupe::testing::ReadFile((Root() / "docs/reference/workflow.md").string());
  INFO("regenerate it: ./build/workflows/troupe reference > docs/reference/workflow.md");
  REQUIRE(!page.empty());
  CHECK(page == troupe::WorkflowReferenceMarkdown());
  // It covers every architecture and states the defaults, e.g. GPT-2's activation.
  CHECK_THAT(page, Catch::Contains("## Gpt2Spec") && Catch::Contains("| `activation` | string | `\"gelu_new\"` |"));
}

TEST_CASE("every relative link and every repository path the docs name resolves", "[docs]") {
  static const std::regex link("\\]\\(([^)\\s]+)\\)");
  int links = 0, paths = 0;
  for (const fs::path& page : Pages()) {
    const std::string name = fs::relative(page, Root()).string();
    for (const std::string& line : ProseLines(page)) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), link); it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1];
        if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) continue;
        const size_t hash = target.find('#');
        const std::string file = target.substr(0, hash),
                          anchor = hash == std::string::npos ? "" : target.substr(hash + 1);
        const fs::path resolved = file.empty() ? page : page.parent_path() / file;
        INFO(name << ": link " << target);
        CHECK(fs::exists(resolved));
        if (!anchor.empty() && fs::exists(resolved) && resolved.extension() == ".md") {
          CHECK(Anchors(resolved).count(anchor) == 1);
        }
        ++links;
      }
    }
    for (const std::string& p : NamedPaths(page)) {
      INFO(name << ": names " << p);
      CHECK(fs::exists(Root() / p));
      ++paths;
    }
  }
  CHECK(links >= 40);
  CHECK(paths >= 60);
}

TEST_CASE("every workflow the docs name validates", "[docs][workflows]") {
  // Run from a folder where the base model's stand-in sits at runs/base_model
  // and the repository's folders are at hand, as workflow paths are relative.
  const fs::path dir = troupe::testing::MakeStandInBaseModel("troupe-docs-base");
  for (const char* folder : {"bench", "examples", "tests", "workflows"})
    fs::create_directory_symlink(Root() / folder, dir / folder);
  std::set<std::string> workflows;
  for (const fs::path& page : Pages()) {
    for (const std::string& w : NamedWorkflows(page)) {
      INFO(fs::relative(page, Root()).string() << " names " << w);
      CHECK(fs::exists(Root() / w));
      workflows.insert(w);
    }
  }
  // A custom game's or tool's workflow validates with the troupe binary that links it.
  const std::map<std::string, std::string> binaries = {
      {"examples/custom_game/", troupe::testing::BinaryDir() + "/examples/custom_game/troupe-custom"},
      {"examples/custom_tool/", troupe::testing::BinaryDir() + "/examples/custom_tool/troupe-with-tool"}};
  for (const std::string& w : workflows) {
    if (!fs::exists(Root() / w)) continue;
    std::string troupe = troupe::testing::TroupeBinary();
    for (const auto& [folder, binary] : binaries) {
      if (w.rfind(folder, 0) == 0) troupe = binary;
    }
    const troupe::testing::CommandResult r =
        troupe::testing::RunCommand("cd " + dir.string() + " && " + troupe + " validate " + w);
    INFO(w << ":\n" << r.output);
    CHECK(r.status == 0);
  }
  CHECK(workflows.size() >= 15);
}
