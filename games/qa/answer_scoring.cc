// Normalisation, exact match and token F1 (see answer_scoring.h).
#include "games/qa/answer_scoring.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace troupe::qa {

std::string NormaliseAnswer(const std::string& text) {
  std::string cleaned;
  cleaned.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 128 && std::ispunct(c)) continue;
    cleaned.push_back(c < 128 ? static_cast<char>(std::tolower(c)) : static_cast<char>(c));
  }
  std::istringstream in(cleaned);
  std::string word, out;
  while (in >> word) {
    if (word == "a" || word == "an" || word == "the") continue;
    if (!out.empty()) out.push_back(' ');
    out += word;
  }
  return out;
}

std::vector<std::string> AnswerTokens(const std::string& text) {
  std::istringstream in(NormaliseAnswer(text));
  std::vector<std::string> tokens;
  for (std::string w; in >> w;) tokens.push_back(w);
  return tokens;
}

double ExactMatch(const std::string& prediction, const std::vector<std::string>& aliases) {
  const std::string p = NormaliseAnswer(prediction);
  for (const auto& a : aliases) {
    if (p == NormaliseAnswer(a)) return 1.0;
  }
  return 0.0;
}

namespace {

double TokenF1(const std::vector<std::string>& pred, const std::vector<std::string>& gold) {
  if (pred.empty() || gold.empty()) return pred == gold ? 1.0 : 0.0;
  std::map<std::string, int> counts;
  for (const auto& t : gold) ++counts[t];
  int common = 0;
  for (const auto& t : pred) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(pred.size());
  const double recall = static_cast<double>(common) / static_cast<double>(gold.size());
  return 2 * precision * recall / (precision + recall);
}

}  // namespace

double AnswerF1(const std::string& prediction, const std::vector<std::string>& aliases) {
  const std::vector<std::string> pred = AnswerTokens(prediction);
  double best = 0;
  for (const auto& a : aliases) best = std::max(best, TokenF1(pred, AnswerTokens(a)));
  return best;
}

bool ContainsAnswer(const std::string& haystack, const std::string& needle) {
  const std::vector<std::string> h = AnswerTokens(haystack), n = AnswerTokens(needle);
  if (n.empty()) return false;
  return std::search(h.begin(), h.end(), n.begin(), n.end()) != h.end();
}

}  // namespace troupe::qa
