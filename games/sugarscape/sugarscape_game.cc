// Sugarscape's parameters, presets and simulation state.
#include "games/sugarscape/sugarscape_game.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/base/errors.h"

namespace troupe::sugarscape {

std::vector<ParamSpec> SugarscapeParamSpecs() {
  // Defaults are g1mt's; a preset sets every parameter the workflow leaves out.
  return {
      {"preset", ParamType::kText, std::string("g1mt"),
       "g1mt (Mesa's sugarscape_g1mt, rule for rule) or seed_study (the seed study's 50 x 50 torus, four peaks)"},
      {"rules", ParamType::kText, std::string("g1mt"),
       "g1mt (diamond neighbourhood, move-eat-die, trade within vision, whole units) or classic (lattice moves, "
       "trade with the 4 neighbours, metabolism after trade, real-valued exchanges); seed_study: classic"},
      {"landscape", ParamType::kText, std::string("classic"),
       "classic (the built-in map; spice mirrored), peaks (the seed study's torus of `size`) or file:PATH; "
       "seed_study: peaks"},
      {"size", ParamType::kInt, int64_t{50}, "side of the peaks landscape", 10, 10000},
      {"torus", ParamType::kFlag, false, "the grid wraps around; seed_study: true"},
      {"population", ParamType::kInt, int64_t{200}, "traders at the start", 0, 100000000},
      {"endowment_min", ParamType::kInt, int64_t{25}, "least initial sugar (and spice); seed_study: 5", 1, 1000000},
      {"endowment_max", ParamType::kInt, int64_t{50}, "most initial sugar (and spice); seed_study: 25", 1, 1000000},
      {"metabolism_min", ParamType::kInt, int64_t{1}, "least sugar (and spice) burnt per step", 1, 1000},
      {"metabolism_max", ParamType::kInt, int64_t{5}, "most sugar (and spice) burnt per step; seed_study: 4", 1, 1000},
      {"vision_min", ParamType::kInt, int64_t{1}, "least vision", 1, 50},
      {"vision_max", ParamType::kInt, int64_t{5}, "most vision; seed_study: 6", 1, 50},
      {"max_age_min", ParamType::kInt, int64_t{0}, "least lifespan (0 with max_age_max 0: no ageing); seed_study: 60",
       0, 1000000},
      {"max_age_max", ParamType::kInt, int64_t{0}, "most lifespan (0: no ageing); seed_study: 100", 0, 1000000},
      {"trade", ParamType::kFlag, true, "rule T: neighbours trade sugar for spice"},
      {"replacement", ParamType::kFlag, false, "rule R: each dead trader is replaced by a new one"},
      {"placement_with_replacement", ParamType::kFlag, true,
       "traders may start on one cell (g1mt); off: one per cell; seed_study: off"},
      {"steps", ParamType::kInt, int64_t{200}, "steps per episode (it also ends when nobody is left)", 1, 100000000},
  };
}

namespace {

WorldParams FromParams(const Params& p) {
  const std::string preset = p.Text("preset");
  WorldParams w;
  if (preset == "seed_study") w = SeedStudyPreset();
  else if (preset != "g1mt") throw GameError("preset '" + preset + "' is not g1mt or seed_study", "preset");
  // The parameters a workflow sets override the preset's.
  static const std::pair<const char*, int WorldParams::*> kInts[] = {
      {"population", &WorldParams::population},         {"endowment_min", &WorldParams::endowment_min},
      {"endowment_max", &WorldParams::endowment_max},   {"metabolism_min", &WorldParams::metabolism_min},
      {"metabolism_max", &WorldParams::metabolism_max}, {"vision_min", &WorldParams::vision_min},
      {"vision_max", &WorldParams::vision_max},         {"max_age_min", &WorldParams::max_age_min},
      {"max_age_max", &WorldParams::max_age_max}};
  static const std::pair<const char*, bool WorldParams::*> kFlags[] = {
      {"torus", &WorldParams::torus},
      {"trade", &WorldParams::trade},
      {"replacement", &WorldParams::replacement},
      {"placement_with_replacement", &WorldParams::placement_with_replacement}};
  if (p.Given("rules")) {
    const std::string r = p.Text("rules");
    if (r != "g1mt" && r != "classic") throw GameError("rules '" + r + "' is not g1mt or classic", "rules");
    w.rules = r == "g1mt" ? Rules::kG1mt : Rules::kClassic;
  }
  for (const auto& [name, field] : kInts) {
    if (p.Given(name)) w.*field = static_cast<int>(p.Int(name));
  }
  for (const auto& [name, field] : kFlags) {
    if (p.Given(name)) w.*field = p.Flag(name);
  }
  auto ordered = [](const char* lo_name, int lo, const char* hi_name, int hi) {
    if (lo > hi) {
      throw GameError(std::string(lo_name) + " " + std::to_string(lo) + " exceeds " + hi_name + " " +
                          std::to_string(hi),
                      lo_name);
    }
  };
  ordered("endowment_min", w.endowment_min, "endowment_max", w.endowment_max);
  ordered("metabolism_min", w.metabolism_min, "metabolism_max", w.metabolism_max);
  ordered("vision_min", w.vision_min, "vision_max", w.vision_max);
  ordered("max_age_min", w.max_age_min, "max_age_max", w.max_age_max);
  return w;
}

}  // namespace

SugarscapeGame::SugarscapeGame(const Params& p) : params_(FromParams(p)), steps_(static_cast<int>(p.Int("steps"))) {
  const bool seed_study = p.Text("preset") == "seed_study";
  const std::string spec = p.Given("landscape") ? p.Text("landscape") : seed_study ? "peaks" : "classic";
  try {
    landscape_ = std::make_shared<const Landscape>(MakeLandscape(spec, static_cast<int>(p.Int("size"))));
  } catch (const GameError& e) {
    throw GameError(e.what(), "landscape");
  }
  if (params_.torus && params_.vision_max >= std::min(landscape_->width, landscape_->height)) {
    throw GameError("vision_max " + std::to_string(params_.vision_max) + " must be below the torus's shorter side (" +
                        std::to_string(std::min(landscape_->width, landscape_->height)) + ")",
                    "vision_max");
  }
  const int64_t cells = static_cast<int64_t>(landscape_->width) * landscape_->height;
  if (!params_.placement_with_replacement && params_.population > cells) {
    throw GameError("population " + std::to_string(params_.population) + " does not fit the " +
                        std::to_string(landscape_->width) + " x " + std::to_string(landscape_->height) +
                        " landscape with one trader per cell",
                    "population");
  }
}

std::unique_ptr<State> SugarscapeGame::NewInitialState(uint64_t seed) const {
  return std::make_unique<SugarscapeState>(*this, seed);
}

// "SEED STEPS" (then a picture): the world is a function of its seed, so replaying the steps restores it.
std::unique_ptr<State> SugarscapeGame::Deserialize(const std::string& text) const {
  std::istringstream in(text);
  uint64_t seed = 0;
  int64_t steps = -1;
  if (!(in >> seed >> steps) || steps < 0) throw GameError("sugarscape: bad serialized state '" + text.substr(0, text.find('\n')) + "'");
  auto state = std::make_unique<SugarscapeState>(*this, seed);
  while (state->Turn() < steps && state->Advance()) {
  }
  return state;
}

SugarscapeState::SugarscapeState(const SugarscapeGame& game, uint64_t seed)
    : game_(&game), seed_(seed), world_(game.world_params(), game.landscape(), seed) {}

std::vector<bool> SugarscapeState::Apply(const std::vector<SeatOutput>& outputs) {
  if (!outputs.empty()) throw GameError("sugarscape: no seat acts in a rule-based world");
  return {};
}

bool SugarscapeState::Advance() {
  if (IsTerminal()) return false;
  agent_steps_ += world_.population();
  last_ = world_.Step();
  trades_ += last_.trades;
  deaths_ += last_.deaths;
  log_price_sum_ += last_.log_price_sum;
  return true;
}

bool SugarscapeState::IsTerminal() const { return world_.steps() >= game_->steps() || world_.population() == 0; }

double SugarscapeState::Signal(const std::string& name, int) const {
  throw GameError("sugarscape: unknown signal '" + name + "' (a rule-based world has none)");
}

double SugarscapeState::TurnSignal(const std::string& name, int seat, int) const { return Signal(name, seat); }

std::map<std::string, double> SugarscapeState::Metrics() const {
  double wealth = 0;
  for (int t : world_.live()) wealth += world_.sugar(t) + world_.spice(t);
  const int n = world_.population();
  std::map<std::string, double> m = {{"population_end", n},
                                     {"trades", static_cast<double>(trades_)},
                                     {"gini_end", world_.Gini()},
                                     {"agent_steps", static_cast<double>(agent_steps_)},
                                     {"deaths", static_cast<double>(deaths_)},
                                     {"mean_wealth", n > 0 ? wealth / n : 0.0},
                                     {"step_trades", static_cast<double>(last_.trades)}};
  // Prices exist only where exchanges happened.
  if (trades_ > 0) m["mean_price"] = std::exp(log_price_sum_ / static_cast<double>(trades_));
  if (last_.trades > 0) m["step_price"] = std::exp(last_.log_price_sum / static_cast<double>(last_.trades));
  return m;
}

std::string SugarscapeState::Serialize() const {
  std::ostringstream s;
  s << seed_ << " " << world_.steps() << "\n";
  // The picture renderers draw (Deserialize reads only the line above): cell
  // levels as digits, traders, the last step's trades. Worlds up to 500 x 500.
  const int w = world_.width(), h = world_.height();
  if (static_cast<int64_t>(w) * h > 250000) return s.str();
  s << "picture " << w << " " << h << "\n";
  for (int layer = 0; layer < 2; ++layer) {
    std::string row(static_cast<size_t>(w) * h, '0');
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int v = layer == 0 ? world_.cell_sugar(x, y) : world_.cell_spice(x, y);
        row[static_cast<size_t>(y) * w + x] = static_cast<char>('0' + std::min(v, 9));
      }
    }
    s << row << "\n";
  }
  s << "traders " << world_.population() << "\n";
  for (int t : world_.live()) {
    s << world_.x(t) << "," << world_.y(t) << "," << static_cast<int64_t>(world_.sugar(t)) << ","
      << static_cast<int64_t>(world_.spice(t)) << " ";
  }
  s << "\ntrades " << world_.last_trades().size() << "\n";
  for (const auto& [t, u] : world_.last_trades()) {
    s << world_.x(t) << "," << world_.y(t) << "," << world_.x(u) << "," << world_.y(u) << " ";
  }
  s << "\n";
  return s.str();
}

std::string SugarscapeState::ToString() const {
  std::ostringstream s;
  s << "step " << world_.steps() << ", population " << world_.population() << ", trades " << trades_
    << ", gini " << world_.Gini();
  return s.str();
}

TROUPE_REGISTER_GAME("sugarscape", SugarscapeParamSpecs(), SugarscapeGame);

}  // namespace troupe::sugarscape
