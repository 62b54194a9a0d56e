// The retrieval-augmented QA task and its tools, registered by name:
//   task "factbook_qa"   questions from a dataset in the QA record shape
//                        (games/qa/qa_dataset.h), scored by F1 or EM
//   tool "retriever"     BM25 top-k passages for each input query (Xapian)
//   tool "answer_scorer" EM and F1 of its input against the gold answers
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "core/base/errors.h"
#include "core/pipeline_task.h"
#include "core/rng.h"
#include "games/qa/answer_scoring.h"
#include "games/qa/factbook_qa.h"
#include "games/qa/passage_index.h"
#include "games/qa/qa_dataset.h"

namespace troupe::qa {

namespace {

// A dataset file's path: `given` (a path or a name FactbookQuestionsFile knows), else `file`
// in the default data folder (built when missing).
std::string DataFile(const std::string& given, const char* file) {
  return given.empty() ? EnsureDefaultQaData() + "/" + file : FactbookQuestionsFile(given);
}

PipelineQuery QueryOf(const QaRecord& r) {
  return {r.id, r.question, r.answers, r.type, r.supporting, r.decomposition};
}

std::vector<ParamSpec> TaskSpecs() {
  return {{"train_file", ParamType::kText, std::string(""),
           "training questions, JSON lines (default: the Factbook set's train.jsonl, built by `troupe data qa`)"},
          {"eval_file", ParamType::kText, std::string(""),
           "evaluation questions, JSON lines (default: the Factbook set's test.jsonl; factbook_qa:reworded: its "
           "test questions worded by hand)"},
          {"metric", ParamType::kText, std::string("f1"), "the outcome score: f1 or em"},
          {"counterfactual", ParamType::kReal, 0.0,
           "share of training questions (single-hop and bridge) whose retrieved passages are rewritten to state "
           "another question's answer of the same relation, which becomes the gold answer: only a reader that "
           "copies from the passages gets them right",
           0.0, 1.0},
          {"vocabulary", ParamType::kInt, int64_t{3000},
           "word-vocabulary models: the most frequent words of training questions and answers they know", 16, 200000}};
}

class FactbookQaTask : public PipelineTask {
 public:
  explicit FactbookQaTask(const Params& p)
      : train_(ReadQuestions(DataFile(p.Text("train_file"), "train.jsonl"))),
        eval_(ReadQuestions(DataFile(p.Text("eval_file"), "test.jsonl"))),
        metric_(p.Text("metric")),
        counterfactual_(p.Real("counterfactual")),
        vocabulary_size_(static_cast<int>(p.Int("vocabulary"))) {
    if (metric_ != "f1" && metric_ != "em") throw GameError("metric must be f1 or em, got '" + metric_ + "'", "metric");
    for (size_t i = 0; i < train_.size(); ++i) by_relation_[train_[i].relation].push_back(i);
  }

  std::vector<std::string> Vocabulary() const override {
    // From the training questions only: evaluating on another file keeps a checkpoint's vocabulary.
    std::map<std::string, int> counts;
    for (const auto& r : train_) {
      for (const auto& w : AnswerTokens(r.question)) ++counts[w];
      for (const auto& a : r.answers) {
        for (const auto& w : AnswerTokens(a)) ++counts[w];
      }
    }
    std::vector<std::pair<int, std::string>> ranked;
    for (const auto& [w, n] : counts) ranked.push_back({-n, w});
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::string> words;
    for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < vocabulary_size_; ++i) words.push_back(ranked[i].second);
    return words;
  }

  PipelineQuery MakeQuery(uint64_t seed) const override {
    Rng rng(seed);
    const QaRecord& r = train_[rng.Next() % train_.size()];
    PipelineQuery q = QueryOf(r);
    if (counterfactual_ > 0 && Rewritable(r) && rng.Uniform() < counterfactual_) {
      Counterfactual(r, rng, &q);
    }
    return q;
  }
  int EvalQueryCount() const override { return static_cast<int>(eval_.size()); }
  PipelineQuery EvalQuery(int i) const override { return QueryOf(eval_.at(static_cast<size_t>(i) % eval_.size())); }

