// Reading documents: renamed Factbook passages and questions answered by their spans.
#include "games/qa/reading_documents.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include <boost/algorithm/string/trim.hpp>

#include "core/base/errors.h"
#include "core/rng.h"
#include "core/text/invented_names.h"
#include "games/qa/factbook_qa.h"

namespace troupe::qa {

namespace {

constexpr size_t kPassageChars = 160;  // of each passage: documents stay short enough for a training sequence

int Words(const std::string& s) {
  int n = 0;
  bool in = false;
  for (char c : s) {
    const bool w = !std::isspace(static_cast<unsigned char>(c));
    n += w && !in;
    in = w;
  }
  return n;
}

// The text from `after` (or the start) up to the first of `stops` or " ("; "" when longer than `max_words` or empty.
std::string Span(const std::string& text, const std::string& after, const std::string& stops, int max_words) {
  size_t from = 0;
  if (!after.empty()) {
    from = text.find(after);
    if (from == std::string::npos) return "";
    from += after.size();
  }
  // A parenthesis ends a span too: "Arabic (official)", "5 July 1962 (from France)".
  const size_t to =
      std::min(text.find(" (", from), stops.empty() ? std::string::npos : text.find_first_of(stops, from));
  std::string span =
      boost::algorithm::trim_copy(text.substr(from, to == std::string::npos ? std::string::npos : to - from));
  if (span.empty() || Words(span) > max_words) return "";
  return span;
}

// A Factbook field a question can ask about: where its answer stands in the passage and how to ask.
struct Relation {
  std::string field;  // the title after "Country - "
  std::function<std::string(const std::string&)> answer;
  std::vector<std::string> questions;  // "{c}" stands for the country
};

const std::vector<Relation>& Relations() {
  static const std::vector<Relation> relations = {
      {"Government - Capital",
       [](const std::string& t) { return Span(t, "name: ", ";", 4); },
       {"What is the capital of {c}?", "Which city is the capital of {c}?", "Name the capital city of {c}.",
        "{c} has its capital in which city?", "What city serves as the capital of {c}?",
        "Where is the seat of government of {c}?"}},
      {"People and Society - Languages",
       [](const std::string& t) { return Span(t, "", ",;0123456789", 3); },
       {"What language is spoken in {c}?", "Which language do people in {c} speak?", "Name a language of {c}.",
        "What is the main language of {c}?"}},
      {"People and Society - Population",
       [](const std::string& t) {
         return !t.empty() && std::isdigit(static_cast<unsigned char>(t[0])) ? Span(t, "", ";", 2) : "";
       },
       {"What is the population of {c}?", "How many people live in {c}?", "How large is the population of {c}?"}},
      {"Geography - Area",
       [](const std::string& t) { return Span(t, "total: ", ";", 3); },
       {"What is the total area of {c}?", "How big is {c}?", "How large is {c} in area?"}},
      {"Geography - Location",
       [](const std::string& t) { return Span(t, "", ",;", 4); },
       {"Where is {c}?", "Where is {c} located?", "In which part of the world does {c} lie?"}},
      {"Government - Government type",
       [](const std::string& t) { return Span(t, "", ";", 5); },
       {"What type of government does {c} have?", "How is {c} governed?", "What is the government type of {c}?"}},
      {"Government - Independence",
       [](const std::string& t) { return Span(t, "", ";", 5); },
       {"When did {c} become independent?", "On what date did {c} gain independence?"}},
      {"Government - National holiday",
       [](const std::string& t) { return Span(t, "", ",;", 5); },
       {"What is the national holiday of {c}?", "Which day does {c} celebrate as its national holiday?"}},
      {"Economy - Exchange rates",
       [](const std::string& t) { return Span(t, "", ";-", 4); },
       {"What is the currency of {c}?", "Which money is used in {c}?", "What do people in {c} pay with?"}},
      {"Geography - Coastline",
       [](const std::string& t) { return Span(t, "", ";", 3); },
       {"How long is the coastline of {c}?", "What is the length of the coast of {c}?"}},
      {"Geography - Natural resources",
       [](const std::string& t) { return Span(t, "", ",;", 3); },
       {"Name a natural resource of {c}.", "What natural resource does {c} have?"}},
  };
  return relations;
}

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size()))
    s->replace(at, from.size(), to);
}

