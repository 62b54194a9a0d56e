// The QA data troupe reads and writes: passages (the search corpus) and
// questions, one JSON object a line. A question file in this shape is a
// dataset users can bring (see docs/pipelines/qa.md):
//   {"id": "...", "question": "...", "answers": ["alias", ...],
//    "type": "single_hop" | "bridge" | "comparison" | any,
//    "relation": "...", "hops": ["entity", ...], "supporting": ["passage id", ...],
//    "decomposition": ["sub-question", ...]}
// Only id, question and answers are required.
#pragma once

#include <string>
#include <vector>

namespace troupe::qa {

struct Passage {
  std::string id;
  std::string title;  // "Country - Section - Field"
  std::string text;
};

struct QaRecord {
  std::string id;
  std::string question;
  std::vector<std::string> answers;  // gold aliases
  std::string type = "unknown";
  std::string relation;
  std::vector<std::string> hops;           // entities the question's hops go through
  std::vector<std::string> supporting;     // passage ids
  std::vector<std::string> decomposition;  // oracle sub-questions
};

// Throws Error("file:line: ...") on a malformed line or a missing field.
std::vector<QaRecord> ReadQuestions(const std::string& path);
std::vector<Passage> ReadPassages(const std::string& path);

// Written whole to a temporary file, then renamed: a crash leaves the old file.
void WriteQuestions(const std::string& path, const std::vector<QaRecord>& records);
void WritePassages(const std::string& path, const std::vector<Passage>& passages);

}  // namespace troupe::qa
