// Reading demonstrations from JSONL files and recorded sessions.
#include "workflows/config/sft_data.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comms/session_file.h"
#include "core/base/errors.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"

namespace troupe {

namespace {

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

int TrainedRole(const CompiledWorkflow& c, const std::string& name) {
  for (size_t r = 0; r < c.rollout.roles.size(); ++r) {
    if (c.rollout.roles[r].name == name && c.rollout.roles[r].learns())
      return static_cast<int>(r);  // frozen: not trained
  }
  return -1;
}

// The first word outside the vocabulary, or "" when every word is in it (or
// the role's model reads text, where every word is).
std::string UnknownWord(const CompiledWorkflow& c, int role, const std::vector<std::string>& words) {
  if (c.rollout.Codec(role).reads_text()) return "";
  for (const std::string& w : words) {
    if (c.rollout.vocab.Id(w) == Vocab::kUnk) return w;
  }
  return "";
}

std::vector<Demonstration> FromJsonl(const LoadedWorkflow& loaded, const CompiledWorkflow& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) loaded.Fail({{"trainer"}, {"sft"}, {"jsonl"}}, "cannot open demonstrations " + path);
  std::vector<Demonstration> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto fail = [&](const std::string& why) { throw ConfigError(path, number, 1, why); };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail(std::string("not a JSON object: ") + e.what());
    }
    for (const char* field : {"role", "prompt", "response"}) {
      if (!j.is_object() || !j.contains(field) || !j[field].is_string()) fail(std::string("needs a string \"") + field + "\"");
    }
    Demonstration d;
    d.role = TrainedRole(c, j["role"].get<std::string>());
    if (d.role < 0)
      fail("'" + j["role"].get<std::string>() +
           "' is not a trained role of this workflow (scripted, on a frozen model, or unknown)");
    d.prompt_text = j["prompt"].get<std::string>();
    d.prompt = Words(d.prompt_text);
    d.response = Words(j["response"].get<std::string>());
    if (d.response.empty()) fail("the response is empty");
    for (const auto* words : {&d.prompt, &d.response}) {
      const std::string unknown = UnknownWord(c, d.role, *words);
      if (!unknown.empty()) fail("'" + unknown + "' is not a word of this workflow's vocabulary");
    }
    d.origin = path + ":" + std::to_string(number);
    out.push_back(std::move(d));
  }
  if (out.empty()) loaded.Fail({{"trainer"}, {"sft"}, {"jsonl"}}, path + " holds no demonstrations");
  return out;
}

std::vector<Demonstration> FromSession(const LoadedWorkflow& loaded, const CompiledWorkflow& c,
                                       const std::string& path) {
  SessionContents contents;
  try {
    contents = ReadSessionFile(path);
  } catch (const Error& e) {
    loaded.Fail({{"trainer"}, {"sft"}, {"session"}}, e.what());
  }
  std::vector<std::string> roles;  // the recording's roles by index
  std::vector<Demonstration> out;
  for (size_t i = 0; i < contents.events.size(); ++i) {
    const session::Event& e = contents.events[i];
    if (e.has_run_start()) roles.assign(e.run_start().role().begin(), e.run_start().role().end());
    if (!e.has_message()) continue;
    const session::Message& m = e.message();
    if (!m.valid() || m.channel() != "TEXT" || m.prompt().empty() || m.role() < 0 ||
        m.role() >= static_cast<int>(roles.size())) {
      continue;
    }
    Demonstration d;
    d.role = TrainedRole(c, roles[m.role()]);
    if (d.role < 0) continue;  // a role this workflow does not train (e.g. the scripted opponents)
    d.prompt_text = m.prompt();
    d.prompt = Words(d.prompt_text);
    d.response = Words(m.text());
    if (d.response.empty() || !UnknownWord(c, d.role, d.prompt).empty() || !UnknownWord(c, d.role, d.response).empty())
      continue;
    d.origin = path + ": event " + std::to_string(i);
    out.push_back(std::move(d));
  }
  if (out.empty()) {
    loaded.Fail({{"trainer"}, {"sft"}, {"session"}},
                path + " holds no valid text call, with its prompt, of a role this workflow trains");
  }
  return out;
}

}  // namespace

std::vector<Demonstration> LoadDemonstrations(const LoadedWorkflow& loaded, const CompiledWorkflow& c) {
  const config::SftSpec& sft = c.proto.trainer().sft();
  std::vector<Demonstration> out;
  if (!sft.jsonl().empty()) out = FromJsonl(loaded, c, sft.jsonl());
  if (!sft.session().empty()) {
    std::vector<Demonstration> recorded = FromSession(loaded, c, sft.session());
    out.insert(out.end(), std::make_move_iterator(recorded.begin()), std::make_move_iterator(recorded.end()));
  }
  return out;
}

}  // namespace troupe
