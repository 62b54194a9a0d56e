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
// words, the small-talk words, the offer-value words when the rules show it)
// and the identities' names.
std::vector<std::string> NegotiationVocabulary(const std::vector<std::string>& identities,
                                               const NegotiationRules& rules);

// The observation of `side`, ending with the stage's phase word:
//   you IDENTITY STATUS [have S sugar P spice need MS sugar MP spice]
//   (me|them WORDS...)... [turn K [worth gain|loss PCT]] [owe N GOOD] PHASE
// Holdings appear from the intent stage on (small talk sees the status only).
// With rules.offer_value, a partner's pending offer is followed by what
// accepting it would do to this side's welfare, in whole percent (a loss of
// 99 also stands for "could not pay").
std::vector<std::string> ObservationWords(const Encounter& e, int side, const World& world,
                                          const std::string& identity, const NegotiationRules& rules);

// The same as a prompt in English, with the identity's prompt core.
std::string ObservationText(const Encounter& e, int side, const World& world, const std::string& identity,
                            const NegotiationRules& rules);

}  // namespace troupe::sugarscape
