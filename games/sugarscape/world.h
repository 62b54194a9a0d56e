// The Sugarscape world engine (Epstein & Axtell's rules G1, M, T, with
// metabolism, optional ageing and replacement), built for speed as EnvPool
// builds environments: traders as structure-of-arrays, preallocated; an
// occupancy index (per-cell lists) for "who is there"; no allocation per
// trader step; seeded counter-based randomness (each step's draws derive from
// (seed, step)), so a world's history depends on its seed only, never on how
// many worlds run at once or on which thread.
//
// Two rule sets (../shared/specs/sugarscape.md):
//   kG1mt:    Mesa's sugarscape_g1mt, rule for rule: a bounded grid, the
//             neighbourhood a Manhattan diamond of radius vision, move then eat
//             then die per trader, then every trader trades with every trader
//             within its vision, exchanges of whole units.
//   kClassic: the seed study's: a torus, moves along the four lattice
//             directions, harvest on arrival; trade with the four
//             neighbours; then metabolism, ageing and death; real-valued
//             exchanges.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "games/sugarscape/landscape.h"

namespace troupe::sugarscape {

enum class Rules { kG1mt, kClassic };

struct WorldParams {
  Rules rules = Rules::kG1mt;
  bool torus = false;
  int population = 200;
  int endowment_min = 25, endowment_max = 50;  // sugar and spice each, inclusive
  int metabolism_min = 1, metabolism_max = 5;  // sugar and spice each
  int vision_min = 1, vision_max = 5;
  int max_age_min = 0, max_age_max = 0;  // 0: no ageing
  bool trade = true;
  bool replacement = false;                 // rule R: a dead trader is replaced by a new one
  bool placement_with_replacement = true;  // traders may start on one cell (g1mt); else empty cells only
};

WorldParams G1mtPreset();
WorldParams SeedStudyPreset();

// What one step did.
struct StepStats {
  int population = 0;  // alive after the step
  int64_t trades = 0;  // executed exchanges, each with a price
  double price_sum = 0.0, log_price_sum = 0.0;
  int deaths = 0, starved = 0, aged = 0, born = 0;
  int64_t lifespan_sum = 0;  // ages at death, summed
};

class World {
 public:
  // Throws GameError when the population cannot be placed.
  World(const WorldParams& params, Landscape landscape, uint64_t seed);

  StepStats Step();
  // The tick in two parts, for trade by negotiation between them: BeginStep
  // runs growback and movement (g1mt: eating and starvation too); EndStep runs
  // metabolism, ageing and death (classic), replacement, and closes the step.
  StepStats BeginStep();
  void EndStep(StepStats* stats);
  // Pairs for negotiation (the spec): living traders in a seeded random order
  // each pick, at random, an unpaired trader on one of the four neighbouring cells.
  std::vector<std::pair<int, int>> PairNeighbours();

  int width() const { return width_; }
  int height() const { return height_; }
  int64_t steps() const { return step_; }
  int population() const { return static_cast<int>(live_.size()); }
  const WorldParams& params() const { return params_; }
  const Landscape& landscape() const { return landscape_; }

  // Traders by slot (live ones are listed by live()): read access for metrics,
  // renderers and tests.
  const std::vector<int>& live() const { return live_; }
  int x(int t) const { return cell_[t] % width_; }
  int y(int t) const { return cell_[t] / width_; }
  double sugar(int t) const { return sugar_[t]; }
  double spice(int t) const { return spice_[t]; }
  int metabolism_sugar(int t) const { return ms_[t]; }
  int metabolism_spice(int t) const { return mp_[t]; }
  int vision(int t) const { return vision_[t]; }
  int age(int t) const { return age_[t]; }
  // Ticks the trader survives on what it holds: min(sugar / ms, spice / mp).
  double SurvivalTicks(int t) const { return std::min(sugar_[t] / ms_[t], spice_[t] / mp_[t]); }
  int cell_sugar(int x, int y) const { return cell_sugar_[Cell(x, y)]; }
  int cell_spice(int x, int y) const { return cell_spice_[Cell(x, y)]; }
  int occupants(int x, int y) const { return count_[Cell(x, y)]; }

