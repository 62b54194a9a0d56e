// The state of one Red-Black episode: deliberation phases, votes and history.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "games/red_black/red_black.h"

namespace troupe::red_black {

struct Message {
  int seat = 0;
  Choice recommendation = Choice::kBlack;
  std::vector<std::string> reasoning;
  int latent =
      -1;  // >= 0: a latent message (SeatOutput::latent_message); teammates get a LatentRef instead of its words
};

struct RoundRecord {
  std::array<Choice, 2> choice{};
  std::array<int, 2> points{};
  int multiplier = 1;
  std::array<std::vector<Message>, 2> messages;
  std::array<std::vector<Choice>, 2> votes;
  std::array<std::vector<int>, 2> speaking_order;
};

class RedBlackState : public State {
 public:
  // The episode's scenario is drawn from the game's by `seed`, or is the game's `scenario`-th when >= 0.
  RedBlackState(const RedBlackGame& game, uint64_t seed, int scenario = -1);

  std::vector<Decision> PendingDecisions() const override;
  std::vector<bool> Apply(const std::vector<SeatOutput>& outputs) override;
  bool Inert(int seat) const override { return inert_.at(seat); }
  // A vote after a deliberation: the seat's view with none of this round's messages, and what the majority of the
  // teammates it heard (itself aside) recommended; none on a tie or when it heard nobody.
  std::optional<PersuasionProbe> Persuasion(const Decision& decision) const override;
  bool IsTerminal() const override { return phase_ == Phase::kDone; }
  int Turn() const override { return round_; }
  double Signal(const std::string& name, int seat) const override;
  double TurnSignal(const std::string& name, int seat, int turn) const override;
  std::map<std::string, double> Metrics() const override;
  std::unique_ptr<State> Clone() const override { return std::make_unique<RedBlackState>(*this); }
  std::string Serialize() const override;
  std::string ToString() const override;

  // The longest decision of each phase (RedBlackGame::LongestDecisions): the
  // last round with every earlier round played, the longest scores, and every
  // message of the round (all discussion cycles) at its longest; one set per scenario.
  static std::vector<Decision> Longest(const RedBlackGame& game, int message_words);
  static std::vector<Decision> LongestIn(const RedBlackGame& game, int scenario, int message_words);

  // Read access for scripted strategies, renderers and tests.
  const std::vector<RoundRecord>& history() const { return history_; }
  RoundView ViewFor(int team) const;
  int Score(int team) const { return score_[team]; }
  const RedBlackGame& game() const { return *game_; }
  const Scenario& scenario() const { return *scenario_; }
  // The messages `seat` has heard so far this round, in order: its teammates' that the topology lets it hear
  // (none in the silent control).
  std::vector<Message> HeardMessages(int seat) const;
  uint64_t seed() const { return seed_; }

 private:
  enum class Phase { kWill, kSpeak, kVote, kDone };
  struct Team {
    std::vector<bool> spoken;
    std::vector<int> willingness;
    int speaker = -1;  // index within the team
    std::vector<Message> messages;
    std::vector<Choice> votes;
    std::vector<int> order;
  };

  // The words `seat` sees in `phase`; latent messages it reads go to `refs`.
  std::vector<std::string> Observation(int seat, const std::string& phase, std::vector<LatentRef>* refs) const;
  // The same observation as text (red_black_text.cc), for tokenizer models.
  std::string ObservationText(int seat, const std::string& phase) const;
  std::vector<Decision> Pending(bool with_observations) const;
  void StartRound();
  void SkipTrivialWillingness();
  void ChooseSpeakers();
  void ResolveRound();
  Choice Majority(int red, int black) const;
  int RemainingSpeakers(int team) const;

  const RedBlackGame* game_;
  const Scenario* scenario_;  // one of game_->scenarios()
  uint64_t seed_;
  Rng rng_;
  Phase phase_ = Phase::kWill;
  int round_ = 0;
  int cycle_ = 0;
  std::array<Team, 2> teams_;
  std::vector<RoundRecord> history_;
  std::array<int, 2> score_{0, 0};
  std::map<std::string, int> invalid_;  // per phase
  int decisions_ = 0;
  std::vector<std::string> applied_;  // one line per Apply, for Serialize
  std::vector<bool> inert_;           // per seat, for the last Apply: a vote that was not pivotal
};

}  // namespace troupe::red_black
