// GPT-2's byte-level alphabet: every byte as a printable code point, so that
// byte-level BPE vocabularies are text (../shared/specs/language_models.md).
// Printable Latin-1 bytes map to themselves, the other 68 to 256 + n in order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace troupe {

// The UTF-8 text of byte b's code point ("Ġ" for the space).
const std::string& ByteLevelChar(unsigned char b);

// Raw bytes of a string written in the byte-level alphabet; nullopt when a
// code point is outside it.
std::optional<std::string> FromByteLevel(std::string_view text);

// The byte-level spelling of raw bytes.
std::string ToByteLevel(std::string_view bytes);

// The length of the valid UTF-8 prefix of `text` (== size when all valid).
size_t ValidUtf8Prefix(std::string_view text);

// `text` with each byte that starts no valid UTF-8 character replaced by U+FFFD.
std::string ToValidUtf8(std::string_view text);

}  // namespace troupe