  std::map<std::string, double> Score(const PipelineQuery& q, const PipelineOutcome& outcome) const override {
    const double em = ExactMatch(outcome.answer, q.answers), f1 = AnswerF1(outcome.answer, q.answers);
    std::map<std::string, double> m = {{"em", em}, {"f1", f1}, {"score", metric_ == "em" ? em : f1}};
    if (!q.type.empty()) {
      m["em/" + q.type] = em;
      m["f1/" + q.type] = f1;
    }
    if (outcome.searched && !q.supporting.empty()) {
      // Every supporting passage among those the episode retrieved; and at least one.
      const std::set<std::string> got(outcome.retrieved.begin(), outcome.retrieved.end());
      auto found = [&](const std::string& id) { return got.count(id) > 0; };
      m["recall_at_k"] = std::all_of(q.supporting.begin(), q.supporting.end(), found);
      m["recall_any_at_k"] = std::any_of(q.supporting.begin(), q.supporting.end(), found);
    }
    return m;
  }

  // EM and F1, then per question type of the evaluation set, retrieval recall and calls.
  std::vector<std::string> HeadlineMetrics() const override {
    std::vector<std::string> m = {"em", "f1"};
    std::set<std::string> types;
    for (const auto& r : eval_) types.insert(r.type);
    for (const auto& t : types) {
      m.push_back("em/" + t);
      m.push_back("f1/" + t);
    }
    m.insert(m.end(), {"recall_at_k", "recall_any_at_k", "calls"});
    return m;
  }

 private:
  // Answers a passage states as words: not comparisons (a country named in
  // titles) and not yes/no questions (no passage says "yes").
  static bool Rewritable(const QaRecord& r) {
    if (r.type == "comparison" || r.answers.empty()) return false;
    const std::string a = NormaliseAnswer(r.answers.front());
    return a != "yes" && a != "no";
  }

  // Another training question's answer of the same relation becomes `q`'s,
  // and what tools return says it wherever the passages name r's answer.
  void Counterfactual(const QaRecord& r, Rng& rng, PipelineQuery* q) const {
    const std::vector<size_t>& same = by_relation_.at(r.relation);
    const size_t start = rng.Next() % same.size();
    for (size_t k = 0; k < same.size(); ++k) {
      const QaRecord& other = train_[same[(start + k) % same.size()]];
      if (other.answers.empty() || ExactMatch(other.answers.front(), r.answers) > 0) continue;
      std::vector<std::string> from = r.answers;  // longest first: "Mexico City" before "Mexico"
      std::sort(from.begin(), from.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
      for (const auto& alias : from) {
        if (!alias.empty()) q->rewrites.emplace_back(alias, other.answers.front());
      }
      q->answers = {other.answers.front()};
      q->id += "+counterfactual:" + other.id;
      return;
    }
  }

  std::vector<QaRecord> train_, eval_;
  std::string metric_;
  double counterfactual_;
  int vocabulary_size_;
  std::map<std::string, std::vector<size_t>> by_relation_;  // training questions per relation
};

// `text` with every whole-word occurrence of a rewrite's `from` (the first of
// them that matches there, in order) replaced by its `to`, in one pass: what
// was written in is never rewritten again.
std::string Rewritten(const std::string& text, const std::vector<std::pair<std::string, std::string>>& rewrites) {
  auto word_byte = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || (c & 0x80); };
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    bool replaced = false;
    if (at == 0 || !word_byte(text[at - 1])) {
      for (const auto& [from, to] : rewrites) {
        const size_t end = at + from.size();
        if (from.empty() || text.compare(at, from.size(), from) != 0) continue;
        if (end < text.size() && word_byte(text[end])) continue;
        out += to;
        at = end;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[at++];
  }
  return out;
}

// At most `bytes` of `text`, not cutting a UTF-8 character.
std::string Prefix(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) --bytes;
  return text.substr(0, bytes);
}

// One index per passage file for the whole process, whichever nodes use it.
std::shared_ptr<const PassageIndex> SharedIndex(const std::string& passages) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const PassageIndex>> open;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = open[passages];
  if (!slot) slot = PassageIndex::Open(passages);
  return slot;
}

