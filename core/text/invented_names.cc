// Invented names from syllables.
#include "core/text/invented_names.h"

#include <cctype>
#include <cstdint>

#include "core/rng.h"

namespace troupe {

namespace {

// Syllables no English word is made of in this order often.
const char* const kOnsets[] = {"b", "d", "f", "g", "k", "l",  "m",  "n",  "p",  "qu",
                               "r", "s", "t", "v", "z", "th", "br", "dr", "kr", "st"};
const char* const kVowels[] = {"a", "e", "i", "o", "u", "ai", "ei", "ou"};
const char* const kCodas[] = {"", "", "", "n", "l", "r", "s", "th", "m"};

template <size_t N>
const char* Pick(const char* const (&options)[N], Rng& rng) {
  return options[rng.Below(static_cast<int>(N))];
}

}  // namespace

std::string InventedName(uint64_t draw) {
  Rng rng(draw);
  std::string name;
  for (int s = 0, n = 2 + rng.Below(2); s < n; ++s) {
    name += Pick(kOnsets, rng);
    name += Pick(kVowels, rng);
    if (s + 1 == n || rng.Below(3) == 0) name += Pick(kCodas, rng);
  }
  name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return name;
}

}  // namespace troupe
