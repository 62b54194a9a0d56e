// Sugarscape as a troupe game: every parameter of the spec typed, two presets
// (g1mt: Mesa's sugarscape_g1mt; seed_study: the seed study's torus), and a
// state that runs the world by its own rules (State::Advance, one step each):
// a simulation-only workflow needs no model (`troupe run`).
#pragma once

#include <memory>

#include "core/game.h"
#include "games/sugarscape/world.h"

namespace troupe::sugarscape {

std::vector<ParamSpec> SugarscapeParamSpecs();

class SugarscapeGame : public Game {
 public:
  // Throws GameError (naming the parameter) on a preset, landscape or population that cannot be.
  explicit SugarscapeGame(const Params& params);

  std::string Name() const override { return "sugarscape"; }
  std::vector<std::string> SeatNames() const override { return {}; }
  std::vector<std::string> Vocabulary() const override { return {}; }
  std::vector<std::string> SignalNames() const override { return {}; }
  std::vector<std::string> TurnSignalNames() const override { return {}; }
  std::vector<std::string> HeadlineMetrics(int) const override {
    return {"population_end", "trades", "mean_price", "gini_end"};
  }
  std::unique_ptr<State> NewInitialState(uint64_t seed) const override;
  std::unique_ptr<State> Deserialize(const std::string& text) const override;

  const WorldParams& world_params() const { return params_; }
  const Landscape& landscape() const { return *landscape_; }
  int steps() const { return steps_; }

 private:
  WorldParams params_;
  std::shared_ptr<const Landscape> landscape_;
  int steps_;
};

class SugarscapeState : public State {
 public:
  SugarscapeState(const SugarscapeGame& game, uint64_t seed);

  std::vector<Decision> PendingDecisions() const override { return {}; }
  std::vector<bool> Apply(const std::vector<SeatOutput>& outputs) override;
  bool Advance() override;
  bool IsTerminal() const override;
  int Turn() const override { return static_cast<int>(world_.steps()); }
  double Signal(const std::string& name, int seat) const override;
  double TurnSignal(const std::string& name, int seat, int turn) const override;
  // Cumulative figures (trades, mean_price: geometric mean of every exchange's
  // price, agent_steps, deaths), the present ones (population_end, gini_end,
  // mean_wealth) and the last step's (step_trades, step_price).
  std::map<std::string, double> Metrics() const override;
  std::unique_ptr<State> Clone() const override { return std::make_unique<SugarscapeState>(*this); }
  // "SEED STEPS", then (worlds up to 500 x 500) a picture for renderers:
  //   picture W H / W*H sugar digits / W*H spice digits (row-major, levels
  //   capped at 9) / traders N / "x,y,sugar,spice " each / trades M /
  //   "x1,y1,x2,y2 " per pair that exchanged in the last step.
  std::string Serialize() const override;
  std::string ToString() const override;

  const World& world() const { return world_; }

 private:
  const SugarscapeGame* game_;
  uint64_t seed_;
  World world_;
  StepStats last_;
  int64_t trades_ = 0, agent_steps_ = 0, deaths_ = 0;
  double log_price_sum_ = 0.0;
};

}  // namespace troupe::sugarscape
