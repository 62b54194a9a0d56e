// A pre-tokeniser's Split(regex, Isolated): text cut into the regex's matches
// and the stretches between them, by PCRE2 (Unicode classes, look-ahead), JIT
// compiled when the platform allows.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

class RegexSplitter {
 public:
  // Throws TokenizerError with PCRE2's message and offset for a bad pattern.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;

  // Appends the pieces of `text` (valid UTF-8) to `pieces`, in order; their
  // concatenation is `text`. Thread-safe.
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

// The pre-tokeniser regexes of GPT-2 (r50k) and of Qwen2/Qwen3.
extern const char kGpt2Pattern[];
extern const char kQwenPattern[];

}  // namespace troupe
