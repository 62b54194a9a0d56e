// Answer scoring as SQuAD and HotpotQA score: normalise (lower-case, drop
// punctuation and the articles a/an/the, collapse whitespace), then exact
// match and token-level F1, each the best over the gold aliases.
#pragma once

#include <string>
#include <vector>

namespace troupe::qa {

std::string NormaliseAnswer(const std::string& text);

// The normalised tokens of `text`.
std::vector<std::string> AnswerTokens(const std::string& text);

// 1 when the normalised prediction equals a normalised alias, else 0.
double ExactMatch(const std::string& prediction, const std::vector<std::string>& aliases);

// Token-level F1 between the normalised prediction and the best alias.
double AnswerF1(const std::string& prediction, const std::vector<std::string>& aliases);

// Whether the normalised tokens of `needle` occur contiguously in `haystack`'s.
bool ContainsAnswer(const std::string& haystack, const std::string& needle);

}  // namespace troupe::qa