  // The pairs (t, u) that exchanged in the last step, once per pair and turn.
  const std::vector<std::pair<int, int>>& last_trades() const { return trade_pairs_; }
  // A negotiated exchange: the holdings after it (amounts already clamped), and the pair noted as trading.
  void Exchange(int t, int u, double t_sugar, double t_spice, double u_sugar, double u_spice);

  double Welfare(int t) const { return Welfare(t, sugar_[t], spice_[t]); }
  double Mrs(int t) const { return Mrs(t, sugar_[t], spice_[t]); }
  // At other holdings (what a trade would leave).
  double Welfare(int t, double sugar, double spice) const;
  double Mrs(int t, double sugar, double spice) const;
  // Gini coefficient of sugar + spice over living traders.
  double Gini() const;

  // Hand-built worlds (tests): no traders, every cell's resources as given.
  void Clear();
  void SetCell(int x, int y, int sugar, int spice);
  int AddTrader(int x, int y, double sugar, double spice, int metabolism_sugar, int metabolism_spice, int vision,
                int max_age = 0);
  // One rule on one trader (tests; Step applies them in the tick order).
  void Move(int t);
  // Exchanges between t and u until one is refused; returns how many happened.
  int TradePair(int t, int u, StepStats* stats = nullptr);
  // Rule T's exchanges between t and u on holdings h = {t's sugar, t's spice,
  // u's sugar, u's spice} (updated), until one is refused: what the rule
  // would trade, without trading (the scripted MRS negotiator's offer).
  // `whole`: exchanges of whole units (g1mt's), else real-valued (classic).
  int Exchanges(int t, int u, double* h, bool whole, StepStats* stats = nullptr) const;

 private:
  struct Rng;  // the counter-based generator (world.cc)

  int Cell(int x, int y) const { return y * width_ + x; }
  int NewTrader(Rng& rng);
  void Place(int t, int cell);
  void Unplace(int t);
  void Kill(int t);
  void Eat(int t);  // harvest the cell; g1mt also pays the metabolism here
  void Trades(Rng& rng, StepStats* stats);
  void Shuffle(std::vector<int>* order, Rng& rng) const;
  // The cell at offset (dx, dy) from (x, y), wrapped on a torus; -1 off a
  // bounded grid. No division: offsets are shorter than the grid's sides.
  int Offset(int x, int y, int dx, int dy) const {
    x += dx, y += dy;
    if (params_.torus) {
      x += x < 0 ? width_ : x >= width_ ? -width_ : 0;
      y += y < 0 ? height_ : y >= height_ ? -height_ : 0;
    } else if (x < 0 || x >= width_ || y < 0 || y >= height_) {
      return -1;
    }
    return y * width_ + x;
  }

  WorldParams params_;
  Landscape landscape_;
  uint64_t seed_;
  int width_, height_;
  int64_t step_ = 0;
  // Cells.
  std::vector<int8_t> cell_sugar_, cell_spice_;
  std::vector<uint16_t> count_;  // traders on the cell
  std::vector<int> head_;        // first trader on the cell, -1 none
  // Traders (structure of arrays, by slot; dead slots are reused).
  std::vector<int> cell_, next_, prev_;
  std::vector<double> sugar_, spice_;
  std::vector<int> ms_, mp_, vision_, age_, max_age_;
  std::vector<double> exponent_sugar_;  // ms / (ms + mp), the Cobb-Douglas weight
  std::vector<uint8_t> alive_;
  std::vector<int> free_;  // dead slots
  std::vector<int> live_;  // live slots, in no particular order
  std::vector<int> live_pos_;  // slot -> index in live_
  // Neighbourhood offsets by radius (0..vision_max): the diamond (g1mt) or the
  // four lattice directions (classic), nearest first, without (0, 0).
  struct Step_ { int dx, dy; double distance; };
  std::vector<std::vector<Step_>> offsets_;
  std::vector<int> order_;  // scratch: this step's activation order
  std::vector<std::pair<int, int>> trade_pairs_;
  std::vector<uint8_t> paired_;  // scratch: who is paired this step (PairNeighbours)
  int64_t lifespan_sum_ = 0;  // this step's deaths
  // Scratch for a move: candidate cells and their distances.
  std::vector<int> candidates_;
  std::vector<double> candidate_distance_;
  std::vector<double> log_sugar_, log_spice_;  // per cell-resource level, for the mover
};

}  // namespace troupe::sugarscape
