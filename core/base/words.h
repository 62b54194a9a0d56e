// Comparing words the way games read answers: text models' answers come back
// lower-cased, word models' as their vocabulary spells them.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace troupe {

// Whether two words are the same letters in any case ("A" and "a").
inline bool SameWordAnyCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

}  // namespace troupe
