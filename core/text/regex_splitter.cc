// PCRE2 behind RegexSplitter.
#include "core/text/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/base/errors.h"

namespace troupe {

const char kGpt2Pattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char kQwenPattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(const std::string& pattern) : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw TokenizerError("pre-tokeniser regex does not compile at offset " + std::to_string(offset) + ": " +
                         reinterpret_cast<const char*>(message));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;

void RegexSplitter::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // A match buffer per call keeps the splitter usable from several threads.
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), pcre2_match_data_free);
  size_t at = 0, gap = 0;  // where to search next; where the unmatched stretch began
  while (at < text.size()) {
    // The text is checked UTF-8 by the caller.
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK,
                                                match.get(), nullptr)
                              : pcre2_match(impl_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.get(),
                                            nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw TokenizerError("pre-tokeniser regex failed with PCRE2 error " + std::to_string(rc));
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
    const size_t begin = span[0], end = span[1];
    if (begin > gap) pieces->push_back(text.substr(gap, begin - gap));
    if (end > begin) {
      pieces->push_back(text.substr(begin, end - begin));
      at = end;
    } else {  // an empty match: step over one character
      at = begin + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
      continue;
    }
    gap = at;
  }
  if (gap < text.size()) pieces->push_back(text.substr(gap));
}

}  // namespace troupe
