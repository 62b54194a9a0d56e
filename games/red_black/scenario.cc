// Red-Black scenarios: parsed from JSON, checked field by field with the
// field's position in the file, and looked up by name or split.
#include "games/red_black/scenario.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/file_io.h"

namespace troupe::red_black {

extern const std::vector<std::pair<std::string, std::string>> kBuiltInScenarioFiles;  // scenarios_data.cc

namespace {

using nlohmann::json;

// line:col of byte `offset` of `text` (1-based).
std::string Position(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  const size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const size_t col = line_start == std::string::npos || offset == 0 ? offset + 1 : offset - line_start;
  return std::to_string(line) + ":" + std::to_string(col);
}

// Where the `nth` (0-based) key `key` of the text is (a JSON key: "key" then ':'), or the start.
size_t KeyOffset(const std::string& text, const std::string& key, int nth = 0) {
  const std::string quoted = "\"" + key + "\"";
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    size_t after = at + quoted.size();
    while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
    if (after < text.size() && text[after] == ':' && nth-- == 0) return at;
  }
  return 0;
}

class Checker {
 public:
  Checker(const std::string& text, std::string source) : text_(text), source_(std::move(source)) {}

  [[noreturn]] void Fail(const std::string& key, int nth, const std::string& message) const {
    throw GameError(source_ + ":" + Position(text_, key.empty() ? 0 : KeyOffset(text_, key, nth)) + ": " + message,
                    "scenario");
  }

  std::string Text(const json& object, const std::string& key, size_t min, size_t max, int nth = 0) const {
    if (!object.contains(key)) Fail("", 0, "'" + key + "' is missing");
    if (!object.at(key).is_string()) Fail(key, nth, "'" + key + "' is text (in quotes)");
    const std::string value = object.at(key).get<std::string>();
    if (value.size() < min || value.size() > max) {
      Fail(key, nth,
           "'" + key + "' is " + std::to_string(min) + " to " + std::to_string(max) + " characters, not " +
               std::to_string(value.size()));
    }
    return value;
  }

 private:
  const std::string& text_;
  std::string source_;
};

bool Letters(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalpha(c); });
}

// A meaning's words as a word-vocabulary model reads them: lower case, letters and apostrophes.
std::vector<std::string> Words(const std::string& phrase) {
  std::vector<std::string> words;
  std::string word;
  for (char ch : phrase + " ") {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalpha(c) || c == '\'') {
      word += static_cast<char>(std::tolower(c));
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  return words;
}

std::string ReadFile(const std::string& path) {
  try {
    return ReadWholeFile(path);
  } catch (const Error&) {
    throw GameError("scenario: cannot read '" + path + "'", "scenario");  // the param, not only the path
  }
}

}  // namespace

std::vector<std::string> Scenario::OrderedLabels() const {
  const Choice second = listed_first == Choice::kRed ? Choice::kBlack : Choice::kRed;
  return {Label(listed_first), Label(second)};
}

std::vector<std::string> Scenario::Preamble() const {
  if (plain()) return {};
  std::vector<std::string> words;
  for (const std::string& label : OrderedLabels()) {
    words.push_back(label);
    const Choice c = label == Label(Choice::kBlack) ? Choice::kBlack : Choice::kRed;
    for (std::string& w : Words(meanings[static_cast<int>(c)])) words.push_back(std::move(w));
  }
  return words;
}

const Scenario& PlainScenario() {
  static const Scenario plain = [] {
    Scenario s;
    s.name = "plain";
    s.split = "held_out";
    s.title = "Red-Black";
    s.teams = {"team A", "team B"};
    s.labels = {"black", "red"};
    s.listed_first = Choice::kRed;  // "red or black"
    return s;
  }();
  return plain;
}

