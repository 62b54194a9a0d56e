// The QA data: answer scoring, the dataset files, the Factbook generator on a
// slice of the real sources, and the Xapian passage index built from it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/base/errors.h"
#include "games/qa/answer_scoring.h"
#include "games/qa/factbook_qa.h"
#include "games/qa/passage_index.h"
#include "games/qa/qa_dataset.h"
#include "games/qa/reading_documents.h"
#include "games/qa/reworded_questions.h"
#include "tests/test_paths.h"

namespace troupe::qa {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path dir = fs::path(testing::BinaryDir()) / "test_tmp" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The Factbook's European profiles: a slice built once for the cases below.
const FactbookQa& EuropeSlice() {
  static const FactbookQa data = [] {
    FactbookQaOptions o = CachedFactbookQaOptions();
    o.regions = {"europe"};
    return BuildFactbookQa(o);
  }();
  return data;
}

TEST_CASE("answers are scored as SQuAD scores them", "[qa]") {
  CHECK(NormaliseAnswer("  The Euro!  ") == "euro");
  CHECK(ExactMatch("the euro", {"Euro"}) == 1.0);
  CHECK(ExactMatch("euros", {"Euro"}) == 0.0);
  CHECK(AnswerF1("Berlin city", {"Berlin"}) == Approx(2.0 / 3.0));
  CHECK(AnswerF1("Bern", {"Berlin", "Bern"}) == 1.0);
  CHECK(AnswerF1("", {"Berlin"}) == 0.0);
  CHECK(ContainsAnswer("name: Berlin; time difference: UTC+1", "berlin"));
  CHECK_FALSE(ContainsAnswer("Berliner Dom", "berlin"));
}

TEST_CASE("a question file's mistakes name the file and line", "[qa]") {
  const fs::path dir = TempDir("qa_files");
  const std::string path = (dir / "q.jsonl").string();
  std::ofstream(path) << R"({"id": "1", "question": "What?", "answers": ["x"]})"
                      << "\n\n"
                      << R"({"id": "2", "question": "Why?"})"
                      << "\n";
  try {
    ReadQuestions(path);
    FAIL("a record without answers was read");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(path + ":3: \"answers\"") != std::string::npos);
  }
  std::ofstream(path)
      << "{\"id\": \"1\", \"question\": \"What?\", \"answers\": \"x\", \"type\": \"bridge\"}\nnot json\n";
  CHECK_THROWS_WITH(ReadQuestions(path), Catch::Contains(path + ":2: not JSON"));
  QaRecord r;
  r.id = "a";
  r.question = "Is it?";
  r.answers = {"yes"};
  r.supporting = {"p1"};
  WriteQuestions(path, {r});
  const auto back = ReadQuestions(path);
  REQUIRE(back.size() == 1);
  CHECK(back[0].answers == r.answers);
  CHECK(back[0].supporting == r.supporting);
}

TEST_CASE("the Factbook generator keeps questions its supporting passages answer, split by country", "[qa]") {
  const FactbookQa& data = EuropeSlice();
  CHECK(data.countries >= 40);
  std::map<std::string, const Passage*> by_id;
  for (const auto& p : data.passages) by_id[p.id] = &p;
  std::map<std::string, int> types;
  std::set<std::string> train_named, test_named;
  for (const auto* split : {&data.train, &data.test}) {
    for (const auto& q : *split) {
      ++types[q.type];
      REQUIRE_FALSE(q.supporting.empty());
      REQUIRE_FALSE(q.decomposition.empty());
      bool answered = q.relation == "landlocked";  // yes/no: the passage agrees, checked by the generator
      for (const auto& id : q.supporting) {
        REQUIRE(by_id.count(id) == 1);
        for (const auto& a : q.answers)
          answered = answered || ContainsAnswer(by_id[id]->title + " " + by_id[id]->text, a);
      }
      CHECK(answered);
      // The countries a question names: the Factbook's titles of its supporting passages'
      // countries (the first title part) that occur in the question text.
      for (const auto& id : q.supporting) {
        const std::string country = by_id[id]->title.substr(0, by_id[id]->title.find(" - "));
        if (q.question.find(country) != std::string::npos)
          (split == &data.train ? train_named : test_named).insert(country);
      }
    }
  }
  CHECK(types["single_hop"] > 100);
  CHECK(types["bridge"] > 20);
  CHECK(types["comparison"] > 20);
  CHECK_FALSE(data.test.empty());
  for (const auto& c : test_named) CHECK(train_named.count(c) == 0);
  // The same options give the same dataset.
  FactbookQaOptions o = CachedFactbookQaOptions();
  o.regions = {"europe"};
  const FactbookQa again = BuildFactbookQa(o);
  REQUIRE(again.test.size() == data.test.size());
  CHECK(again.test.front().id == data.test.front().id);
}