// The "; "-separated clause of `text` that holds `answer` (the first clause when `answer` is empty or in none).
std::string ClauseOf(const std::string& text, const std::string& answer) {
  const size_t at = answer.empty() ? std::string::npos : text.find(answer);
  const size_t before = at == std::string::npos ? std::string::npos : text.rfind("; ", at);
  const size_t from = before == std::string::npos ? 0 : before + 2;
  return text.substr(from, std::min(text.find("; ", from), text.size()) - from);
}

// A passage's field: its title after "Country - ".
std::string Field(const Passage& p) { return p.title.substr(p.title.find(" - ") + 3); }

// A languages passage whose first language (one word: "Arabic (official), French") is renamed by an invented
// language ("Quellinese"), so that language questions, too, are answered by reading, not by memory.
const std::vector<std::string>& LanguageEndings() {
  static const std::vector<std::string> endings = {"ish", "ian", "ese", "i", "an", "ic"};
  return endings;
}

std::string RenameFirstLanguage(const std::string& text, Rng& rng) {
  const std::vector<std::string>& endings = LanguageEndings();
  const std::string first = Span(text, "", ",;0123456789", 1);
  if (first.empty() || !std::isupper(static_cast<unsigned char>(first[0])) ||
      !std::all_of(first.begin(), first.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
    return text;
  }
  // The ending is drawn before the stem: the order every run so far drew them in (C++ leaves the order of an
  // expression's operands open; g++ took the right one first).
  const std::string& ending = endings[rng.Below(static_cast<int>(endings.size()))];
  return InventedName(rng.Next()) + ending + text.substr(text.find(first) + first.size());
}

template <typename T>
void Shuffle(std::vector<T>* v, Rng& rng) {
  for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[rng.Below(static_cast<int>(i))]);
}

}  // namespace

ReadingDocuments::ReadingDocuments(const std::vector<Passage>& passages, ReadingDocumentOptions options)
    : options_(std::move(options)) {
  std::map<std::string, Country> by_name;
  for (const Passage& p : passages) {
    const size_t dash = p.title.find(" - ");
    const size_t colon = p.id.find(':');
    if (dash == std::string::npos) continue;
    if (colon != std::string::npos && options_.left_out_pages.count(p.id.substr(0, colon))) continue;
    Country& c = by_name[p.title.substr(0, dash)];
    c.name = p.title.substr(0, dash);
    Passage shown = p;
    if (shown.text.size() > kPassageChars) shown.text.resize(kPassageChars);
    if (Field(p) == "Government - Capital") c.capital = Span(shown.text, "name: ", ";", 4);
    c.passages.push_back(std::move(shown));
  }
  for (auto& [name, c] : by_name) {
    if (!c.capital.empty() && c.name.size() >= 4) countries_.push_back(std::move(c));
  }
  if (options_.min_countries_per_document < 1 ||
      options_.min_countries_per_document > options_.countries_per_document) {
    throw Error("reading documents: min_countries_per_document (" +
                std::to_string(options_.min_countries_per_document) + ") must be 1 to countries_per_document (" +
                std::to_string(options_.countries_per_document) + ")");
  }
  if (options_.list_share < 0 || options_.fact_share < 0 || options_.list_share + options_.fact_share > 1) {
    throw Error("reading documents: list_share (" + std::to_string(options_.list_share) + ") and fact_share (" +
                std::to_string(options_.fact_share) + ") are shares of the documents, 0 or more, 1 at most together");
  }
  if (countries_.size() < static_cast<size_t>(options_.countries_per_document)) {
    throw Error("reading documents need Factbook passages of at least " +
                std::to_string(options_.countries_per_document) + " countries with a capital; got " +
                std::to_string(countries_.size()));
  }
}

std::string ReadingDocuments::Document(uint64_t index) const {
  Rng rng(Rng::Mix(options_.seed, 0x52454144, index));
  const double kind = rng.Uniform();
  if (kind < options_.list_share) return Lists(rng.Next());
  return kind < options_.list_share + options_.fact_share ? Facts(rng.Next()) : Passages(rng.Next());
}

