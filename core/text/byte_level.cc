// The byte <-> code point tables of byte-level BPE.
#include "core/text/byte_level.h"

#include <array>
#include <cstdint>
#include <unordered_map>

namespace troupe {

namespace {

std::string Utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

struct Tables {
  std::array<std::string, 256> chars;
  std::unordered_map<uint32_t, unsigned char> byte_of;
  Tables() {
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : next++;
      chars[b] = Utf8(cp);
      byte_of[cp] = static_cast<unsigned char>(b);
    }
  }
};

const Tables& Get() {
  static const Tables tables;
  return tables;
}

}  // namespace

const std::string& ByteLevelChar(unsigned char b) { return Get().chars[b]; }

std::string ToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += Get().chars[b];
  return out;
}

std::optional<std::string> FromByteLevel(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c & 0xE0) == 0xC0) cp = c & 0x1F, len = 2;
    else if ((c & 0xF0) == 0xE0) cp = c & 0x0F, len = 3;
    else return std::nullopt;  // byte-level code points are below U+0144
    if (i + len > text.size()) return std::nullopt;
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    const auto it = Get().byte_of.find(cp);
    if (it == Get().byte_of.end()) return std::nullopt;
    out += static_cast<char>(it->second);
    i += len;
  }
  return out;
}

size_t ValidUtf8Prefix(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return n;
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t valid = ValidUtf8Prefix(text);
    out.append(text.substr(0, valid));
    if (valid == text.size()) break;
    out.append("\xEF\xBF\xBD");  // U+FFFD for the byte that starts no valid character
    text.remove_prefix(valid + 1);
  }
  return out;
}

}  // namespace troupe
