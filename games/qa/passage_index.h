// A BM25 search index over a passage file, on Xapian (English stemmer). The
// index is built once per passage file and kept in the data cache, keyed by
// the file's content: a changed corpus gets a new index, an unchanged one opens
// in milliseconds. Queries that Xapian cannot parse, and empty queries, find
// nothing instead of failing (the retriever is fail-open).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "games/qa/qa_dataset.h"

namespace troupe::qa {

struct SearchHit {
  int passage = 0;  // index into passages()
  double score = 0;
};

class PassageIndex {
 public:
  // `index_root`: where indexes are kept; empty: the data cache's qa-index folder.
  static std::shared_ptr<const PassageIndex> Open(const std::string& passages_jsonl, const std::string& index_root = "");
  ~PassageIndex();

  std::vector<SearchHit> Search(const std::string& query, int k) const;
  // Many queries in one call (one enquiry reused), results in query order.
  std::vector<std::vector<SearchHit>> SearchMany(const std::vector<std::string>& queries, int k) const;

  const std::vector<Passage>& passages() const { return passages_; }
  // Where a passage id is, or -1.
  int Find(const std::string& id) const;
  const std::string& path() const { return path_; }  // the index folder
  bool built_now() const { return built_now_; }      // false: opened from the cache
  double build_seconds() const { return build_seconds_; }

 private:
  PassageIndex() = default;
  struct Xapian;
  std::unique_ptr<Xapian> xapian_;
  std::vector<Passage> passages_;
  std::string path_;
  bool built_now_ = false;
  double build_seconds_ = 0;
};

}  // namespace troupe::qa
