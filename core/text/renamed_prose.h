// Prose in which a few recurring words are replaced by invented names, for
// pretraining: a window of a corpus document (whole sentences) where every
// occurrence of up to `words` of its recurring words (names first, then the
// longest) becomes a name no corpus holds, the same name each time. A model
// can predict the second and later occurrences only by copying the first
// from its context, in ordinary prose, which is what a reader of a prompt
// does with a name it has never seen ("Her friend was called Quellin. ...
// Quellin").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/text/corpora.h"

namespace troupe {

struct RenamedProseOptions {
  size_t window_chars = 700;  // about 150 tokens of a learnt 8192-token vocabulary
  int words = 2;              // recurring words renamed per window
  int min_length = 4;         // letters in a word that may be renamed
  // Chance that a window is followed, after a blank line, by one of its
  // sentences that holds a renamed word, said again: copying a span of prose
  // (names and all) once its start has matched, the plainest lesson in reading.
  double echo = 0.0;
};

// A window of `text` starting at a sentence that `draw` picks, with its
// recurring words renamed (and, with options.echo, perhaps one of its
// sentences said again); "" when the window has no word that recurs.
std::string RenamedProse(const std::string& text, uint64_t draw, const RenamedProseOptions& options = {});

// Renamed windows of a set of documents, one after another: each from a
// document drawn in proportion to its length (so every part of a corpus is
// as likely as any other), fixed by `seed`. Pretraining's renamed_share and
// `troupe data renamed` read the same stream.
class RenamedProseWindows {
 public:
  // Error when `documents` hold no text.
  RenamedProseWindows(const std::vector<Document>& documents, uint64_t seed, RenamedProseOptions options = {});
  // The next window; Error when many windows in a row had no recurring word.
  std::string Next();

 private:
  const std::vector<Document>& documents_;
  std::vector<double> cumulative_;  // characters up to and including each document
  Rng rng_;
  RenamedProseOptions options_;
};

}  // namespace troupe