std::vector<ParamSpec> RetrieverSpecs() {
  return {{"passages", ParamType::kText, std::string(""),
           "passages, JSON lines (default: the Factbook set's passages.jsonl)"},
          {"top_k", ParamType::kInt, int64_t{4}, "passages per query", 1, 100},
          {"max_docs", ParamType::kInt, int64_t{8}, "passages per call, over all its queries", 1, 1000},
          {"doc_chars", ParamType::kInt, int64_t{240}, "characters of each passage's text a prompt shows", 16, 100000}};
}

class Retriever : public PipelineTool {
 public:
  explicit Retriever(const Params& p)
      : index_(SharedIndex(DataFile(p.Text("passages"), "passages.jsonl"))),
        top_k_(static_cast<int>(p.Int("top_k"))),
        max_docs_(static_cast<size_t>(p.Int("max_docs"))),
        doc_chars_(static_cast<size_t>(p.Int("doc_chars"))) {}

  std::vector<std::string> Keys() const override { return {"docs", "titles", "ids"}; }

  std::vector<ToolResult> Run(const std::vector<ToolCall>& calls) const override {
    // Every query of every call in one search batch.
    std::vector<std::string> queries;
    for (const auto& c : calls) queries.insert(queries.end(), c.inputs.begin(), c.inputs.end());
    const auto hits = index_->SearchMany(queries, top_k_);
    std::vector<ToolResult> out(calls.size());
    size_t at = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      std::set<int> seen;
      auto& v = out[i].values;
      v["docs"], v["titles"], v["ids"];
      // Round-robin over the call's queries: each sub-query's best passages first.
      const size_t n = calls[i].inputs.size();
      for (int rank = 0; rank < top_k_; ++rank) {
        for (size_t q = 0; q < n; ++q) {
          const auto& h = hits[at + q];
          if (rank >= static_cast<int>(h.size()) || v["ids"].size() >= max_docs_ || !seen.insert(h[rank].passage).second) continue;
          const Passage& p = index_->passages()[h[rank].passage];
          const auto* rewrites = calls[i].query != nullptr ? &calls[i].query->rewrites : nullptr;
          v["docs"].push_back(p.title + ": " +
                              Prefix(rewrites != nullptr && !rewrites->empty() ? Rewritten(p.text, *rewrites) : p.text,
                                     doc_chars_));
          v["titles"].push_back(p.title);
          v["ids"].push_back(p.id);
        }
      }
      at += n;
    }
    return out;
  }

 private:
  std::shared_ptr<const PassageIndex> index_;
  int top_k_;
  size_t max_docs_, doc_chars_;
};

class AnswerScorer : public PipelineTool {
 public:
  explicit AnswerScorer(const Params&) {}
  std::vector<std::string> Keys() const override { return {"f1", "em"}; }
  std::vector<ToolResult> Run(const std::vector<ToolCall>& calls) const override {
    std::vector<ToolResult> out;
    for (const auto& c : calls) {
      const std::string answer = c.inputs.empty() ? "" : c.inputs.front();
      std::ostringstream f1, em;
      f1 << AnswerF1(answer, c.query->answers);
      em << ExactMatch(answer, c.query->answers);
      out.push_back({true, "", {{"f1", {f1.str()}}, {"em", {em.str()}}}});
    }
    return out;
  }
};

TROUPE_REGISTER_TASK("factbook_qa", TaskSpecs(), FactbookQaTask);
TROUPE_REGISTER_TOOL("retriever", RetrieverSpecs(), Retriever);
TROUPE_REGISTER_TOOL("answer_scorer", {}, AnswerScorer);

}  // namespace

}  // namespace troupe::qa
