// What a Red-Black seat sees, as natural-language text for models that read
// through a tokenizer: the rules in one sentence, the history, the present
// round and scores, this round's messages, and the question of the phase.
#include <sstream>

#include "games/red_black/red_black_state.h"

namespace troupe::red_black {

namespace {

std::string Signed(int p) { return (p > 0 ? "+" : "") + std::to_string(p); }

const char* Question(const std::string& phase) {
  if (phase == "will") return "How much do you want to speak next, from 0 to 3?";
  if (phase == "speak") return "Recommend red or black, then say why in a few words.";
  return "Vote red or black.";
}

}  // namespace

std::string RedBlackState::ObservationText(int seat, const std::string& phase) const {
  const int team = game_->TeamOf(seat);
  std::ostringstream t;
  t << "Red-Black: two teams of " << game_->team_size() << " play " << game_->rounds()
    << " rounds. Each round both teams choose red or black at once. Both black: +3 each. Both red: -3 each. "
       "Red against black: red +6, black -6. Points are times the round's multiplier. You are on team "
    << static_cast<char>('A' + team) << ".\n";
  for (size_t r = 0; r < history_.size(); ++r) {
    const RoundRecord& rec = history_[r];
    t << "Round " << r + 1 << " (x" << rec.multiplier << "): we " << ChoiceWord(rec.choice[team]) << ", they "
      << ChoiceWord(rec.choice[1 - team]) << "; we " << Signed(rec.points[team]) << ", they "
      << Signed(rec.points[1 - team]) << ".\n";
  }
  t << "Now round " << round_ + 1 << " of " << game_->rounds() << " (" << game_->rounds() - round_ - 1
    << " left after it), multiplier x" << game_->Multiplier(round_) << ". Score: us " << score_[team] << ", them "
    << score_[1 - team] << ".\n";
  if (!game_->silent() && !teams_[team].messages.empty()) {
    t << "Teammates said:";
    const char* sep = " ";
    for (const Message& m : teams_[team].messages) {
      t << sep << '"' << ChoiceWord(m.recommendation);
      for (size_t w = 0; w < m.reasoning.size(); ++w) {
        t << (w == 0 ? ", " : " ") << TextWord(m.reasoning[w]);
      }
      t << '"';
      sep = "; ";
    }
    t << ".\n";
  }
  t << Question(phase);
  return t.str();
}

}  // namespace troupe::red_black
