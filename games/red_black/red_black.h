// The Red-Black game: two teams play an iterated prisoner's dilemma over
// rounds with multipliers; each team deliberates (willingness-ordered speakers
// give a recommendation and a short reasoning) and then votes in parallel.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/game.h"
#include "games/red_black/scenario.h"

namespace troupe::red_black {

const char* ChoiceWord(Choice c);  // the plain game's word: "black" or "red"

// Points for (own, other) before the multiplier.
int BasePayoff(Choice own, Choice other);

std::vector<ParamSpec> RedBlackParamSpecs();

class RedBlackGame : public Game {
 public:
  explicit RedBlackGame(const Params& params);

  std::string Name() const override { return "red_black"; }
  std::vector<std::string> SeatNames() const override;
  std::vector<std::string> Vocabulary() const override;
  std::vector<std::string> SignalNames() const override;
  std::vector<std::string> TurnSignalNames() const override;
  std::vector<std::string> MessagePhases() const override { return {"speak"}; }
  bool RendersText() const override { return true; }
  std::vector<Decision> LongestDecisions(int message_words) const override;
  std::string MetricOfSignal(const std::string& signal, int seat) const override;
  std::vector<std::string> HeadlineMetrics(int seat) const override;
  std::unique_ptr<State> NewInitialState(uint64_t seed) const override;
  std::unique_ptr<State> Deserialize(const std::string& text) const override;
  std::optional<double> BestAchievable(const std::string& signal, int seat,
                                       const std::map<int, std::string>& scripted) const override;

  int team_size() const { return team_size_; }
  int rounds() const { return rounds_; }
  int Multiplier(int round) const { return multipliers_.at(round); }  // round 0-based
  Choice invalid_choice() const { return invalid_choice_; }
  int reason_words() const { return reason_words_; }
  int discussion_rounds() const { return discussion_rounds_; }
  bool silent() const { return silent_; }
  enum class Topology { kBroadcast, kRing, kPairs, kRotatingPairs };
  // Whether team seat `listener` hears team seat `speaker` (indices within the team) in `round` (0-based).
  bool Hears(int listener, int speaker, int round) const;
  // The scenarios an episode is drawn from (one: every episode plays it).
  const std::vector<Scenario>& scenarios() const { return scenarios_; }
  int TeamOf(int seat) const { return seat / team_size_; }
  // Best and worst combined score over the whole game (for efficiency).
  int BestCombined() const;

 private:
  int team_size_;
  int rounds_;
  std::vector<int> multipliers_;
  Choice invalid_choice_;
  int reason_words_;
  int discussion_rounds_;
  bool silent_;
  Topology topology_;
  std::vector<Scenario> scenarios_;
};

// What a team-level strategy sees before a round.
struct RoundView {
  int round = 0;  // 0-based
  int rounds = 0;
  int multiplier = 1;
  std::vector<Choice> own;    // own team's past choices
  std::vector<Choice> other;  // the other team's past choices
};

// A scripted Red-Black strategy: one team-level choice per round; every seat
// playing it recommends and votes that choice.
class RedBlackStrategy : public ScriptedStrategy {
 public:
  std::string GameName() const override { return "red_black"; }
  std::vector<std::string> Act(const State& state, const Decision& decision, Rng& rng) const override;
  virtual Choice Choose(const RoundView& view, Rng& rng) const = 0;
};

// Names of every scripted strategy the spec lists.
std::vector<std::string> StrategyNames();

}  // namespace troupe::red_black
