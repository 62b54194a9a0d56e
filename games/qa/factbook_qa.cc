// The Factbook QA generator (see factbook_qa.h).
#include "games/qa/factbook_qa.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/data_cache.h"
#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "core/base/fnv1a.h"
#include "core/rng.h"
#include "games/qa/answer_scoring.h"
#include "games/qa/reworded_questions.h"

namespace troupe::qa {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bumped whenever what the generator writes changes: a cached dataset of another version is rebuilt.
constexpr int kGeneratorVersion = 2;

json ParseJsonFile(const std::string& path) {
  try {
    return json::parse(ReadWholeFile(path));
  } catch (const json::exception& e) {
    throw Error(path + ": not JSON: " + e.what());
  }
}

// A field's text: its own "text", then each sub-field as "name: text".
std::string FieldText(const json& value) {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (part.empty()) return;
    if (!out.empty()) out += "; ";
    out += part;
  };
  if (!value.is_object()) return out;
  if (auto it = value.find("text"); it != value.end() && it->is_string()) add(it->get<std::string>());
  for (const auto& [key, sub] : value.items()) {
    if (key == "text" || !sub.is_object()) continue;
    const std::string text = FieldText(sub);
    if (!text.empty()) add(key + ": " + text);
  }
  return out;
}

struct Country {
  std::string gec;   // the Factbook file's code
  std::string name;  // the Factbook's conventional short form: what passages and questions say
  std::string cca3;
  std::vector<std::string> names;  // the Factbook's name and world-countries' common and official names
  std::vector<std::string> capitals;
  std::string region, subregion;
  std::vector<std::string> languages;
  std::vector<std::pair<std::string, std::string>> currencies;  // name, code
  std::vector<std::string> borders;                             // cca3 codes
  double area = 0;
  bool landlocked = false;
  std::map<std::string, size_t> passage;  // "Section/Field" -> index into the passages
};

