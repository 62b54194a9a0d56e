// In-context reading probes of a language model: whether it looks back into
// its prompt and copies what it finds there, the skill that retrieval,
// reading a teammate's message and negotiating about an offer rest on.
//   induction  random token sequences repeated once: how often the model
//              predicts the second copy's next token (teacher-forced);
//   copy       a generated name (1-4 tokens) introduced after a cue, filler
//              text, then the cue again: the name, exactly, after it;
//   needle     invented countries' facts in the Factbook's passage format
//              ("Zorvia - Government - Capital ... name: Quellin; ..."),
//              then a question about one of them: the answer, exactly.
// Names are made of syllables at random, so no corpus holds them; the items
// are fixed by a seed, so two models (or one model before and after a
// change) answer the same questions.
// Beside each score, a softer measure that moves before a greedy answer
// flips: the evidence gain, the mean log-probability per token (nats) of what
// is to be read (the second copy, the name, the answer) minus the same with the
// evidence taken away (the first copy's tokens as they came; the prompt with
// the name, or the passages' answer, replaced by another invented name).
// A model blind to its context gains 0; one that copies gains many nats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

class LanguageModel;
class Tokenizer;

struct ProbeScore {
  std::string name;
  double score = 0.0;                 // in [0, 1]
  int count = 0;                      // predictions (induction) or items (copy, needle) scored
  double evidence_gain = 0.0;         // nats per token the evidence in the prompt adds (above)
  std::vector<std::string> examples;  // a few items: prompt tail, expected, got
};

struct ProbeOptions {
  uint64_t seed = 7;
  int induction_sequences = 40;
  int induction_length = 24;  // tokens per copy
  int copy_items = 60;
  int needle_items = 60;
  int needle_countries = 3;  // countries per passage set (one asked about, the others distractors)
};

// The three probes, in the order above. ModelError when the prompts do not fit the model's max_len.
std::vector<ProbeScore> ProbeReading(const LanguageModel& model, const Tokenizer& tokenizer,
                                     const ProbeOptions& options = {});

}  // namespace troupe
