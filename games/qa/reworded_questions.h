// Test questions worded by hand (games/qa/data/reworded_test_questions.tsv,
// built in): a check that a QA agent reads a question, not the generator's
// templates. Each line names a generated test question's id and words it
// anew; the record keeps that question's answers, passages and type.
#pragma once

#include <string>
#include <vector>

#include "games/qa/qa_dataset.h"

namespace troupe::qa {

// The records of `questions` named by `table`'s lines ("id<TAB>question";
// blank lines and lines starting with '#' skipped), in the table's order,
// each with its question replaced. Throws Error("source:line: ...") for a
// line without a tab or a question, an id `questions` lacks, or an id named
// twice.
std::vector<QaRecord> RewordQuestions(const std::vector<QaRecord>& questions, const std::string& table,
                                      const std::string& source);

// The built-in table's text.
const std::string& RewordedTestTable();

// The built-in table applied to `test` (the default Factbook set's test split).
std::vector<QaRecord> RewordedTestQuestions(const std::vector<QaRecord>& test);

}  // namespace troupe::qa
