// Reading documents for pretraining: a base model learns to look back into
// its context and copy a span only if its data rewards that, and text from
// the corpora rarely does (what a page says is mostly what the model has seen
// before). Each document here takes a few countries' Factbook passages,
// renames every country, its capital and its first language with invented
// names (so no memory holds the answers), shows the passages as the
// retriever does ("Title: text"), then asks questions whose answers are
// spans of them, in varied wording. Some documents instead repeat a list of invented names, the plain
// copying an induction head learns from; others (fact_share) list short facts about invented countries,
// then ask about them: the same lookup, the fact a few tokens from its country, many questions a document.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "games/qa/qa_dataset.h"

namespace troupe::qa {

struct ReadingDocumentOptions {
  uint64_t seed = 1;
  // Countries per passage document, drawn evenly from min to max: a document of one country teaches finding
  // the field a question asks for; more teach telling countries apart (one or more asked about, the others
  // distractors). Pretraining's documents have three each (1-3, with 6 questions, was tried in runs r10 and r11,
  // docs/language_models.md, and is not shown to help).
  int min_countries_per_document = 3;
  int countries_per_document = 3;
  // Questions per passage document at most (every askable passage's, up to this): each answer's first token is a
  // lookup into the passages, the signal the needle probe measures.
  int questions_per_document = 3;
  double list_share = 0.2;  // share of documents that are repeated name lists instead
  // Share of documents that are fact lists instead: three to six invented countries, each with a capital and a
  // language said in one of several ways ("The capital of Zorvia is Quellin.", "Sarnish is spoken in Zorvia."),
  // shuffled, then questions about half of the facts (three at least). 0 to 1 - list_share; default 0, and with
  // 0 the other documents are those of earlier runs, draw for draw.
  double fact_share = 0.0;
  // Each passage shown as its title and the one clause that holds its answer (the first clause where a question
  // cannot ask about it): "Zorvia - Government - Capital: name: Quellin". The fact stands a few tokens from its
  // country's name instead of a line away (a curriculum's first lesson); default false, every document as before.
  bool short_passages = false;
  // A passage document's characters at most (0: no limit): other passages, then countries, leave until it fits,
  // so that a document fits a training sequence (2-3 characters a token for names and figures).
  size_t max_chars = 0;
  // Factbook pages (GEC codes, as UnseenFactbookPages gives them) whose passages are never used.
  std::set<std::string> left_out_pages;
};

// The passages a reading document can ask about, by country (those with a capital passage).
class ReadingDocuments {
 public:
  ReadingDocuments(const std::vector<Passage>& passages, ReadingDocumentOptions options);
  // Document `index` (the same index gives the same text).
  std::string Document(uint64_t index) const;
  size_t countries() const { return countries_.size(); }

 private:
  struct Country {
    std::string name;     // as the titles name it
    std::string capital;  // as the capital passage names it
    std::vector<Passage> passages;
  };
  std::string Passages(uint64_t index) const;
  std::string Lists(uint64_t index) const;
  std::string Facts(uint64_t index) const;
  std::vector<Country> countries_;
  ReadingDocumentOptions options_;
};

// The characters a passage document may have to fit a training sequence of
// `seq_len` tokens (invented names and figures take 2-3 characters a token).
inline size_t ReadingDocumentChars(int seq_len) { return 2 * static_cast<size_t>(seq_len); }

// The options pretraining and `troupe data reading` draw documents with: `countries` a document, each fitting
// a training sequence of `seq_len` tokens.
inline ReadingDocumentOptions SequenceReadingOptions(uint64_t seed, int seq_len, int countries, bool short_passages,
                                                     double fact_share) {
  ReadingDocumentOptions options;
  options.seed = seed;
  options.max_chars = ReadingDocumentChars(seq_len);
  options.min_countries_per_document = options.countries_per_document = countries;
  options.short_passages = short_passages;
  options.fact_share = fact_share;
  return options;
}

// Reading documents of each of `options`, in order, from the default Factbook QA passages (built first when
// missing, read once for all of them).
std::vector<std::function<std::string(uint64_t)>> FactbookReadingDocuments(
    const std::vector<ReadingDocumentOptions>& options);

}  // namespace troupe::qa
