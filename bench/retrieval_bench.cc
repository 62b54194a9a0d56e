// The QA retriever's figures: index build time, queries per second (one
// query per call and batches of many), and recall@k of supporting passages,
// searching with each question as asked and with each oracle sub-question,
// by question type. Prints one JSON object.
//   retrieval_bench [--data DIR] [--k K] [--repeat N]
//   retrieval_bench --query TEXT [--k K]     (what one query finds)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <unistd.h>
#include <string>

#include <nlohmann/json.hpp>

#include "games/qa/factbook_qa.h"
#include "games/qa/passage_index.h"

using namespace troupe::qa;

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Share of questions with at least one supporting passage in the hits of any of `queries_of` their queries.
std::map<std::string, double> Recall(const PassageIndex& index, const std::vector<QaRecord>& questions, int k,
                                     bool decomposed) {
  std::map<std::string, std::pair<int, int>> by;  // type -> found, asked
  for (const auto& q : questions) {
    const std::vector<std::string> queries = decomposed ? q.decomposition : std::vector<std::string>{q.question};
    std::set<std::string> got;
    for (const auto& hits : index.SearchMany(queries, k)) {
      for (const auto& h : hits) got.insert(index.passages()[h.passage].id);
    }
    // All supporting passages found (a bridge question needs both hops).
    bool all = true;
    for (const auto& id : q.supporting) all = all && got.count(id) > 0;
    for (const std::string key : {q.type, q.type + "/" + q.relation, std::string("all")}) {
      by[key].first += all;
      ++by[key].second;
    }
  }
  std::map<std::string, double> out;
  for (const auto& [key, n] : by) out[key] = static_cast<double>(n.first) / n.second;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, query;
  int k = 4, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--data")) dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--k")) k = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--query")) query = argv[i + 1];
  }
  try {
    if (dir.empty()) dir = EnsureDefaultQaData();
    if (!query.empty()) {  // what one query finds, from the cached index
      auto index = PassageIndex::Open(dir + "/passages.jsonl");
      for (const auto& h : index->Search(query, k)) {
        const Passage& p = index->passages()[h.passage];
        std::printf("%7.3f  %s: %.100s\n", h.score, p.title.c_str(), p.text.c_str());
      }
      return 0;
    }
    const std::string passages = dir + "/passages.jsonl";
    // A fresh index in a temporary folder: the build is timed every run.
    const std::string root = std::filesystem::temp_directory_path() / ("troupe_retrieval_bench_" + std::to_string(::getpid()));
    auto start = std::chrono::steady_clock::now();
    auto index = PassageIndex::Open(passages, root);
    const double build = Seconds(start);
    start = std::chrono::steady_clock::now();
    auto reopened = PassageIndex::Open(passages, root);
    const double open = Seconds(start);
    const std::vector<QaRecord> test = ReadQuestions(dir + "/test.jsonl");
    std::vector<std::string> queries;
    for (const auto& q : test) queries.push_back(q.question);
    start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeat; ++r) {
      for (const auto& q : queries) index->Search(q, k);
    }
    const double single = repeat * queries.size() / Seconds(start);
    start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeat; ++r) index->SearchMany(queries, k);
    const double batched = repeat * queries.size() / Seconds(start);
    nlohmann::json out = {{"passages", index->passages().size()},
                          {"test_questions", test.size()},
                          {"k", k},
                          {"index_build_s", build},
                          {"index_open_s", open},
                          {"queries_per_s_single", single},
                          {"queries_per_s_batched", batched},
                          {"recall_at_k_question", Recall(*index, test, k, false)},
                          {"recall_at_k_oracle_subquestions", Recall(*index, test, k, true)}};
    std::printf("%s\n", out.dump(2).c_str());
    std::filesystem::remove_all(root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "retrieval_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