std::string ReadingDocuments::Passages(uint64_t draw) const {
  Rng rng(draw);
  // The countries, renamed: the country, its capital, and words made from the country's name ("Algerian").
  // A fixed count takes no draw, so documents of three countries are those pretraining has always read.
  const int spread = options_.countries_per_document - options_.min_countries_per_document;
  const int countries = options_.min_countries_per_document + (spread > 0 ? rng.Below(spread + 1) : 0);
  std::vector<const Country*> chosen;
  while (chosen.size() < static_cast<size_t>(countries)) {
    const Country* c = &countries_[rng.Below(static_cast<int>(countries_.size()))];
    if (std::find(chosen.begin(), chosen.end(), c) == chosen.end()) chosen.push_back(c);
  }
  std::vector<std::pair<std::string, std::string>> renames;  // real -> invented
  for (const Country* c : chosen) {
    renames.emplace_back(c->capital, InventedName(rng.Next()));
    // A city-state's capital is the country ("Gibraltar"): one invented name for both.
    renames.emplace_back(c->name, c->name == c->capital ? renames.back().second : InventedName(rng.Next()));
  }
  auto renamed = [&](std::string s) {
    for (const auto& [from, to] : renames) {
      ReplaceAll(&s, from, to);
      std::string upper = from, upper_to = to;  // "BUCHAREST (capital)"
      for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      for (char& ch : upper_to) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      ReplaceAll(&s, upper, upper_to);
    }
    return s;
  };
  // Per country: its capital passage and one or two others, each with the questions it answers.
  struct Asked {
    std::string question, answer;
  };
  struct Shown {
    std::string line;
    std::vector<Asked> asks;
    bool capital = false;
    size_t country = 0;
  };
  std::vector<Shown> shown;
  for (size_t k = 0; k < chosen.size(); ++k) {
    const Country& c = *chosen[k];
    const std::string name = renames[2 * k + 1].second;
    std::vector<const Passage*> picked;
    std::vector<const Passage*> others;
    for (const Passage& p : c.passages) {
      if (Field(p) == "Government - Capital") picked.push_back(&p);
      else others.push_back(&p);
    }
    Shuffle(&others, rng);
    // Passages a question can ask about first: every shown passage then teaches reading.
    std::stable_partition(others.begin(), others.end(), [](const Passage* p) {
      return std::any_of(Relations().begin(), Relations().end(),
                         [&](const Relation& r) { return r.field == Field(*p); });
    });
    const size_t extra = std::min<size_t>(others.size(), 1 + rng.Below(2));
    picked.insert(picked.end(), others.begin(), others.begin() + extra);
    for (const Passage* p : picked) {
      const std::string field = Field(*p);
      std::string text = renamed(p->text);
      if (field == "People and Society - Languages") text = RenameFirstLanguage(text, rng);
      Shown s{"", {}, field == "Government - Capital", k};
      for (const Relation& r : Relations()) {
        if (r.field != field) continue;
        const std::string answer = r.answer(text);
        if (answer.empty()) continue;
        std::string question = r.questions[rng.Below(static_cast<int>(r.questions.size()))];
        ReplaceAll(&question, "{c}", name);
        s.asks.push_back({question, answer});
      }
      if (options_.short_passages) text = ClauseOf(text, s.asks.empty() ? "" : s.asks.front().answer);
      s.line = renamed(p->title) + ": " + text;
      shown.push_back(std::move(s));
    }
  }
  // Within max_chars: other passages leave first, then whole countries (the last chosen), never the first.
  auto chars = [&] {
    size_t n = 0;
    for (const Shown& s : shown) n += s.line.size() + 1;
    return n;
  };
  while (options_.max_chars > 0 && chars() > options_.max_chars) {
    std::vector<size_t> others;
    for (size_t i = 0; i < shown.size(); ++i)
      if (!shown[i].capital) others.push_back(i);
    if (!others.empty()) {
      shown.erase(shown.begin() + static_cast<std::ptrdiff_t>(others[rng.Below(static_cast<int>(others.size()))]));
      continue;
    }
    const size_t last = shown.back().country;
    if (last == 0) break;
    shown.erase(std::remove_if(shown.begin(), shown.end(), [&](const Shown& s) { return s.country == last; }),
                shown.end());
  }
  std::vector<Asked> askable;
  for (const Shown& s : shown) askable.insert(askable.end(), s.asks.begin(), s.asks.end());
  Shuffle(&shown, rng);
  Shuffle(&askable, rng);
  std::string doc = rng.Below(2) == 0 ? "Passages:\n" : "";
  for (const Shown& s : shown) doc += s.line + "\n";
  doc += "\n";
  const size_t asked = std::min<size_t>(askable.size(), static_cast<size_t>(options_.questions_per_document));
  for (size_t q = 0; q < asked; ++q)
    doc += "Question: " + askable[q].question + "\nAnswer: " + askable[q].answer + "\n";
  return doc;
}