TEST_CASE("the passage index finds supporting passages and is built once per corpus", "[qa]") {
  const fs::path dir = TempDir("qa_index");
  const FactbookQa& data = EuropeSlice();
  WritePassages((dir / "passages.jsonl").string(), data.passages);
  auto index = PassageIndex::Open((dir / "passages.jsonl").string(), (dir / "index").string());
  CHECK(index->built_now());
  CHECK(index->passages().size() == data.passages.size());
  auto again = PassageIndex::Open((dir / "passages.jsonl").string(), (dir / "index").string());
  CHECK_FALSE(again->built_now());
  CHECK(again->path() == index->path());

  const auto hits = index->Search("capital of Germany", 4);
  REQUIRE_FALSE(hits.empty());
  CHECK(index->passages()[hits[0].passage].title == "Germany - Government - Capital");
  CHECK(index->Search("", 4).empty());
  CHECK(index->Search("   ", 4).empty());
  CHECK(index->Search("zzqxv", 4).empty());
  const auto many = index->SearchMany({"capital of France", "", "currency of Italy"}, 3);
  REQUIRE(many.size() == 3);
  CHECK(many[1].empty());
  CHECK(many[0].size() == 3);

  // Recall@4: every supporting passage among the hits of the oracle sub-questions.
  int found = 0;
  for (const auto& q : data.train) {
    std::set<std::string> got;
    for (const auto& hits : index->SearchMany(q.decomposition, 4)) {
      for (const auto& h : hits) got.insert(index->passages()[h.passage].id);
    }
    found +=
        std::all_of(q.supporting.begin(), q.supporting.end(), [&](const std::string& id) { return got.count(id) > 0; });
  }
  INFO(found << " of " << data.train.size());
  CHECK(found > 0.9 * data.train.size());

  // A changed corpus gets its own index.
  std::vector<Passage> fewer(data.passages.begin(), data.passages.begin() + 100);
  WritePassages((dir / "passages.jsonl").string(), fewer);
  auto changed = PassageIndex::Open((dir / "passages.jsonl").string(), (dir / "index").string());
  CHECK(changed->built_now());
  CHECK(changed->path() != index->path());
  CHECK(changed->passages().size() == 100);
}

