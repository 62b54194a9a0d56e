// Reading and writing QA passages and questions as JSON lines.
#include "games/qa/qa_dataset.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe::qa {

namespace {

using nlohmann::json;

// Calls `row` with each non-blank line's JSON object and its "file:line" place.
template <typename Row>
void ForEachJsonLine(const std::string& path, Row row) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      throw Error(where + ": not JSON: " + e.what());
    }
    if (!j.is_object()) throw Error(where + ": expected one JSON object a line");
    row(j, where);
  }
}

std::string RequiredText(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
    throw Error(where + ": \"" + key + "\" must be a non-empty string");
  }
  return it->get<std::string>();
}

std::vector<std::string> TextList(const json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (it->is_string()) return {it->get<std::string>()};
  if (!it->is_array()) throw Error(where + ": \"" + key + "\" must be a list of strings");
  for (const auto& v : *it) {
    if (!v.is_string()) throw Error(where + ": \"" + key + "\" must be a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

std::vector<QaRecord> ReadQuestions(const std::string& path) {
  std::vector<QaRecord> records;
  ForEachJsonLine(path, [&](const json& j, const std::string& where) {
    QaRecord r;
    r.id = RequiredText(j, "id", where);
    r.question = RequiredText(j, "question", where);
    r.answers = TextList(j, "answers", where);
    if (r.answers.empty()) throw Error(where + ": \"answers\" must list at least one answer");
    if (j.contains("type")) r.type = RequiredText(j, "type", where);
    if (j.contains("relation") && j["relation"].is_string()) r.relation = j["relation"].get<std::string>();
    r.hops = TextList(j, "hops", where);
    r.supporting = TextList(j, "supporting", where);
    r.decomposition = TextList(j, "decomposition", where);
    records.push_back(std::move(r));
  });
  if (records.empty()) throw Error(path + ": no questions");
  return records;
}

std::vector<Passage> ReadPassages(const std::string& path) {
  std::vector<Passage> passages;
  ForEachJsonLine(path, [&](const json& j, const std::string& where) {
    passages.push_back({RequiredText(j, "id", where), RequiredText(j, "title", where), RequiredText(j, "text", where)});
  });
  if (passages.empty()) throw Error(path + ": no passages");
  return passages;
}

void WriteQuestions(const std::string& path, const std::vector<QaRecord>& records) {
  std::string out;
  for (const auto& r : records) {
    json j = {{"id", r.id},       {"question", r.question}, {"answers", r.answers},
              {"type", r.type},   {"relation", r.relation}, {"hops", r.hops},
              {"supporting", r.supporting}, {"decomposition", r.decomposition}};
    out += j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  WriteFileAtomically(path, out);
}

void WritePassages(const std::string& path, const std::vector<Passage>& passages) {
  std::string out;
  for (const auto& p : passages) out += json({{"id", p.id}, {"title", p.title}, {"text", p.text}}).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  WriteFileAtomically(path, out);
}

}  // namespace troupe::qa