Scenario ParseScenario(const std::string& json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // nlohmann's message says "[json.exception...] parse error at line L, column C: what"; keep the what.
    const std::string what = e.what();
    const size_t column = what.find("column");
    const size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
    throw GameError(source + ":" + Position(json_text, e.byte == 0 ? 0 : e.byte - 1) +
                        ": not JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)),
                    "scenario");
  }
  Checker check(json_text, source);
  if (!j.is_object()) check.Fail("", 0, "a scenario is a JSON object ({...})");
  static const std::set<std::string> kKeys = {"name", "split", "title", "story", "teams", "options", "points"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) {
      check.Fail(key, 0,
                 "unknown field '" + key + "' (a scenario has name, split, title, story, teams, options, points)");
    }
  }
  Scenario s;
  s.name = check.Text(j, "name", 1, 40);
  if (!std::all_of(s.name.begin(), s.name.end(),
                   [](unsigned char c) { return std::islower(c) || std::isdigit(c) || c == '_'; })) {
    check.Fail("name", 0, "'name' is lower-case letters, digits and '_' (it names the scenario in workflows)");
  }
  if (s.name == "plain" || s.name == "training" || s.name == "held_out") {
    check.Fail("name", 0, "'" + s.name + "' is taken (the plain game and the two splits)");
  }
  if (j.contains("split")) {
    s.split = check.Text(j, "split", 0, 20);
    if (s.split != "training" && s.split != "held_out")
      check.Fail("split", 0, "'split' is \"training\" or \"held_out\"");
  }
  s.title = check.Text(j, "title", 1, 40);
  s.story = check.Text(j, "story", 20, 600);
  if (s.story.find_first_of(".!?") == std::string::npos) check.Fail("story", 0, "'story' is two or three sentences");
  s.points = check.Text(j, "points", 1, 60);

  if (!j.contains("teams") || !j["teams"].is_array() || j["teams"].size() != 2) {
    check.Fail(j.contains("teams") ? "teams" : "", 0, "'teams' is a list of the two teams' names");
  }
  for (int t = 0; t < 2; ++t) {
    const json& team = j["teams"][t];
    if (!team.is_string() || team.get<std::string>().empty() || team.get<std::string>().size() > 40) {
      check.Fail("teams", 0, "each team's name is text of 1 to 40 characters");
    }
    s.teams[t] = team.get<std::string>();
  }
  if (s.teams[0] == s.teams[1]) check.Fail("teams", 0, "the two teams' names differ");

  if (!j.contains("options") || !j["options"].is_array() || j["options"].size() != 2) {
    check.Fail(j.contains("options") ? "options" : "", 0, "'options' is a list of the two options");
  }
  int cooperative = 0;
  std::array<std::string, 2> labels, meanings;
  std::array<bool, 2> is_cooperative{};
  for (int o = 0; o < 2; ++o) {
    const json& option = j["options"][o];
    if (!option.is_object()) check.Fail("options", 0, "each option is {\"label\": ..., \"means\": ...}");
    for (const auto& [key, value] : option.items()) {
      if (key != "label" && key != "means" && key != "cooperative") {
        check.Fail(key, 0, "unknown option field '" + key + "' (an option has label, means, cooperative)");
      }
    }
    labels[o] = check.Text(option, "label", 1, 12, o);
    if (!Letters(labels[o])) check.Fail("label", o, "a label is one word of letters (agents say it to choose)");
    meanings[o] = check.Text(option, "means", 1, 60, o);
    if (Words(meanings[o]).empty()) check.Fail("means", o, "'means' says in words what the option is");
    if (option.contains("cooperative")) {
      if (!option["cooperative"].is_boolean()) check.Fail("cooperative", 0, "'cooperative' is true or false");
      is_cooperative[o] = option["cooperative"].get<bool>();
      cooperative += is_cooperative[o];
    }
  }
  if (cooperative != 1) {
    check.Fail("options", 0, "exactly one option is \"cooperative\": true (the one both teams gain by choosing)");
  }
  std::string a = labels[0], b = labels[1];
  std::transform(a.begin(), a.end(), a.begin(), ::tolower);
  std::transform(b.begin(), b.end(), b.begin(), ::tolower);
  if (a == b) check.Fail("label", 1, "the two options' labels differ");
  const int coop = is_cooperative[0] ? 0 : 1;
  s.labels = {labels[coop], labels[1 - coop]};
  s.meanings = {meanings[coop], meanings[1 - coop]};
  s.listed_first = coop == 0 ? Choice::kBlack : Choice::kRed;
  return s;
}

const std::vector<Scenario>& BuiltInScenarios() {
  static const std::vector<Scenario> scenarios = [] {
    std::vector<Scenario> all = {PlainScenario()};
    for (const auto& [file, text] : kBuiltInScenarioFiles) {
      all.push_back(ParseScenario(text, "games/red_black/scenarios/" + file));
    }
    return all;
  }();
  return scenarios;
}

std::vector<Scenario> ResolveScenarios(const std::string& param) {
  if (param.empty()) return {PlainScenario()};
  std::vector<Scenario> out;
  std::stringstream items(param);
  std::string item;
  while (std::getline(items, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) continue;
    const bool path = item.find('/') != std::string::npos || std::filesystem::path(item).extension() == ".json";
    if (path) {
      out.push_back(ParseScenario(ReadFile(item), item));
      continue;
    }
    const size_t before = out.size();
    for (const Scenario& s : BuiltInScenarios()) {
      if (s.name == item || s.split == item) out.push_back(s);
    }
    if (out.size() == before) {
      std::string names;
      for (const Scenario& s : BuiltInScenarios()) names += (names.empty() ? "" : ", ") + s.name;
      throw GameError("scenario: no scenario '" + item + "' (built in: " + names +
                          "; or \"training\", \"held_out\", or a path to a .json file)",
                      "scenario");
    }
  }
  if (out.empty()) return {PlainScenario()};
  return out;
}

}  // namespace troupe::red_black
