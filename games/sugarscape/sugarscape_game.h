// Sugarscape as a troupe game: every parameter of the spec typed, two presets
// (g1mt: Mesa's sugarscape_g1mt; seed_study: the seed study's torus), and a
// state that runs the world by its own rules (State::Advance, one step each):
// a simulation-only workflow needs no model (`troupe run`).
//
// With trade_mode "negotiate" trade is the seed study's encounter protocol
// (encounter.h) instead of rule T: every trader is a seat (named IDENTITY_k,
// identities dealt round-robin), each tick's neighbour pairs meet, and all
// encounters of a tick are pending together, so the rollout asks each model
// once per decision step for every pair of every world.
#pragma once

#include <cstdint>
#include <memory>

#include <unordered_map>

#include "core/game.h"
#include "games/sugarscape/encounter.h"
#include "games/sugarscape/world.h"

namespace troupe::sugarscape {

std::vector<ParamSpec> SugarscapeParamSpecs();

class SugarscapeGame : public Game {
 public:
  // Throws GameError (naming the parameter) on a preset, landscape or population that cannot be.
  explicit SugarscapeGame(const Params& params);

  std::string Name() const override { return "sugarscape"; }
  // Negotiation: one seat per trader slot; rule-based trade: none.
  std::vector<std::string> SeatNames() const override;
  std::vector<std::string> Vocabulary() const override;
  // survival (the share of the episode's ticks the seat's trader lived).
  std::vector<std::string> SignalNames() const override;
  // welfare_gain (own, over the tick's encounter), pair_welfare_gain (both sides').
  std::vector<std::string> TurnSignalNames() const override;
  bool RendersText() const override { return negotiate_; }
  std::vector<std::string> HeadlineMetrics(int) const override;
  std::unique_ptr<State> NewInitialState(uint64_t seed) const override;
  std::unique_ptr<State> Deserialize(const std::string& text) const override;

  const WorldParams& world_params() const { return params_; }
  const Landscape& landscape() const { return *landscape_; }
  int steps() const { return steps_; }
  bool negotiate() const { return negotiate_; }
  const NegotiationRules& rules() const { return rules_; }
  const std::vector<std::string>& identities() const { return identities_; }
  const std::string& Identity(int seat) const { return identities_[seat % identities_.size()]; }

 private:
  WorldParams params_;
  bool negotiate_ = false;
  NegotiationRules rules_;
  std::vector<std::string> identities_;
  std::shared_ptr<const Landscape> landscape_;
  int steps_;
};

class SugarscapeState : public State {
 public:
  SugarscapeState(const SugarscapeGame& game, uint64_t seed);

  std::vector<Decision> PendingDecisions() const override;
  std::vector<bool> Apply(const std::vector<SeatOutput>& outputs) override;
  bool Advance() override;
  bool IsTerminal() const override;
  int Turn() const override { return static_cast<int>(world_.steps()); }
  double Signal(const std::string& name, int seat) const override;
  double TurnSignal(const std::string& name, int seat, int turn) const override;
  // Cumulative figures (trades, mean_price: geometric mean of every exchange's
  // price, agent_steps, deaths, mean_lifespan, survival_share), the present
  // ones (population_end, gini_end, mean_wealth, utilitarian / nash /
  // rawlsian welfare) and the last step's (step_trades, step_price).
  // Negotiation adds encounters, trade_success_rate, outcome_KIND shares,
  // welfare_gain_per_encounter, volume, fraud_rate, invalid_answers, and per
  // identity welfare_gain_ID and per identity pair success_ID_ID.
  std::map<std::string, double> Metrics() const override;
  std::unique_ptr<State> Clone() const override { return std::make_unique<SugarscapeState>(*this); }
  // "SEED STEPS" (negotiation: "SEED STEPS ADVANCES"), then (worlds up to
  // 500 x 500) a picture for renderers:
  //   picture W H / W*H sugar digits / W*H spice digits (row-major, levels
  //   capped at 9) / traders N / "x,y,sugar,spice " each (",identity" added
  //   when traders negotiate under several identities) / trades M /
  //   "x1,y1,x2,y2 " per pair that exchanged in the last step.
  // Negotiation then adds the tick's encounters (encounters K / per line
  // "x1,y1,x2,y2 OUTCOME" and "|SIDE PHASE WORDS..." per thing said) and
  // every answer so far (answers N / per Apply "SEAT WORDS...|SEAT ..."),
  // from which Deserialize replays the episode.
  std::string Serialize() const override;
  std::string ToString() const override;

  const World& world() const { return world_; }
  const SugarscapeGame& game() const { return *game_; }
  // The encounter the seat's trader is in this tick, or null.
  const Encounter* EncounterOf(int seat) const;
  int SideOf(int seat) const;  // 0 or 1 in EncounterOf(seat)
  const std::vector<Encounter>& encounters() const { return encounters_; }

 private:
  void StartTrade();
  std::string Answers() const;  // the answers section of Serialize
  void FinishStep();
  void Tally(const Encounter& e);
  std::vector<std::pair<int, int>> PendingSides() const;  // (encounter, side), in PendingDecisions' order

  const SugarscapeGame* game_;
  uint64_t seed_;
  World world_;
  StepStats last_;
  int64_t trades_ = 0, agent_steps_ = 0, deaths_ = 0, aged_ = 0, lifespan_sum_ = 0, advances_ = 0;
  double log_price_sum_ = 0.0;
  // Negotiation.
  std::vector<Encounter> encounters_;  // this tick's (empty between ticks)
  std::vector<Encounter> last_encounters_;  // the last tick's, as they ended (for renderers)
  std::vector<int> encounter_of_;      // seat -> index in encounters_, -1 none
  int64_t priced_ = 0, invalid_ = 0, frauds_ = 0, volume_ = 0;
  int64_t outcomes_[kOutcomes] = {};  // encounters by outcome
  std::map<std::string, std::pair<double, int64_t>> gain_by_identity_;      // welfare gain sum, sides
  std::map<std::string, std::pair<int64_t, int64_t>> success_by_pair_;     // completed, encounters
  std::unordered_map<int64_t, std::pair<float, float>> gains_;            // turn * seats + seat -> own, pair
  std::vector<int> lived_;             // seat -> ticks its trader was alive at the tick's start
  std::vector<std::string> answers_;   // one line per Apply
};

}  // namespace troupe::sugarscape