TEST_CASE("reading documents rename their countries and ask what their passages say", "[qa][reading]") {
  const FactbookQa& data = EuropeSlice();
  ReadingDocumentOptions options;
  options.list_share = 0.0;
  options.min_countries_per_document = 1;
  options.questions_per_document = 6;
  const ReadingDocuments reading(data.passages, options);
  CHECK(reading.countries() >= 40);
  std::set<std::string> real_countries, real_capitals;
  for (const auto& p : data.passages) {
    real_countries.insert(p.title.substr(0, p.title.find(" - ")));
    if (p.title.find(" - Government - Capital") != std::string::npos) {
      const size_t at = p.text.find("name: ");
      if (at != std::string::npos) real_capitals.insert(p.text.substr(at + 6, p.text.find(';', at) - at - 6));
    }
  }
  int questions = 0;
  std::map<size_t, int> documents_of;  // documents by their number of countries
  for (uint64_t i = 0; i < 50; ++i) {
    const std::string doc = reading.Document(i);
    INFO(doc);
    CHECK(doc == reading.Document(i));  // fixed by the index
    const size_t first_question = doc.find("Question: ");
    REQUIRE(first_question != std::string::npos);
    const std::string passages = doc.substr(0, first_question);
    // Every title names an invented country: no real one, and no real capital, is shown.
    std::set<std::string> countries;
    for (size_t at = 0; (at = passages.find(" - ", at)) != std::string::npos; ++at) {
      const size_t line = passages.rfind('\n', at) + 1;
      CHECK(real_countries.count(passages.substr(line, at - line)) == 0);
      if (line < at && passages.find(" - ", line) == at) countries.insert(passages.substr(line, at - line));  // a title
    }
    ++documents_of[countries.size()];
    // Each answer is a span of the passages, so reading (not memory) answers it.
    for (size_t at = doc.find("\nAnswer: "); at != std::string::npos; at = doc.find("\nAnswer: ", at + 1)) {
      const std::string answer = doc.substr(at + 9, doc.find('\n', at + 9) - at - 9);
      CHECK_FALSE(answer.empty());
      CHECK(passages.find(answer) != std::string::npos);
      CHECK(real_capitals.count(answer) == 0);
      ++questions;
    }
  }
  CHECK(questions >= 100);
  // From one country (finding the field asked for) to three (telling countries apart).
  CHECK(documents_of[1] >= 5);
  CHECK(documents_of[3] >= 5);
  CHECK(documents_of.rbegin()->first == 3);
  // Left-out pages are never shown; a list document repeats its names.
  options.left_out_pages.clear();
  for (const auto& p : data.passages) options.left_out_pages.insert(p.id.substr(0, p.id.find(':')));
  CHECK_THROWS_AS(ReadingDocuments(data.passages, options), Error);
  options.left_out_pages.clear();
  options.list_share = 1.0;
  const std::string list = ReadingDocuments(data.passages, options).Document(3);
  const size_t newline = list.find('\n');
  const std::string first = list.substr(list.find(':') + 1, newline - list.find(':') - 1);
  CHECK(list.substr(newline + 1).find(first) != std::string::npos);
}

TEST_CASE("reading documents fit their character budget and ask about invented languages", "[qa][reading]") {
  const FactbookQa& data = EuropeSlice();
  std::set<std::string> real_languages;
  for (const auto& p : data.passages) {
    if (p.title.find(" - People and Society - Languages") == std::string::npos) continue;
    real_languages.insert(p.text.substr(0, p.text.find_first_of(" ,;(")));
  }
  REQUIRE(real_languages.count("German") == 1);
  ReadingDocumentOptions options;
  options.list_share = 0.0;
  options.min_countries_per_document = options.countries_per_document;  // three countries each, before the budget
  options.max_chars = ReadingDocumentChars(512);
  const ReadingDocuments reading(data.passages, options);
  int language_questions = 0, two_countries = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    const std::string doc = reading.Document(i);
    INFO(doc);
    std::string passages = doc.substr(0, doc.find("\nQuestion: "));
    if (passages.rfind("Passages:\n", 0) == 0) passages.erase(0, 10);  // the heading is not the passages'

    // Within the budget (a capital passage alone may not be cut), and still a choice between countries.
    CHECK(passages.size() <= options.max_chars);
    std::set<std::string> countries;
    for (size_t line = 0; line < passages.size(); line = passages.find('\n', line) + 1) {
      const size_t dash = passages.find(" - ", line);
      if (dash != std::string::npos && dash < passages.find('\n', line))
        countries.insert(passages.substr(line, dash - line));
      if (passages.find('\n', line) == std::string::npos) break;
    }
    two_countries += countries.size() >= 2;
    for (size_t at = doc.find("Question: "); at != std::string::npos; at = doc.find("Question: ", at + 1)) {
      const std::string question = doc.substr(at, doc.find('\n', at) - at);
      if (question.find("language") == std::string::npos) continue;
      const size_t answer_at = doc.find("\nAnswer: ", at) + 9;
      const std::string answer = doc.substr(answer_at, doc.find('\n', answer_at) - answer_at);
      CHECK(real_languages.count(answer) == 0);
      CHECK(passages.find(answer) != std::string::npos);
      ++language_questions;
    }
  }
  CHECK(two_countries >= 250);
  CHECK(language_questions >= 10);
}

