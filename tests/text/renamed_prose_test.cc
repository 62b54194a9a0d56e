// Renamed prose (core/text/renamed_prose.h): recurring words become invented
// names, the same one at every occurrence, in a window of whole sentences.
#include <catch2/catch.hpp>

#include <cctype>
#include <cstdint>
#include <string>

#include "core/base/errors.h"
#include "core/text/renamed_prose.h"

using namespace troupe;

namespace {

int Occurrences(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("renamed prose gives a recurring name one invented name at every occurrence", "[renamed_prose]") {
  const std::string text = "Call me Ishmael. Some years ago Ishmael went to sea. The sea was calm, and Ishmael slept.";
  RenamedProseOptions o;
  o.window_chars = 1000;
  bool whole = false;
  for (uint64_t draw = 0; draw < 30; ++draw) {
    const std::string out = RenamedProse(text, draw, o);
    // A window from the last sentence holds Ishmael once (and "sea" is too short): nothing recurs.
    if (out.empty()) continue;
    CHECK(out.find("Ishmael") == std::string::npos);
    CHECK(out.find(" went to sea. The sea was calm, and ") != std::string::npos);  // the rest unchanged
    if (out.rfind("Call me ", 0) == 0) {
      whole = true;
      const std::string name = out.substr(8, out.find('.') - 8);
      CHECK(std::isupper(static_cast<unsigned char>(name[0])));
      CHECK(out ==
            "Call me " + name + ". Some years ago " + name + " went to sea. The sea was calm, and " + name + " slept.");
    }
  }
  CHECK(whole);                                                 // some draw starts at the first sentence
  CHECK(RenamedProse(text, 3, o) == RenamedProse(text, 3, o));  // the draw fixes the text
}

TEST_CASE("renamed prose keeps a renamed common word in lower case and renames it consistently", "[renamed_prose]") {
  const std::string text = "The whale rose. Then the whale dived and the whale was gone.";
  RenamedProseOptions o;
  o.window_chars = 1000;
  o.words = 1;
  const std::string out = RenamedProse(text, 0, o);
  REQUIRE(!out.empty());
  CHECK(out.find("whale") == std::string::npos);
  // The three occurrences became one lower-case name: "the <name> rose ... the <name> dived ... the <name> was".
  const size_t a = out.find("The ") + 4, end = out.find(' ', a);
  const std::string name = out.substr(a, end - a);
  CHECK(std::islower(static_cast<unsigned char>(name[0])));
  CHECK(Occurrences(out, name) == 3);
  CHECK(out == "The " + name + " rose. Then the " + name + " dived and the " + name + " was gone.");
}

TEST_CASE("renamed prose gives nothing when no word recurs, and windows end at a sentence", "[renamed_prose]") {
  CHECK(RenamedProse("A cat sat on a mat.", 1).empty());
  CHECK(RenamedProse("", 1).empty());
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "Captain Ahab walked the deck at night. ";
  RenamedProseOptions o;
  o.window_chars = 300;
  const std::string out = RenamedProse(long_text, 5, o);
  REQUIRE(!out.empty());
  CHECK(Occurrences(out, "at night.") <= 300 / 39);  // whole sentences of 39 characters within the window
  CHECK(out.back() == '.');
  CHECK(out.find("Ahab") == std::string::npos);
  CHECK(out.find("Captain") == std::string::npos);  // two words renamed by default, names first
  CHECK(out.find("walked the deck") != std::string::npos);
  // Without a sentence's end in the window, it is cut before a whole UTF-8 character.
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "caf\xc3\xa9 ";
  o.window_chars = 10;  // "café caf" and the first of é's two bytes: cut before that é
  o.min_length = 1;
  const std::string cut = RenamedProse(accents, 0, o);
  REQUIRE(!cut.empty());  // "caf" recurs
  CHECK((static_cast<unsigned char>(cut.back()) & 0xC0) != 0xC0);
  CHECK(cut.find("caf") == std::string::npos);
}

TEST_CASE("renamed prose windows come from documents in proportion to their length", "[renamed_prose]") {
  std::string long_text, short_text;
  for (int i = 0; i < 100; ++i) long_text += "The cat sat by the harbour wall. ";
  for (int i = 0; i < 10; ++i) short_text += "The dog ran to the harbour gate. ";
  const std::vector<Document> documents = {{"test", "long", long_text}, {"test", "short", short_text}};
  RenamedProseWindows windows(documents, 3);
  int from_long = 0, from_short = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string w = windows.Next();
    from_long += w.find(" cat ") != std::string::npos;
    from_short += w.find(" dog ") != std::string::npos;
  }
  CHECK(from_long + from_short == 400);
  CHECK(from_short > 400 * 0.04);  // 10 / 110 of the characters: about 36 windows
  CHECK(from_short < 400 * 0.16);
  // The same seed gives the same windows; documents without text are refused.
  RenamedProseWindows a(documents, 9), b(documents, 9);
  CHECK(a.Next() == b.Next());
  const std::vector<Document> empty = {{"test", "empty", ""}};
  CHECK_THROWS_AS(RenamedProseWindows(empty, 1), Error);
}

TEST_CASE("an echoed window ends with one of its sentences that holds a renamed word, said again", "[renamed_prose]") {
  const std::string text =
      "Captain Ahab stood on the deck. The crew watched the sea in silence. Later Ahab went below to rest. "
      "Nobody spoke of the storm again.";
  RenamedProseOptions o;
  o.window_chars = 1000;
  o.words = 1;
  o.echo = 1.0;
  int echoed = 0;
  for (uint64_t draw = 0; draw < 20; ++draw) {
    const std::string out = RenamedProse(text, draw, o);
    if (out.empty()) continue;
    INFO(out);
    const size_t blank = out.find("\n\n");
    REQUIRE(blank != std::string::npos);
    const std::string window = out.substr(0, blank), echo = out.substr(blank + 2);
    CHECK(window.find(echo) != std::string::npos);                            // a sentence of the window, whole
    CHECK(echo.find("Ahab") == std::string::npos);                            // renamed in the echo as in the window
    CHECK((echo.rfind("Captain ", 0) == 0 || echo.rfind("Later ", 0) == 0));  // one holding the renamed word
    ++echoed;
  }
  CHECK(echoed > 0);
  // Without echo the same draw gives the window alone.
  o.echo = 0.0;
  for (uint64_t draw = 0; draw < 20; ++draw) CHECK(RenamedProse(text, draw, o).find("\n\n") == std::string::npos);
}