std::string ReadingDocuments::Lists(uint64_t draw) const {
  Rng rng(draw);
  static const char* const kHeads[][2] = {{"Names:", "Again:"},
                                          {"The list:", "The same list:"},
                                          {"Say these words:", "Said again:"},
                                          {"Guests:", "Guests, in order:"}};
  const auto& head = kHeads[rng.Below(4)];
  std::vector<std::string> names;
  for (int i = 0, n = 6 + rng.Below(20); i < n; ++i) names.push_back(InventedName(rng.Next()));
  std::string list;
  for (const std::string& n : names) list += " " + n;
  return std::string(head[0]) + list + "\n" + head[1] + list + "\n";
}

std::string ReadingDocuments::Facts(uint64_t draw) const {
  // Every name first, a fixed number of draws, so a document cut to fit its budget keeps its first countries' names.
  constexpr int kMostCountries = 6;
  static const std::vector<std::string> capital_sayings = {
      "The capital of {c} is {v}.", "{c}'s capital is {v}.", "{v} is the capital of {c}.", "{c} - capital: {v}",
      "{c} has its capital at {v}."};
  static const std::vector<std::string> language_sayings = {
      "People in {c} speak {v}.", "The language of {c} is {v}.", "{v} is spoken in {c}.", "{c} - language: {v}",
      "In {c} the main language is {v}."};
  Rng names_rng(Rng::Mix(draw, 1));
  std::vector<std::array<std::string, 3>> countries;  // name, capital, language
  std::set<std::string> used;
  auto fresh = [&] {
    std::string name;
    do name = InventedName(names_rng.Next());
    while (!used.insert(name).second);
    return name;
  };
  for (int k = 0; k < kMostCountries; ++k) {
    // In this order, each a draw (the language's ending before its stem, as in RenameFirstLanguage).
    const std::string name = fresh(), capital = fresh();
    const std::string& ending = LanguageEndings()[names_rng.Below(static_cast<int>(LanguageEndings().size()))];
    countries.push_back({name, capital, fresh() + ending});
  }
  const int wanted = 3 + Rng(Rng::Mix(draw, 2)).Below(kMostCountries - 2);
  auto build = [&](int n) {
    Rng rng(Rng::Mix(draw, 3));
    struct Fact {
      std::string line, country, value;
      size_t relation;  // Relations()[0] is the capital's, [1] the language's
    };
    std::vector<Fact> facts;
    for (int k = 0; k < n; ++k) {
      for (size_t relation : {size_t{0}, size_t{1}}) {
        const std::vector<std::string>& sayings = relation == 0 ? capital_sayings : language_sayings;
        std::string line = sayings[rng.Below(static_cast<int>(sayings.size()))];
        ReplaceAll(&line, "{c}", countries[k][0]);
        ReplaceAll(&line, "{v}", countries[k][1 + relation]);
        facts.push_back({line, countries[k][0], countries[k][1 + relation], relation});
      }
    }
    Shuffle(&facts, rng);
    std::string doc = rng.Below(2) == 0 ? "Facts:\n" : "";
    for (const Fact& f : facts) doc += f.line + "\n";
    doc += "\n";
    Shuffle(&facts, rng);  // the questions in another order than the facts
    for (size_t q = 0; q < std::max<size_t>(3, facts.size() / 2); ++q) {
      const std::vector<std::string>& wordings = Relations()[facts[q].relation].questions;
      std::string question = wordings[rng.Below(static_cast<int>(wordings.size()))];
      ReplaceAll(&question, "{c}", facts[q].country);
      doc += "Question: " + question + "\nAnswer: " + facts[q].value + "\n";
    }
    return doc;
  };
  std::string doc = build(wanted);
  for (int n = wanted - 1; options_.max_chars > 0 && doc.size() > options_.max_chars && n >= 2; --n) doc = build(n);
  return doc;
}

std::vector<std::function<std::string(uint64_t)>> FactbookReadingDocuments(
    const std::vector<ReadingDocumentOptions>& options) {
  const std::vector<Passage> passages = ReadPassages(EnsureDefaultQaData() + "/passages.jsonl");
  std::vector<std::function<std::string(uint64_t)>> sources;
  for (const ReadingDocumentOptions& o : options) {
    auto reading = std::make_shared<const ReadingDocuments>(passages, o);
    sources.push_back([reading](uint64_t index) { return reading->Document(index); });
  }
  return sources;
}

}  // namespace troupe::qa
