// What a trader sees in an encounter: as words (for word-vocabulary models and
// scripted negotiators) and as natural-language text (for tokenizer models).
#pragma once

#include <string>
#include <vector>

#include "games/sugarscape/encounter.h"

namespace troupe::sugarscape {

// critical (< 3 ticks of survival), stable (< 15), else rich.
const char* StatusWord(double survival_ticks);

// The words a negotiation observation may use (numbers 0..99, the protocol's
// words, the small-talk words) and the identities' names.
std::vector<std::string> NegotiationVocabulary(const std::vector<std::string>& identities);

// The observation of `side`, ending with the stage's phase word:
//   you IDENTITY STATUS [have S sugar P spice need MS sugar MP spice]
//   (me|them WORDS...)... [turn K] [owe N GOOD] PHASE
// Holdings appear from the intent stage on (small talk sees the status only).
std::vector<std::string> ObservationWords(const Encounter& e, int side, const World& world,
                                          const std::string& identity);

// The same as a prompt in English, with the identity's prompt core.
std::string ObservationText(const Encounter& e, int side, const World& world, const std::string& identity,
                            const NegotiationRules& rules);

}  // namespace troupe::sugarscape