// A string member, or "" when absent or not a string.
std::string Text(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The strings of a list (or of an object's values); others are skipped.
std::vector<std::string> Texts(const json& j) {
  std::vector<std::string> out;
  if (!j.is_array() && !j.is_object()) return out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string FactbookName(const json& profile) {
  for (const char* form : {"conventional short form", "local short form"}) {
    const json* j = &profile;
    for (const char* key : {"Government", "Country name", form, "text"}) {
      if (!j->is_object() || !j->contains(key)) {
        j = nullptr;
        break;
      }
      j = &(*j)[key];
    }
    if (j != nullptr && j->is_string()) {
      std::string name = j->get<std::string>();
      if (!name.empty() && NormaliseAnswer(name) != "none") return name;
    }
  }
  return "";
}

// "Korea, South" -> "South Korea": the Factbook's inverted names as people write them.
std::string Uninverted(const std::string& name) {
  const size_t comma = name.find(", ");
  if (comma == std::string::npos) return name;
  return name.substr(comma + 2) + " " + name.substr(0, comma);
}

// Numbers before "sq km" after "total" in the Factbook's area field (0 when absent).
double FactbookArea(const std::string& text) {
  size_t at = text.find("total: ");
  if (at == std::string::npos) return 0;
  at += 7;
  std::string digits;
  for (; at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == ',' || text[at] == '.'); ++at) {
    if (text[at] != ',') digits.push_back(text[at]);
  }
  if (digits.empty() || text.compare(at, 6, " sq km") != 0) return 0;
  try {
    return std::stod(digits);
  } catch (const std::exception&) {
    return 0;
  }
}

class Builder {
 public:
  explicit Builder(const FactbookQaOptions& options) : options_(options) {}

  FactbookQa Build() {
    ReadFactbook();
    MatchCountries();
    for (const Country& c : countries_) SingleHop(c);
    for (const Country& c : countries_) Bridge(c);
    for (size_t i = 0; i < countries_.size(); ++i) Comparisons(i);
    out_.countries = static_cast<int>(countries_.size());
    // Shuffled (seeded), so that the first N questions of a split are a fair sample of its types.
    for (auto* split : {&out_.train, &out_.test}) {
      Rng rng(Rng::Mix(options_.seed, split == &out_.train ? 1 : 2, 0x5EED));
      for (size_t i = split->size(); i > 1; --i) std::swap((*split)[i - 1], (*split)[rng.Next() % i]);
    }
    return std::move(out_);
  }

 private:
  void ReadFactbook() {
    if (!fs::is_directory(options_.factbook_dir)) throw Error(options_.factbook_dir + ": no Factbook folder");
    std::vector<fs::path> files;
    for (const auto& region : fs::directory_iterator(options_.factbook_dir)) {
      if (!region.is_directory() || region.path().filename() == "meta") continue;
      const std::string name = region.path().filename().string();
      if (!options_.regions.empty() &&
          std::find(options_.regions.begin(), options_.regions.end(), name) == options_.regions.end()) {
        continue;
      }
      for (const auto& f : fs::directory_iterator(region.path())) {
        if (f.path().extension() == ".json") files.push_back(f.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const json profile = ParseJsonFile(file.string());
      Country c;
      c.gec = file.stem().string();
      c.name = FactbookName(profile);
      if (c.name.empty() || !profile.is_object()) continue;
      for (const auto& [section, fields] : profile.items()) {
        if (!fields.is_object()) continue;
        for (const auto& [field, value] : fields.items()) {
          std::string text = FieldText(value);
          if (text.empty()) continue;
          c.passage[section + "/" + field] = out_.passages.size();
          out_.passages.push_back({c.gec + ":" + section + ":" + field, c.name + " - " + section + " - " + field,
                                   std::move(text)});
        }
      }
      profiles_.push_back(std::move(c));
    }
    if (profiles_.empty()) throw Error(options_.factbook_dir + ": no Factbook profiles read");
  }

  void MatchCountries() {
    const json all = ParseJsonFile(options_.countries_json);
    if (!all.is_array()) throw Error(options_.countries_json + ": expected a list of countries");
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < all.size(); ++i) {
      const json& r = all[i];
      if (!r.is_object()) continue;
      const json name = r.contains("name") ? r["name"] : json();
      std::vector<std::string> names = {Text(name, "common"), Text(name, "official")};
      for (const auto& alt : Texts(r.contains("altSpellings") ? r["altSpellings"] : json())) {
        if (alt.size() > 3) names.push_back(alt);
      }
      for (const auto& n : names) {
        if (!n.empty()) by_name.emplace(NormaliseAnswer(n), i);
      }
    }
    std::set<size_t> used;
    for (Country& c : profiles_) {
      auto it = by_name.find(NormaliseAnswer(c.name));
      if (it == by_name.end()) it = by_name.find(NormaliseAnswer(Uninverted(c.name)));
      if (it == by_name.end() || !used.insert(it->second).second) continue;
      const json& r = all[it->second];
      c.cca3 = Text(r, "cca3");
      if (c.cca3.empty()) continue;
      auto member = [&r](const char* key) { return r.contains(key) ? r[key] : json(); };
      c.names = {c.name};
      for (const std::string n : {Uninverted(c.name), Text(member("name"), "common"), Text(member("name"), "official")}) {
        if (!n.empty() && std::find(c.names.begin(), c.names.end(), n) == c.names.end()) c.names.push_back(n);
      }
      c.capitals = Texts(member("capital"));
      c.region = Text(r, "region");
      c.subregion = Text(r, "subregion");
      c.languages = Texts(member("languages"));
      const json currencies = member("currencies");
      if (currencies.is_object()) {
        for (const auto& [code, cur] : currencies.items()) c.currencies.push_back({Text(cur, "name"), code});
      }
      c.borders = Texts(member("borders"));
      c.area = member("area").is_number() ? member("area").get<double>() : 0.0;
      c.landlocked = member("landlocked").is_boolean() && member("landlocked").get<bool>();
      by_cca3_[c.cca3] = countries_.size();
      countries_.push_back(std::move(c));
    }
  }

  const Passage* P(const Country& c, const std::string& key) const {
    auto it = c.passage.find(key);
    return it == c.passage.end() ? nullptr : &out_.passages[it->second];
  }
  static bool Mentions(const Passage* p, const std::vector<std::string>& aliases) {
    if (p == nullptr) return false;
    const std::string text = p->title + " " + p->text;
    return std::any_of(aliases.begin(), aliases.end(), [&](const std::string& a) { return ContainsAnswer(text, a); });
  }
  static std::vector<std::string> CurrencyAliases(const Country& c) {
    std::vector<std::string> aliases;
    for (const auto& [name, code] : c.currencies) {
      if (name.empty()) continue;
      const size_t space = name.rfind(' ');
      const std::string last = space == std::string::npos ? name : name.substr(space + 1);
      for (const std::string& a : {name, last, last + "s", code}) {
        if (std::find(aliases.begin(), aliases.end(), a) == aliases.end()) aliases.push_back(a);
      }
    }
    return aliases;
  }
  bool SaysLandlocked(const Country& c) const {
    const Passage* p = P(c, "Geography/Coastline");
    return p != nullptr && ContainsAnswer(p->text, "landlocked");
  }
  std::vector<const Country*> Neighbours(const Country& c) const {
    std::vector<const Country*> out;
    for (const auto& code : c.borders) {
      auto it = by_cca3_.find(code);
      if (it != by_cca3_.end()) out.push_back(&countries_[it->second]);
    }
    return out;
  }

  // The oracle sub-question that looks a relation up: worded with the Factbook
  // field's own name, as a person who knows the source would search it.
  static std::string Lookup(const std::string& relation, const Country& c) {
    if (relation == "capital") return "What is the capital of " + c.name + "?";
    if (relation == "region") return "Where is " + c.name + " located?";
    if (relation == "language") return "What are the languages of " + c.name + "?";
    if (relation == "currency") return "What are the exchange rates of " + c.name + "?";
    if (relation == "border") return "What are the land boundaries of " + c.name + "?";
    if (relation == "landlocked") return "What is the coastline of " + c.name + "?";
    return "What is the area of " + c.name + "?";
  }

  // Keeps the question when `check` holds; files it by the countries it names.
  void Offer(QaRecord r, const std::vector<const Country*>& named, bool check) {
    const std::string key = r.type + "/" + r.relation;
    ++out_.generated[key];
    if (!check) return;
    int in_test = 0;
    for (const Country* c : named) in_test += IsTestCountry(*c);
    if (in_test != 0 && in_test != static_cast<int>(named.size())) return;  // names countries of both splits
    ++out_.kept[key];
    (in_test > 0 ? out_.test : out_.train).push_back(std::move(r));
  }
  bool IsTestCountry(const Country& c) const {
    const uint64_t h = Fnv1aBytes(c.cca3, kFnv1aOffset ^ options_.seed);
    return static_cast<double>(Rng::Mix(h, 7) % 10000) / 10000.0 < options_.test_share;
  }

  void SingleHop(const Country& c) {
    // `lookup`: the oracle sub-question, worded as the Factbook's field is named (what a search finds).
    auto single = [&](const std::string& relation, const std::string& question, const std::string& lookup,
                      std::vector<std::string> answers, std::vector<const Passage*> support) {
      QaRecord r;
      r.id = relation + ":" + c.cca3;
      r.question = question;
      r.answers = std::move(answers);
      r.type = "single_hop";
      r.relation = relation;
      // The first of the candidate passages that mentions an answer supports it.
      bool found = false;
      for (const Passage* p : support) {
        if (found || r.answers.empty() || !Mentions(p, r.answers)) continue;
        r.supporting.push_back(p->id);
        found = true;
      }
      r.decomposition = {lookup};
      Offer(std::move(r), {&c}, found);
    };
    single("capital", "What is the capital of " + c.name + "?", Lookup("capital", c), c.capitals,
           {P(c, "Government/Capital")});
    std::vector<std::string> regions;
    for (const auto& r : {c.subregion, c.region}) {
      if (!r.empty()) regions.push_back(r);
    }
    single("region", "In which region of the world is " + c.name + "?", Lookup("region", c), regions,
           {P(c, "Geography/Location"), P(c, "Geography/Map references")});
    single("language", "Name a language spoken in " + c.name + ".", Lookup("language", c), c.languages,
           {P(c, "People and Society/Languages")});
    single("currency", "What is the currency of " + c.name + "?", Lookup("currency", c), CurrencyAliases(c),
           {P(c, "Economy/Exchange rates")});
    std::vector<std::string> neighbours;
    for (const Country* n : Neighbours(c)) neighbours.insert(neighbours.end(), n->names.begin(), n->names.end());
    single("border", "Name a country that borders " + c.name + ".", Lookup("border", c), neighbours,
           {P(c, "Geography/Land boundaries")});
    // Yes or no: kept when the coastline passage agrees with the fact.
    QaRecord r;
    r.id = "landlocked:" + c.cca3;
    r.question = "Is " + c.name + " landlocked?";
    r.answers = {c.landlocked ? "yes" : "no"};
    r.type = "single_hop";
    r.relation = "landlocked";
    const Passage* coast = P(c, "Geography/Coastline");
    if (coast != nullptr) r.supporting = {coast->id};
    r.decomposition = {Lookup("landlocked", c)};
    Offer(std::move(r), {&c}, coast != nullptr && SaysLandlocked(c) == c.landlocked);
  }

  void Bridge(const Country& c) {
    const Passage* capital = P(c, "Government/Capital");
    if (!c.capitals.empty() && capital != nullptr && UniqueCapital(c.capitals[0])) {
      const std::string& y = c.capitals[0];
      auto via_capital = [&](const std::string& relation, const std::string& what, std::vector<std::string> answers,
                             const Passage* second, const std::string& sub) {
        QaRecord r;
        r.id = relation + ":" + c.cca3;
        r.question = what + " the country whose capital is " + y + "?";
        r.answers = std::move(answers);
        r.type = "bridge";
        r.relation = relation;
        r.hops = {c.name};
        r.decomposition = {"Which country has the capital " + y + "?", sub};
        const bool ok = !r.answers.empty() && Mentions(capital, {y}) && Mentions(second, r.answers);
        if (ok) r.supporting = {capital->id, second->id};
        Offer(std::move(r), {&c}, ok);
      };
      via_capital("currency_of_capital", "What is the currency of", CurrencyAliases(c), P(c, "Economy/Exchange rates"),
                  Lookup("currency", c));
      via_capital("language_of_capital", "Name a language spoken in", c.languages, P(c, "People and Society/Languages"),
                  Lookup("language", c));
    }
    std::vector<const Country*> landlocked;
    for (const Country* n : Neighbours(c)) {
      if (n->landlocked && SaysLandlocked(*n)) landlocked.push_back(n);
    }
    if (landlocked.size() != 1) return;
    const Country& n = *landlocked[0];
    const Passage* bounds = P(c, "Geography/Land boundaries");
    const Passage* cap = P(n, "Government/Capital");
    QaRecord r;
    r.id = "capital_of_landlocked_neighbour:" + c.cca3;
    r.question = "What is the capital of the landlocked country that borders " + c.name + "?";
    r.answers = n.capitals;
    r.type = "bridge";
    r.relation = "capital_of_landlocked_neighbour";
    r.hops = {n.name};
    r.decomposition = {Lookup("border", c), Lookup("capital", n)};
    const bool ok = !r.answers.empty() && Mentions(bounds, n.names) && Mentions(cap, r.answers);
    if (ok) r.supporting = {bounds->id, cap->id};  // (the generator also checked N's coastline says landlocked)
    Offer(std::move(r), {&c, &n}, ok);
  }
  bool UniqueCapital(const std::string& capital) const {
    int n = 0;
    for (const Country& c : countries_) n += !c.capitals.empty() && NormaliseAnswer(c.capitals[0]) == NormaliseAnswer(capital);
    return n == 1;
  }

  void Comparisons(size_t i) {
    const Country& x = countries_[i];
    Rng rng(Rng::Mix(options_.seed, i, 0xA4EA));
    for (int k = 0; k < options_.comparisons_per_country && countries_.size() > 1; ++k) {
      size_t j = static_cast<size_t>(rng.Below(static_cast<int>(countries_.size()) - 1));
      if (j >= i) ++j;
      const Country& y = countries_[j];
      const Passage *px = P(x, "Geography/Area"), *py = P(y, "Geography/Area");
      const double ax = px ? FactbookArea(px->text) : 0, ay = py ? FactbookArea(py->text) : 0;
      const Country& larger = ax > ay ? x : y;
      QaRecord r;
      r.id = "larger_area:" + x.cca3 + "-" + y.cca3;
      r.question = "Which country is larger by area, " + x.name + " or " + y.name + "?";
      r.answers = larger.names;
      r.type = "comparison";
      r.relation = "larger_area";
      r.decomposition = {Lookup("area", x), Lookup("area", y)};
      // Both sources must agree on the order, by a clear margin.
      const bool ok = ax > 0 && ay > 0 && x.area > 0 && y.area > 0 && (ax > ay) == (x.area > y.area) &&
                      std::max(ax, ay) >= 1.25 * std::min(ax, ay);
      if (ok) r.supporting = {px->id, py->id};
      Offer(std::move(r), {&x, &y}, ok);
    }
  }

  const FactbookQaOptions& options_;
  FactbookQa out_;
  std::vector<Country> profiles_;   // every Factbook profile read
  std::vector<Country> countries_;  // those matched to world-countries
  std::map<std::string, size_t> by_cca3_;
};

}  // namespace

FactbookQaOptions CachedFactbookQaOptions() {
  FactbookQaOptions o;
  o.factbook_dir = RequireCached("npm/factbook");
  o.countries_json = RequireCached("npm/world-countries/countries.json");
  return o;
}

FactbookQa BuildFactbookQa(const FactbookQaOptions& options) { return Builder(options).Build(); }

std::string DefaultQaDataDir() { return DataCacheDir() + "/qa/factbook"; }

std::string EnsureDefaultQaData() {
  const std::string dir = DefaultQaDataDir();
  const std::string counts = dir + "/counts.json";
  bool current = false;
  if (fs::exists(counts)) {
    const json j = json::parse(ReadWholeFile(counts), nullptr, false);
    current = j.is_object() && j.value("generator", 0) == kGeneratorVersion;
  }
  if (!current) WriteFactbookQa(BuildFactbookQa(CachedFactbookQaOptions()), dir);
  return dir;
}

std::string FactbookQuestionsFile(const std::string& name_or_path) {
  if (name_or_path == "factbook_qa:train") return EnsureDefaultQaData() + "/train.jsonl";
  if (name_or_path == "factbook_qa:test") return EnsureDefaultQaData() + "/test.jsonl";
  if (name_or_path == "factbook_qa:reworded") {
    // Written from the built-in table each time, so it always matches this build.
    const std::string dir = EnsureDefaultQaData();
    WriteQuestions(dir + "/reworded_test.jsonl", RewordedTestQuestions(ReadQuestions(dir + "/test.jsonl")));
    return dir + "/reworded_test.jsonl";
  }
  return name_or_path;
}

std::set<std::string> SupportingFactbookPages(const std::vector<QaRecord>& questions) {
  std::set<std::string> pages;
  for (const QaRecord& q : questions) {
    for (const std::string& id : q.supporting) {
      const size_t colon = id.find(':');
      if (colon == std::string::npos || colon == 0 || id.find(':', colon + 1) == std::string::npos) continue;
      std::string code = id.substr(0, colon);
      std::transform(code.begin(), code.end(), code.begin(), [](unsigned char c) { return std::tolower(c); });
      pages.insert(std::move(code));
    }
  }
  return pages;
}

std::set<std::string> UnseenFactbookPages(const std::vector<std::string>& question_files) {
  std::set<std::string> pages;
  for (const std::string& file : question_files) {
    const std::set<std::string> some = SupportingFactbookPages(ReadQuestions(FactbookQuestionsFile(file)));
    pages.insert(some.begin(), some.end());
  }
  return pages;
}

void WriteFactbookQa(const FactbookQa& data, const std::string& dir) {
  WritePassages(dir + "/passages.jsonl", data.passages);
  WriteQuestions(dir + "/train.jsonl", data.train);
  WriteQuestions(dir + "/test.jsonl", data.test);
  json counts = {{"generator", kGeneratorVersion}, {"countries", data.countries}, {"passages", data.passages.size()}};
  for (const auto* split : {&data.train, &data.test}) {
    json by_type = json::object();
    for (const auto& r : *split) by_type[r.type] = by_type.value(r.type, 0) + 1;
    counts[split == &data.train ? "train" : "test"] = by_type;
  }
  counts["generated"] = data.generated;
  counts["kept"] = data.kept;
  WriteFileAtomically(dir + "/counts.json", counts.dump(2) + "\n");
}

std::string FactbookQaSummary(const FactbookQa& data) {
  std::map<std::string, std::pair<int, int>> by_type;
  for (const auto& r : data.train) ++by_type[r.type].first;
  for (const auto& r : data.test) ++by_type[r.type].second;
  std::string out = std::to_string(data.countries) + " countries, " + std::to_string(data.passages.size()) +
                    " passages\n  type          train   test\n";
  int train = 0, test = 0;
  char line[96];
  for (const auto& [type, n] : by_type) {
    std::snprintf(line, sizeof line, "  %-12s %6d %6d\n", type.c_str(), n.first, n.second);
    out += line;
    train += n.first;
    test += n.second;
  }
  std::snprintf(line, sizeof line, "  %-12s %6d %6d\n", "all", train, test);
  out += line;
  out += "  kept of generated, by relation:";
  for (const auto& [key, n] : data.generated) {
    auto it = data.kept.find(key);
    out += "\n    " + key + " " + std::to_string(it == data.kept.end() ? 0 : it->second) + "/" + std::to_string(n);
  }
  return out + "\n";
}

}  // namespace troupe::qa
