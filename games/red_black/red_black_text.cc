// What a Red-Black seat sees, as natural-language text for models that read
// through a tokenizer: the rules in one sentence, the history, the present
// round and scores, this round's messages, and the question of the phase.
#include <cctype>
#include <sstream>

#include "games/red_black/red_black_state.h"

namespace troupe::red_black {

namespace {

std::string Signed(int p) { return (p > 0 ? "+" : "") + std::to_string(p); }

std::string Capitalized(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string Question(const std::string& phase, const Scenario& s) {
  const std::vector<std::string> o = s.OrderedLabels();
  if (phase == "will") return "How much do you want to speak next, from 0 to 3?";
  if (phase == "speak") return "Recommend " + o[0] + " or " + o[1] + ", then say why in a few words.";
  return "Vote " + o[0] + " or " + o[1] + ".";
}

// The rules in the scenario's words (the plain game: "Red-Black: two teams of 5 play 10 rounds. Each round
// both teams choose red or black at once. Both black: +3 each. ...").
std::string Rules(const Scenario& s, int team_size, int rounds, int team) {
  const std::string& coop = s.Label(Choice::kBlack);
  const std::string& other = s.Label(Choice::kRed);
  auto shown = [&](const std::string& label) {
    const std::string& meaning = s.meanings[label == coop ? 0 : 1];
    return meaning.empty() ? label : label + " (" + meaning + ")";
  };
  const std::vector<std::string> o = s.OrderedLabels();
  std::ostringstream t;
  if (!s.story.empty()) t << s.story << "\n";
  t << s.title << ": two teams of " << team_size;
  if (!s.plain()) t << ", " << s.teams[0] << " and " << s.teams[1] << ",";
  t << " play " << rounds << " rounds. Each round both teams choose " << shown(o[0]) << " or " << shown(o[1])
    << " at once. Both " << coop << ": +3 each. Both " << other << ": -3 each. " << Capitalized(other) << " against "
    << coop << ": " << other << " +6, " << coop << " -6. Points" << (s.points.empty() ? "" : " (" + s.points + ")")
    << " are times the round's multiplier. You are on " << s.teams[team] << ".\n";
  return t.str();
}

}  // namespace

std::string RedBlackState::ObservationText(int seat, const std::string& phase) const {
  const int team = game_->TeamOf(seat);
  std::ostringstream t;
  t << Rules(*scenario_, game_->team_size(), game_->rounds(), team);
  for (size_t r = 0; r < history_.size(); ++r) {
    const RoundRecord& rec = history_[r];
    t << "Round " << r + 1 << " (x" << rec.multiplier << "): we " << scenario_->Label(rec.choice[team]) << ", they "
      << scenario_->Label(rec.choice[1 - team]) << "; we " << Signed(rec.points[team]) << ", they "
      << Signed(rec.points[1 - team]) << ".\n";
  }
  t << "Now round " << round_ + 1 << " of " << game_->rounds() << " (" << game_->rounds() - round_ - 1
    << " left after it), multiplier x" << game_->Multiplier(round_) << ". Score: us " << score_[team] << ", them "
    << score_[1 - team] << ".\n";
  const std::vector<Message> heard = HeardMessages(seat);
  if (!heard.empty()) {
    t << "Teammates said:";
    const char* sep = " ";
    for (const Message& m : heard) {
      t << sep << '"' << scenario_->Label(m.recommendation);
      for (size_t w = 0; w < m.reasoning.size(); ++w) {
        t << (w == 0 ? ", " : " ") << TextWord(m.reasoning[w]);
      }
      t << '"';
      sep = "; ";
    }
    t << ".\n";
  }
  t << Question(phase, *scenario_);
  return t.str();
}

}  // namespace troupe::red_black
