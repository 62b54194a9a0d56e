// split_facts: a communication game in which information is split between two
// agents, so they must communicate to succeed. Entities have hidden values;
// agent a knows the values of half the entities, agent b of the other half.
// Each agent is asked the values of `asks` entities that only the other agent
// knows, and sees what the other is asked. In one message turn both agents send a message (at most
// `message_words` words; hybrid channels add latent vectors), then each
// answers with `asks` value words. Reward: the fraction of correct answers.
// Without communication an agent can only guess (1 / values).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/game.h"

namespace troupe {

// One episode's facts, generated from a seed (the game's data generator).
struct SplitFactsEpisode {
  std::vector<int> value_of;            // per entity
  std::vector<std::vector<int>> known;  // per seat: the entities it knows
  std::vector<std::vector<int>> asked;  // per seat: the entities it is asked about (known to the other seat)
};

class SplitFactsGame : public Game {
 public:
  explicit SplitFactsGame(const Params& params);
  std::string Name() const override { return "split_facts"; }
  std::vector<std::string> SeatNames() const override { return {"a", "b"}; }
  std::vector<std::string> Vocabulary() const override;
  std::vector<std::string> SignalNames() const override { return {"correct", "team_correct"}; }
  std::vector<std::string> TurnSignalNames() const override { return {"correct", "team_correct"}; }
  std::vector<std::string> HeadlineMetrics(int) const override { return {"accuracy"}; }
  std::vector<std::string> MessagePhases() const override { return {"message"}; }
  bool RendersText() const override { return true; }
  std::vector<Decision> LongestDecisions(int message_words) const override;
  std::unique_ptr<State> NewInitialState(uint64_t seed) const override;
  std::unique_ptr<State> Deserialize(const std::string& text) const override;

  // The data generator: the facts of the episode with this seed.
  SplitFactsEpisode Generate(uint64_t seed) const;
  int entities() const { return entities_; }
  int values() const { return values_; }
  int asks() const { return asks_; }
  int message_words() const { return message_words_; }
  static const std::vector<std::string>& EntityNames();
  static const std::vector<std::string>& ValueNames();

 private:
  int entities_, values_, asks_, message_words_;
};

class SplitFactsState : public State {
 public:
  SplitFactsState(const SplitFactsGame& game, uint64_t seed);
  std::vector<Decision> PendingDecisions() const override;
  std::vector<bool> Apply(const std::vector<SeatOutput>& outputs) override;
  bool IsTerminal() const override { return phase_ == 2; }
  int Turn() const override { return phase_ == 2 ? 1 : 0; }
  double Signal(const std::string& name, int seat) const override;
  double TurnSignal(const std::string& name, int seat, int turn) const override;
  std::map<std::string, double> Metrics() const override;
  std::unique_ptr<State> Clone() const override { return std::make_unique<SplitFactsState>(*this); }
  std::string Serialize() const override;
  std::string ToString() const override;

  const SplitFactsEpisode& episode() const { return episode_; }
  // The message that tells the other seat exactly what it is asked: its asked values, in order.
  std::vector<std::string> OracleMessage(int seat) const;
  // The correct answer of `seat`.
  std::vector<std::string> Answer(int seat) const;
  const std::vector<std::string>& Heard(int seat) const { return messages_[1 - seat]; }

 private:
  // `refs`, when given, receives where a latent message stands in it.
  std::vector<std::string> Observation(int seat, std::vector<LatentRef>* refs = nullptr) const;
  // The same observation as text, for tokenizer models.
  std::string ObservationText(int seat) const;
  const SplitFactsGame* game_;
  uint64_t seed_;
  SplitFactsEpisode episode_;
  int phase_ = 0;  // 0 message, 1 answer, 2 over
  std::vector<std::vector<std::string>> messages_{2}, answers_{2};
  std::vector<int> latent_ = {-1, -1};  // per seat: the runtime's handle of its latent message, or -1
  std::vector<double> correct_ = {0.0, 0.0};
  int invalid_ = 0;
};

}  // namespace troupe
