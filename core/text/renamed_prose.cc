// RenamedProse: a window of whole sentences, its recurring words replaced by invented names.
#include "core/text/renamed_prose.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <vector>

#include "core/base/errors.h"
#include "core/rng.h"
#include "core/text/invented_names.h"

namespace troupe {

namespace {

bool Letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool Upper(char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; }

// Where sentences may start: the text's start and after ". ", "? ", "! " or a blank line.
std::vector<size_t> SentenceStarts(const std::string& text) {
  std::vector<size_t> starts = {0};
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    const bool end = (text[i - 1] == '.' || text[i - 1] == '?' || text[i - 1] == '!') && text[i] == ' ';
    const bool blank = text[i - 1] == '\n' && text[i] == '\n';
    if (end || blank) starts.push_back(i + 1);
  }
  return starts;
}

struct Word {
  size_t at, length;
};

std::vector<Word> Words(const std::string& text) {
  std::vector<Word> words;
  for (size_t i = 0; i < text.size();) {
    if (!Letter(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && Letter(text[j])) ++j;
    words.push_back({i, j - i});
    i = j;
  }
  return words;
}

}  // namespace

std::string RenamedProse(const std::string& text, uint64_t draw, const RenamedProseOptions& o) {
  if (text.empty()) return "";
  Rng rng(draw);
  const std::vector<size_t> starts = SentenceStarts(text);
  const size_t from = starts[rng.Below(static_cast<int>(starts.size()))];
  // The window ends at the last sentence end within window_chars (or at window_chars when there is none).
  size_t to = std::min(text.size(), from + o.window_chars);
  if (to < text.size()) {
    const size_t end = text.find_last_of(".?!", to - 1);
    if (end != std::string::npos && end > from + o.window_chars / 3) {
      to = end + 1;
    } else {
      // No sentence ends in it: cut before a whole UTF-8 character.
      while (to > from && (static_cast<unsigned char>(text[to]) & 0xC0) == 0x80) --to;
    }
  }
  std::string window = text.substr(from, to - from);
  // Recurring words: a name (capitalised somewhere other than a sentence's start) first, then the longest.
  std::map<std::string, int> count;
  std::map<std::string, bool> named;
  for (const Word& w : Words(window)) {
    if (w.length < static_cast<size_t>(o.min_length)) continue;
    const std::string word = window.substr(w.at, w.length);
    ++count[word];
    size_t before = w.at;
    while (before > 0 && window[before - 1] == ' ') --before;
    const bool sentence_start = before == 0 || window[before - 1] == '.' || window[before - 1] == '?' ||
                                window[before - 1] == '!' || window[before - 1] == '\n' || window[before - 1] == '"';
    if (Upper(word[0]) && !sentence_start) named[word] = true;
  }
  std::vector<std::string> recurring;
  for (const auto& [word, n] : count) {
    if (n >= 2) recurring.push_back(word);
  }
  if (recurring.empty()) return "";
  std::stable_sort(recurring.begin(), recurring.end(), [&](const std::string& a, const std::string& b) {
    if (named.count(a) != named.count(b)) return named.count(a) > named.count(b);
    return a.size() > b.size();
  });
  recurring.resize(std::min(recurring.size(), static_cast<size_t>(std::max(1, o.words))));
  std::map<std::string, std::string> renames;
  for (const std::string& word : recurring) {
    std::string name = InventedName(rng.Next());
    if (!Upper(word[0])) name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    renames[word] = name;
  }
  std::string out;
  out.reserve(window.size() + 32);
  size_t copied = 0;
  for (const Word& w : Words(window)) {
    const auto it = renames.find(window.substr(w.at, w.length));
    if (it == renames.end()) continue;
    out += window.substr(copied, w.at - copied) + it->second;
    copied = w.at + w.length;
  }
  out += window.substr(copied);
  if (o.echo > 0.0 && rng.Uniform() < o.echo) {
    // A sentence with a renamed word, at most a third of the window (so the echo keeps the window short).
    std::vector<std::string> echoes;
    const std::vector<size_t> out_starts = SentenceStarts(out);
    for (size_t s = 0; s < out_starts.size(); ++s) {
      const size_t end = s + 1 < out_starts.size() ? out_starts[s + 1] : out.size();
      std::string sentence = out.substr(out_starts[s], end - out_starts[s]);
      while (!sentence.empty() && std::isspace(static_cast<unsigned char>(sentence.back()))) sentence.pop_back();
      const bool named = std::any_of(renames.begin(), renames.end(),
                                     [&](const auto& r) { return sentence.find(r.second) != std::string::npos; });
      if (named && sentence.size() >= 20 && sentence.size() <= out.size() / 3) echoes.push_back(std::move(sentence));
    }
    if (!echoes.empty()) out += "\n\n" + echoes[rng.Below(static_cast<int>(echoes.size()))];
  }
  return out;
}

RenamedProseWindows::RenamedProseWindows(const std::vector<Document>& documents, uint64_t seed,
                                         RenamedProseOptions options)
    : documents_(documents), rng_(seed), options_(options) {
  double total = 0.0;
  for (const Document& d : documents_) cumulative_.push_back(total += static_cast<double>(d.text.size()));
  if (total == 0.0) throw Error("renamed prose: the documents have no text to rename");
}

std::string RenamedProseWindows::Next() {
  for (int empty = 0; empty < 100000; ++empty) {
    const double at = rng_.Uniform() * cumulative_.back();
    const size_t k = std::min(
        documents_.size() - 1,
        static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), at) - cumulative_.begin()));
    std::string text = RenamedProse(documents_[k].text, rng_.Next(), options_);
    if (!text.empty()) return text;
  }
  throw Error("renamed prose: the documents' windows have no recurring words");
}

}  // namespace troupe
