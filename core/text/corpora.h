// The real text troupe pretrains on and tests with, read from the data cache
// (scripts/fetch_data.sh) and Debian's wordnet-base:
//   factbook   CIA World Factbook: every text field of each country's profile
//   sotu       the State of the Union addresses, 1790-2021
//   moby_dick  Moby-Dick, by chapter
//   wordnet    WordNet's glosses ("lemma (noun): gloss"), 500 to a document
#pragma once

#include <string>
#include <vector>

namespace troupe {

struct Document {
  std::string corpus;  // one of CorpusNames()
  std::string name;    // unique within its corpus (country file, address, chapter)
  std::string text;
};

std::vector<std::string> CorpusNames();

// A corpus's documents in a fixed order; throws Error naming the command that
// fetches missing data, or listing the corpora for an unknown name.
std::vector<Document> ReadCorpus(const std::string& name);

// Whether a document belongs to the held-out split: a fixed hash of its corpus
// and name puts one in `every` there (0: none).
bool IsHeldOut(const Document& document, int every);

}  // namespace troupe