TEST_CASE("fact lists ask about their facts, each answer the asked country's, within the budget", "[qa][reading]") {
  const FactbookQa& data = EuropeSlice();
  ReadingDocumentOptions options;
  options.list_share = 0.2;
  options.fact_share = 0.5;
  options.max_chars = ReadingDocumentChars(256);
  const ReadingDocuments reading(data.passages, options);
  // The capitalised words of a line or question but `except` and the sayings' own ("The", "People", "In").
  auto names = [](const std::string& text, const std::string& except) {
    std::set<std::string> found;
    std::string word;
    for (char c : text + " ") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '\'') {
        word += c;
        continue;
      }
      if (!word.empty() && std::isupper(static_cast<unsigned char>(word[0])) && word != except && word != "The" &&
          word != "People" && word != "In" && word != "What" && word != "Which" && word != "Name" && word != "Where")
        found.insert(word.substr(0, word.find('\'')));
      word.clear();
    }
    return found;
  };
  int facts_documents = 0, passage_documents = 0, questions = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const std::string doc = reading.Document(i);
    INFO(doc);
    if (doc.find(" - Government - Capital") != std::string::npos) ++passage_documents;
    if (doc.find(" - Government - Capital") != std::string::npos || doc.find("Question: ") == std::string::npos)
      continue;
    ++facts_documents;
    CHECK(doc.size() <= options.max_chars);
    CHECK(doc == reading.Document(i));
    const std::string facts = doc.substr(0, doc.find("\nQuestion: "));
    std::vector<std::string> lines;
    for (size_t at = 0; at < facts.size();) {
      const size_t end = std::min(facts.find('\n', at), facts.size());
      if (end > at && facts.compare(at, end - at, "Facts:") != 0) lines.push_back(facts.substr(at, end - at));
      at = end + 1;
    }
    CHECK(lines.size() >= 4);  // two countries at least, a capital and a language each
    int asked = 0;
    for (size_t at = doc.find("Question: "); at != std::string::npos; at = doc.find("Question: ", at + 1)) {
      const std::string question = doc.substr(at + 10, doc.find('\n', at) - at - 10);
      const size_t answer_at = doc.find("\nAnswer: ", at) + 9;
      const std::string answer = doc.substr(answer_at, doc.find('\n', answer_at) - answer_at);
      // The one fact that says the answer names the country the question asks about, and no other does.
      std::vector<const std::string*> saying;
      for (const std::string& line : lines) {
        if (names(line, "").count(answer)) saying.push_back(&line);
      }
      REQUIRE(saying.size() == 1);
      const std::set<std::string> country = names(*saying[0], answer), in_question = names(question, "");
      CHECK(country.size() == 1);
      CHECK(in_question == country);
      ++asked;
    }
    CHECK(asked == std::max<int>(3, static_cast<int>(lines.size()) / 2));
    questions += asked;
  }
  // Half fact lists, three tenths passages, a fifth name lists.
  CHECK(facts_documents >= 70);
  CHECK(facts_documents <= 130);
  CHECK(passage_documents >= 35);
  CHECK(questions >= 3 * facts_documents);
  options.fact_share = 0.9;
  CHECK_THROWS_AS(ReadingDocuments(data.passages, options), Error);
}

