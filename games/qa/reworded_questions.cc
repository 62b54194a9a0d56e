// Applies the hand-worded test questions' table to generated records.
#include "games/qa/reworded_questions.h"

#include <map>
#include <set>
#include <sstream>

#include <boost/algorithm/string/trim.hpp>

#include "core/base/errors.h"

namespace troupe::qa {

extern const char kRewordedTestTable[];

std::vector<QaRecord> RewordQuestions(const std::vector<QaRecord>& questions, const std::string& table,
                                      const std::string& source) {
  std::map<std::string, const QaRecord*> by_id;
  for (const QaRecord& q : questions) by_id[q.id] = &q;
  std::vector<QaRecord> out;
  std::set<std::string> seen;
  std::istringstream in(table);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string trimmed = boost::algorithm::trim_copy(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    const std::string where = source + ":" + std::to_string(number);
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw Error(where + ": expected a question id, a tab and the question");
    const std::string id = boost::algorithm::trim_copy(line.substr(0, tab)),
                      question = boost::algorithm::trim_copy(line.substr(tab + 1));
    if (question.empty()) throw Error(where + ": no question after the tab");
    const auto it = by_id.find(id);
    if (it == by_id.end()) throw Error(where + ": no question \"" + id + "\" to reword");
    if (!seen.insert(id).second) throw Error(where + ": \"" + id + "\" is reworded twice");
    QaRecord record = *it->second;
    record.question = question;
    out.push_back(std::move(record));
  }
  if (out.empty()) throw Error(source + ": no questions");
  return out;
}

const std::string& RewordedTestTable() {
  static const std::string text = kRewordedTestTable;
  return text;
}

std::vector<QaRecord> RewordedTestQuestions(const std::vector<QaRecord>& test) {
  return RewordQuestions(test, RewordedTestTable(), "reworded_test_questions.tsv");
}

}  // namespace troupe::qa
