// Red-Black players who listen to their teammates (personas.cc): the seed
// study's population personas and its cooperative, persuasive teacher,
// registered as scripted strategies (conformist, cautious, self_interested,
// cooperative, persona_mix, teacher).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/game.h"
#include "games/red_black/red_black.h"
#include "games/red_black/red_black_state.h"

namespace troupe::red_black {

struct Persona {
  std::string name;
  double susceptibility;  // chance of voting with a teammates' majority that differs from its prior
  int willingness;        // how eager it is to speak (0-3)
  std::vector<std::string> reason;               // what it says after its recommendation
  std::function<Choice(const RoundView&)> prior;  // what it votes with no messages
};

const std::vector<Persona>& Personas();
// The persona persona_mix gives `seat` in the episode of `game_seed`.
const Persona& PersonaOf(uint64_t game_seed, int seat);
// What most of this round's messages from teammates other than `seat` recommended; `otherwise` on a tie or none.
Choice TeammatesMajority(const std::vector<Message>& messages, int seat, Choice otherwise);
// A persona's answer to a decision.
std::vector<std::string> PersonaAct(const Persona& persona, const State& state, const Decision& decision, Rng& rng);

}  // namespace troupe::red_black
