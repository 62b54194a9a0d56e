// The Xapian passage index (see passage_index.h).
#include "games/qa/passage_index.h"

#include <unistd.h>
#include <xapian.h>

#include <chrono>
#include <filesystem>
#include <unordered_map>

#include "core/base/crc32c.h"
#include "core/base/data_cache.h"
#include "core/base/errors.h"
#include "core/base/file_io.h"

namespace troupe::qa {

namespace fs = std::filesystem;

namespace {

// Bumped when what is indexed, or how, changes: old indexes are then rebuilt.
constexpr int kIndexFormat = 2;

// Words too common to tell passages apart (question words among them): not
// indexed, and dropped from queries.
const char* const kStopWords[] = {"a",    "an",    "and",  "are", "as",   "at",   "be",    "by",   "do",   "does",
                                  "for",  "from",  "how",  "in",  "is",   "it",   "its",   "name", "of",   "on",
                                  "or",   "that",  "the",  "this", "to",  "was",  "what",  "when", "where", "which",
                                  "who",  "whose", "with"};

std::string IndexName(const std::string& content) {
  char name[64];
  std::snprintf(name, sizeof name, "v%d-%08x-%zu", kIndexFormat, Crc32c(content.data(), content.size()), content.size());
  return name;
}

}  // namespace

struct PassageIndex::Xapian {
  ::Xapian::Database db;
  ::Xapian::Stem stem{"english"};
  ::Xapian::SimpleStopper stopper{std::begin(kStopWords), std::end(kStopWords)};
  mutable ::Xapian::QueryParser parser;
  mutable std::unique_ptr<::Xapian::Enquire> enquire;
  std::unordered_map<std::string, int> by_id;
};

PassageIndex::~PassageIndex() = default;

std::shared_ptr<const PassageIndex> PassageIndex::Open(const std::string& passages_jsonl, const std::string& index_root) {
  std::shared_ptr<PassageIndex> index(new PassageIndex());
  const std::string content = ReadWholeFile(passages_jsonl);
  index->passages_ = ReadPassages(passages_jsonl);
  const fs::path root = index_root.empty() ? fs::path(DataCacheDir()) / "qa-index" : fs::path(index_root);
  const fs::path dir = root / IndexName(content);
  index->path_ = dir.string();
  index->xapian_ = std::make_unique<Xapian>();
  Xapian& x = *index->xapian_;
  try {
    if (!fs::exists(dir / ".complete")) {
      const auto start = std::chrono::steady_clock::now();
      fs::create_directories(root);
      const fs::path tmp = root / (dir.filename().string() + ".tmp" + std::to_string(::getpid()));
      fs::remove_all(tmp);
      {
        ::Xapian::WritableDatabase out(tmp.string(), ::Xapian::DB_CREATE_OR_OVERWRITE);
        ::Xapian::TermGenerator terms;
        terms.set_stemmer(x.stem);
        terms.set_stemming_strategy(::Xapian::TermGenerator::STEM_SOME);
        terms.set_stopper(&x.stopper);
        terms.set_stopper_strategy(::Xapian::TermGenerator::STOP_ALL);
        out.begin_transaction(false);
        for (size_t i = 0; i < index->passages_.size(); ++i) {
          const Passage& p = index->passages_[i];
          ::Xapian::Document doc;
          terms.set_document(doc);
          terms.index_text(p.title, 2);  // the title counts twice: it names the country and field
          terms.increase_termpos();
          terms.index_text(p.text);
          doc.set_data(std::to_string(i));
          out.add_document(doc);
        }
        out.commit_transaction();
        out.close();
      }
      WriteFileAtomically((tmp / ".complete").string(), passages_jsonl + "\n");
      std::error_code ec;
      fs::rename(tmp, dir, ec);
      if (ec) fs::remove_all(tmp);  // another process won the race: its index is the same
      index->built_now_ = true;
      index->build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    x.db = ::Xapian::Database(dir.string());
  } catch (const ::Xapian::Error& e) {
    throw Error("search index " + dir.string() + ": " + e.get_description());
  }
  if (x.db.get_doccount() != index->passages_.size()) {
    throw Error("search index " + dir.string() + " holds " + std::to_string(x.db.get_doccount()) + " passages, " +
                passages_jsonl + " " + std::to_string(index->passages_.size()) + ": remove the folder to rebuild it");
  }
  x.parser.set_stemmer(x.stem);
  x.parser.set_stemming_strategy(::Xapian::QueryParser::STEM_SOME);
  x.parser.set_stopper(&x.stopper);
  x.parser.set_database(x.db);
  x.parser.set_default_op(::Xapian::Query::OP_OR);
  x.enquire = std::make_unique<::Xapian::Enquire>(x.db);
  x.enquire->set_weighting_scheme(::Xapian::BM25Weight(1.2, 0, 1, 0.75, 0.5));
  for (size_t i = 0; i < index->passages_.size(); ++i) x.by_id.emplace(index->passages_[i].id, static_cast<int>(i));
  return index;
}

std::vector<SearchHit> PassageIndex::Search(const std::string& query, int k) const {
  std::vector<SearchHit> hits;
  if (k <= 0 || query.find_first_not_of(" \t\n") == std::string::npos) return hits;
  Xapian& x = *xapian_;
  try {
    x.enquire->set_query(x.parser.parse_query(query, 0));
    const ::Xapian::MSet found = x.enquire->get_mset(0, static_cast<::Xapian::doccount>(k));
    for (::Xapian::MSetIterator it = found.begin(); it != found.end(); ++it) {
      hits.push_back({static_cast<int>(*it - 1), it.get_weight()});
    }
  } catch (const ::Xapian::Error&) {
    hits.clear();  // fail-open: a query Xapian cannot take finds nothing
  }
  return hits;
}

std::vector<std::vector<SearchHit>> PassageIndex::SearchMany(const std::vector<std::string>& queries, int k) const {
  std::vector<std::vector<SearchHit>> out;
  out.reserve(queries.size());
  for (const auto& q : queries) out.push_back(Search(q, k));
  return out;
}

int PassageIndex::Find(const std::string& id) const {
  auto it = xapian_->by_id.find(id);
  return it == xapian_->by_id.end() ? -1 : it->second;
}

}  // namespace troupe::qa