TEST_CASE("short passages keep each passage's answer clause only, the capital beside its country", "[qa][reading]") {
  const FactbookQa& data = EuropeSlice();
  ReadingDocumentOptions full, short_form;
  full.list_share = short_form.list_share = 0.0;
  full.min_countries_per_document = full.countries_per_document = 1;
  short_form.min_countries_per_document = short_form.countries_per_document = 1;
  short_form.short_passages = true;
  const ReadingDocuments long_docs(data.passages, full), short_docs(data.passages, short_form);
  int answered = 0;
  for (uint64_t i = 0; i < 60; ++i) {
    const std::string doc = short_docs.Document(i), long_doc = long_docs.Document(i);
    INFO(doc);
    const std::string passages = doc.substr(0, doc.find("\nQuestion: "));
    // The same questions and answers as the full document: only the passages are cut.
    CHECK(doc.substr(doc.find("\nQuestion: ")) == long_doc.substr(long_doc.find("\nQuestion: ")));
    CHECK(passages.size() < long_doc.find("\nQuestion: "));
    for (size_t at = 0; at < passages.size();) {
      const size_t end = std::min(passages.find('\n', at), passages.size());
      const std::string line = passages.substr(at, end - at);
      at = end + 1;
      if (line.empty() || line == "Passages:") continue;
      CHECK(line.find("; ") == std::string::npos);  // one clause
      if (line.find(" - Government - Capital: ") != std::string::npos) {
        CHECK(line.find(" - Government - Capital: name: ") != std::string::npos);
      }
    }
    for (size_t at = doc.find("\nAnswer: "); at != std::string::npos; at = doc.find("\nAnswer: ", at + 1)) {
      const std::string answer = doc.substr(at + 9, doc.find('\n', at + 9) - at - 9);
      CHECK(passages.find(answer) != std::string::npos);
      ++answered;
    }
  }
  CHECK(answered >= 60);
}

TEST_CASE("hand-worded test questions keep their records and differ from the generator's wording", "[qa]") {
  const std::vector<QaRecord> test = ReadQuestions(EnsureDefaultQaData() + "/test.jsonl");
  const std::vector<QaRecord> reworded = ReadQuestions(FactbookQuestionsFile("factbook_qa:reworded"));
  CHECK(reworded.size() >= 100);
  std::map<std::string, const QaRecord*> by_id;
  for (const auto& q : test) by_id[q.id] = &q;
  std::set<std::string> relations, questions;
  for (const auto& q : reworded) {
    INFO(q.id << ": " << q.question);
    REQUIRE(by_id.count(q.id) == 1);
    const QaRecord& generated = *by_id[q.id];
    CHECK(q.question != generated.question);
    CHECK(q.answers == generated.answers);
    CHECK(q.supporting == generated.supporting);
    CHECK(q.type == generated.type);
    // None of the generator's question openings.
    for (const char* opening :
         {"What is the capital of", "What is the currency of", "Name a language spoken in",
          "In which region of the world is", "Name a country that borders", "Which country is larger by area"}) {
      CHECK(q.question.rfind(opening, 0) != 0);
    }
    relations.insert(q.relation);
    CHECK(questions.insert(q.question).second);
  }
  CHECK(relations.size() >= 9);
  // A table's mistakes name its line.
  CHECK_THROWS_WITH(RewordQuestions(test, "# c\nno tab here\n", "t.tsv"), Catch::Contains("t.tsv:2"));
  CHECK_THROWS_WITH(RewordQuestions(test, "nope:XYZ\tWhat?\n", "t.tsv"),
                    Catch::Contains("t.tsv:1: no question \"nope:XYZ\""));
  const std::string twice = test[0].id + "\tOne?\n" + test[0].id + "\tTwo?\n";
  CHECK_THROWS_WITH(RewordQuestions(test, twice, "t.tsv"), Catch::Contains("t.tsv:2") && Catch::Contains("twice"));
  CHECK(RewordQuestions(test, test[0].id + "\t  Asked anew?  \n", "t.tsv").front().question == "Asked anew?");
}

}  // namespace
}  // namespace troupe::qa
