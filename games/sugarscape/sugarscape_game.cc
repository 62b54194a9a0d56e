// Sugarscape's parameters, presets and simulation state.
#include "games/sugarscape/sugarscape_game.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "core/base/errors.h"
#include "games/sugarscape/encounter_view.h"

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
      {"trade_mode", ParamType::kText, std::string("rules"),
       "rules (rule T, the `trade` flag) or negotiate (the seed study's encounters: every trader is a seat)"},
      {"identities", ParamType::kText, std::string("trader"),
       "negotiation: comma-separated identities dealt to traders in turn (seat IDENTITY_k), e.g. "
       "altruist,exploiter,survivor"},
      {"chat_rounds", ParamType::kInt, int64_t{2}, "negotiation: small-talk messages each (0: none)", 0, 8},
      {"chat_words", ParamType::kInt, int64_t{4}, "negotiation: the longest small-talk message, in words", 1, 40},
      {"negotiation_turns", ParamType::kInt, int64_t{4}, "negotiation: alternating turns before a timeout", 1, 40},
      {"fraud", ParamType::kFlag, false,
       "negotiation: each side sends what it commits after a deal (else the deal is enforced)"},
      {"max_amount", ParamType::kInt, int64_t{20}, "negotiation: the largest amount an offer may name", 1, 99},
      {"offer_value", ParamType::kFlag, false,
       "negotiation: a partner's pending offer is shown with what accepting it would do to your welfare "
       "(a calculator: \"worth gain 4\", \"... raise your welfare by 4%\")"},
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

namespace {

std::vector<std::string> Identities(const std::string& list) {
  std::vector<std::string> out;
  std::string id;
  std::istringstream in(list);
  while (std::getline(in, id, ',')) {
    if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
      throw GameError("identity '" + id + "' must be a word of lower-case letters a-z", "identities");
    }
    if (std::find(out.begin(), out.end(), id) != out.end()) throw GameError("identity '" + id + "' is listed twice", "identities");
    out.push_back(id);
  }
  if (out.empty()) throw GameError("no identity given", "identities");
  return out;
}

}  // namespace

SugarscapeGame::SugarscapeGame(const Params& p) : params_(FromParams(p)), steps_(static_cast<int>(p.Int("steps"))) {
  const std::string mode = p.Text("trade_mode");
  if (mode != "rules" && mode != "negotiate") throw GameError("trade_mode '" + mode + "' is not rules or negotiate", "trade_mode");
  negotiate_ = mode == "negotiate";
  identities_ = Identities(p.Text("identities"));
  rules_.chat_rounds = static_cast<int>(p.Int("chat_rounds"));
  rules_.chat_words = static_cast<int>(p.Int("chat_words"));
  rules_.turns = static_cast<int>(p.Int("negotiation_turns"));
  rules_.fraud = p.Flag("fraud");
  rules_.max_amount = static_cast<int>(p.Int("max_amount"));
  rules_.offer_value = p.Flag("offer_value");
  if (negotiate_ && params_.population > 100000) {
    throw GameError("population " + std::to_string(params_.population) +
                        ": negotiation makes every trader a seat; at most 100000",
                    "population");
  }
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

std::vector<std::string> SugarscapeGame::SeatNames() const {
  std::vector<std::string> seats;
  if (!negotiate_) return seats;
  for (int k = 0; k < params_.population; ++k) seats.push_back(Identity(k) + "_" + std::to_string(k));
  return seats;
}

std::vector<std::string> SugarscapeGame::Vocabulary() const {
  return negotiate_ ? NegotiationVocabulary(identities_, rules_) : std::vector<std::string>{};
}

std::vector<std::string> SugarscapeGame::SignalNames() const {
  return negotiate_ ? std::vector<std::string>{"survival"} : std::vector<std::string>{};
}

std::vector<std::string> SugarscapeGame::TurnSignalNames() const {
  return negotiate_ ? std::vector<std::string>{"welfare_gain", "pair_welfare_gain"} : std::vector<std::string>{};
}

std::vector<std::string> SugarscapeGame::HeadlineMetrics(int seat) const {
  if (!negotiate_) return {"population_end", "trades", "mean_price", "gini_end"};
  std::vector<std::string> m = {"trade_success_rate", "welfare_gain_per_encounter"};
  if (identities_.size() > 1) m.push_back("welfare_gain_" + Identity(seat));
  m.push_back("population_end");
  return m;
}

std::unique_ptr<State> SugarscapeGame::NewInitialState(uint64_t seed) const {
  return std::make_unique<SugarscapeState>(*this, seed);
}

// "SEED STEPS" (then a picture): the world is a function of its seed, so
// replaying the steps restores it. Negotiation replays the answers too.
std::unique_ptr<State> SugarscapeGame::Deserialize(const std::string& text) const {
  std::istringstream in(text);
  std::string first;
  std::getline(in, first);
  std::istringstream head(first);
  uint64_t seed = 0;
  int64_t steps = -1, advances = -1;
  if (!(head >> seed >> steps) || steps < 0) throw GameError("sugarscape: bad serialized state '" + first + "'");
  auto state = std::make_unique<SugarscapeState>(*this, seed);
  if (!(head >> advances)) {
    while (state->Turn() < steps && state->Advance()) {
    }
    return state;
  }
  std::vector<std::string> answers;
  const size_t at = text.find("\nanswers ");
  if (at != std::string::npos) {
    std::istringstream log(text.substr(at + 1));
    std::string line;
    std::getline(log, line);
    while (std::getline(log, line)) answers.push_back(line);
  }
  size_t next = 0;
  for (int64_t advanced = 0;;) {
    const std::vector<Decision> pending = state->PendingDecisions();
    if (!pending.empty()) {
      if (next == answers.size()) break;
      std::vector<SeatOutput> outputs;
      std::istringstream line(answers[next++]);
      std::string part;
      while (std::getline(line, part, '|')) {
        std::istringstream words(part);
        SeatOutput o;
        words >> o.seat;
        for (std::string w; words >> w;) o.words.push_back(w);
        outputs.push_back(std::move(o));
      }
      if (outputs.size() != pending.size()) throw GameError("sugarscape: a serialized answer line does not match the state");
      state->Apply(outputs);
    } else if (advanced < advances && state->Advance()) {
      ++advanced;
    } else {
      break;
    }
  }
  return state;
}

SugarscapeState::SugarscapeState(const SugarscapeGame& game, uint64_t seed)
    : game_(&game), seed_(seed), world_(game.world_params(), game.landscape(), seed) {
  if (game.negotiate()) {
    encounter_of_.assign(game.world_params().population, -1);
    lived_.assign(game.world_params().population, 0);
  }
}

const Encounter* SugarscapeState::EncounterOf(int seat) const {
  if (seat < 0 || seat >= static_cast<int>(encounter_of_.size()) || encounter_of_[seat] < 0) return nullptr;
  return &encounters_[encounter_of_[seat]];
}

int SugarscapeState::SideOf(int seat) const {
  const Encounter* e = EncounterOf(seat);
  return e != nullptr && e->trader(1) == seat ? 1 : 0;
}

std::vector<std::pair<int, int>> SugarscapeState::PendingSides() const {
  std::vector<std::pair<int, int>> out;
  for (size_t i = 0; i < encounters_.size(); ++i) {
    for (int side : encounters_[i].Sides()) out.emplace_back(static_cast<int>(i), side);
  }
  return out;
}

std::vector<Decision> SugarscapeState::PendingDecisions() const {
  std::vector<Decision> out;
  for (const auto& [i, side] : PendingSides()) {
    const Encounter& e = encounters_[i];
    const int seat = e.trader(side);
    const std::string& identity = game_->Identity(seat);
    Decision d;
    d.seat = seat;
    d.phase = StagePhase(e.stage());
    d.observation = ObservationWords(e, side, world_, identity, game_->rules());
    d.max_words = e.stage() == Stage::kChat ? game_->rules().chat_words : e.stage() == Stage::kNegotiate ? 6 : 1;
    d.options = e.Options(side);
    d.text = ObservationText(e, side, world_, identity, game_->rules());
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<bool> SugarscapeState::Apply(const std::vector<SeatOutput>& outputs) {
  if (!game_->negotiate()) {
    if (!outputs.empty()) throw GameError("sugarscape: no seat acts in a rule-based world");
    return {};
  }
  const std::vector<std::pair<int, int>> sides = PendingSides();
  if (outputs.size() != sides.size()) {
    throw GameError("sugarscape: " + std::to_string(outputs.size()) + " outputs for " + std::to_string(sides.size()) +
                    " pending decisions");
  }
  std::vector<bool> valid(outputs.size());
  std::string line;
  for (size_t k = 0; k < outputs.size(); ++k) {
    Encounter& e = encounters_[sides[k].first];
    if (outputs[k].seat != e.trader(sides[k].second)) throw GameError("sugarscape: outputs out of the pending order");
    valid[k] = e.Answer(sides[k].second, outputs[k].words);
    invalid_ += !valid[k];
    line += (k > 0 ? "|" : "") + std::to_string(outputs[k].seat);
    for (const auto& w : outputs[k].words) {
      std::string clean = w;  // words are split at spaces and punctuation; the log's separators never occur
      for (char& c : clean) {
        if (c == '|' || c == ' ' || c == '\n') c = '_';
      }
      line += " " + clean;
    }
  }
  answers_.push_back(std::move(line));
  // Each encounter asked this round moves on once (after all its sides answered).
  int last = -1;
  for (const auto& [i, side] : sides) {
    if (i != last) encounters_[i].Close(&world_);
    last = i;
  }
  if (std::all_of(encounters_.begin(), encounters_.end(), [](const Encounter& e) { return e.done(); })) FinishStep();
  return valid;
}

bool SugarscapeState::Advance() {
  if (IsTerminal() || !encounters_.empty()) return false;
  ++advances_;
  agent_steps_ += world_.population();
  if (!game_->negotiate()) {
    last_ = world_.Step();
    trades_ += last_.trades;
    deaths_ += last_.deaths;
    aged_ += last_.aged;
    lifespan_sum_ += last_.lifespan_sum;
    log_price_sum_ += last_.log_price_sum;
    return true;
  }
  last_ = world_.BeginStep();
  StartTrade();
  if (encounters_.empty()) FinishStep();
  return true;
}

void SugarscapeState::StartTrade() {
  for (int t : world_.live()) {
    if (t < static_cast<int>(lived_.size())) ++lived_[t];
  }
  const int seats = static_cast<int>(encounter_of_.size());
  for (const auto& [a, b] : world_.PairNeighbours()) {
    if (a >= seats || b >= seats) continue;  // a trader beyond the seats (hand-built worlds) does not negotiate
    encounter_of_[a] = encounter_of_[b] = static_cast<int>(encounters_.size());
    encounters_.emplace_back(a, b, world_, game_->rules());
  }
}

void SugarscapeState::Tally(const Encounter& e) {
  ++outcomes_[static_cast<int>(e.outcome())];
  const bool completed = e.outcome() == Outcome::kCompleted;
  const int seats = static_cast<int>(encounter_of_.size());
  const int64_t turn = world_.steps();
  const double pair_gain = e.WelfareGain(0) + e.WelfareGain(1);
  for (int side = 0; side < 2; ++side) {
    const int seat = e.trader(side);
    auto& by_id = gain_by_identity_[game_->Identity(seat)];
    by_id.first += e.WelfareGain(side);
    ++by_id.second;
    gains_[turn * seats + seat] = {static_cast<float>(e.WelfareGain(side)), static_cast<float>(pair_gain)};
  }
  std::string a = game_->Identity(e.trader(0)), b = game_->Identity(e.trader(1));
  if (b < a) std::swap(a, b);
  auto& pair = success_by_pair_[a + "_" + b];
  pair.first += completed;
  ++pair.second;
  if (!completed) return;
  ++trades_;
  volume_ += e.Volume();
  frauds_ += e.defrauded_by(0) || e.defrauded_by(1);
  if (e.Price() > 0) {
    log_price_sum_ += std::log(e.Price());
    ++priced_;
  }
}

void SugarscapeState::FinishStep() {
  for (const Encounter& e : encounters_) Tally(e);
  for (const Encounter& e : encounters_) encounter_of_[e.trader(0)] = encounter_of_[e.trader(1)] = -1;
  last_encounters_ = std::move(encounters_);
  encounters_.clear();
  world_.EndStep(&last_);
  deaths_ += last_.deaths;
  aged_ += last_.aged;
  lifespan_sum_ += last_.lifespan_sum;
}

bool SugarscapeState::IsTerminal() const {
  return encounters_.empty() && (world_.steps() >= game_->steps() || world_.population() == 0);
}

double SugarscapeState::Signal(const std::string& name, int seat) const {
  if (game_->negotiate() && name == "survival" && seat >= 0 && seat < static_cast<int>(lived_.size())) {
    return static_cast<double>(lived_[seat]) / std::max<int64_t>(1, world_.steps());
  }
  throw GameError("sugarscape: unknown signal '" + name + "'" +
                  (game_->negotiate() ? " (signals: survival)" : " (a rule-based world has none)"));
}

double SugarscapeState::TurnSignal(const std::string& name, int seat, int turn) const {
  if (game_->negotiate() && (name == "welfare_gain" || name == "pair_welfare_gain")) {
    auto it = gains_.find(static_cast<int64_t>(turn) * static_cast<int64_t>(encounter_of_.size()) + seat);
    if (it == gains_.end()) return 0.0;
    return name == "welfare_gain" ? it->second.first : it->second.second;
  }
  throw GameError("sugarscape: unknown turn signal '" + name + "'" +
                  (game_->negotiate() ? " (turn signals: welfare_gain, pair_welfare_gain)"
                                      : " (a rule-based world has none)"));
}

std::map<std::string, double> SugarscapeState::Metrics() const {
  double wealth = 0, utilitarian = 0, log_welfare = 0, rawlsian = std::numeric_limits<double>::infinity();
  for (int t : world_.live()) {
    wealth += world_.sugar(t) + world_.spice(t);
    const double w = world_.Welfare(t);
    utilitarian += w;
    log_welfare += std::log(std::max(w, 1e-12));
    rawlsian = std::min(rawlsian, w);
  }
  const int n = world_.population();
  std::map<std::string, double> m = {{"population_end", n},
                                     {"trades", static_cast<double>(trades_)},
                                     {"gini_end", world_.Gini()},
                                     {"agent_steps", static_cast<double>(agent_steps_)},
                                     {"deaths", static_cast<double>(deaths_)},
                                     {"mean_wealth", n > 0 ? wealth / n : 0.0},
                                     {"welfare_utilitarian", utilitarian},
                                     {"step_trades", static_cast<double>(last_.trades)}};
  if (n > 0) {
    m["welfare_nash"] = std::exp(log_welfare / n);  // the geometric mean: Nash's product, per trader
    m["welfare_rawlsian"] = rawlsian;
  }
  if (deaths_ > 0) {
    m["mean_lifespan"] = static_cast<double>(lifespan_sum_) / static_cast<double>(deaths_);
    m["survival_share"] = static_cast<double>(aged_) / static_cast<double>(deaths_);  // natural deaths / all
  }
  // Prices exist only where exchanges happened.
  const int64_t priced = game_->negotiate() ? priced_ : trades_;
  if (priced > 0) m["mean_price"] = std::exp(log_price_sum_ / static_cast<double>(priced));
  if (!game_->negotiate()) {
    if (last_.trades > 0) m["step_price"] = std::exp(last_.log_price_sum / static_cast<double>(last_.trades));
    return m;
  }
  int64_t encounters = 0, step_completed = 0;
  for (int64_t n : outcomes_) encounters += n;
  for (const Encounter& e : last_encounters_) step_completed += e.outcome() == Outcome::kCompleted;
  m["step_trades"] = static_cast<double>(step_completed);
  m["encounters"] = static_cast<double>(encounters);
  m["step_encounters"] = static_cast<double>(last_encounters_.size());
  m["invalid_answers"] = static_cast<double>(invalid_);
  m["volume"] = static_cast<double>(volume_);
  if (encounters == 0) return m;
  const double all = static_cast<double>(encounters);
  m["trade_success_rate"] = static_cast<double>(trades_) / all;
  for (int o = 1; o < kOutcomes; ++o) {
    m[std::string("outcome_") + OutcomeName(static_cast<Outcome>(o))] = static_cast<double>(outcomes_[o]) / all;
  }
  double gain = 0.0;
  for (const auto& [id, g] : gain_by_identity_) gain += g.first;
  m["welfare_gain_per_encounter"] = gain / (2.0 * all);
  if (game_->rules().fraud && trades_ > 0) m["fraud_rate"] = static_cast<double>(frauds_) / static_cast<double>(trades_);
  if (game_->identities().size() > 1) {
    for (const auto& [id, g] : gain_by_identity_) m["welfare_gain_" + id] = g.first / static_cast<double>(g.second);
    for (const auto& [pair, c] : success_by_pair_) {
      m["success_" + pair] = static_cast<double>(c.first) / static_cast<double>(c.second);
    }
  }
  return m;
}

std::string SugarscapeState::Serialize() const {
  std::ostringstream s;
  s << seed_ << " " << world_.steps();
  if (game_->negotiate()) s << " " << advances_;
  s << "\n";
  // The picture renderers draw (Deserialize reads only the line above): cell
  // levels as digits, traders, the last step's trades. Worlds up to 500 x 500.
  const int w = world_.width(), h = world_.height();
  if (static_cast<int64_t>(w) * h > 250000) return s.str() + Answers();
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
      << static_cast<int64_t>(world_.spice(t));
    if (game_->negotiate() && game_->identities().size() > 1) s << "," << t % game_->identities().size();
    s << " ";
  }
  s << "\ntrades " << world_.last_trades().size() << "\n";
  for (const auto& [t, u] : world_.last_trades()) {
    s << world_.x(t) << "," << world_.y(t) << "," << world_.x(u) << "," << world_.y(u) << " ";
  }
  s << "\n";
  if (!game_->negotiate()) return s.str();
  // This tick's encounters, or (between ticks) the last tick's, as they ended.
  const std::vector<Encounter>& shown = encounters_.empty() ? last_encounters_ : encounters_;
  s << "encounters " << shown.size() << "\n";
  for (const Encounter& e : shown) {
    s << world_.x(e.trader(0)) << "," << world_.y(e.trader(0)) << "," << world_.x(e.trader(1)) << ","
      << world_.y(e.trader(1)) << " " << OutcomeName(e.outcome());
    for (const Line& line : e.dialogue()) {
      s << "|" << line.side << " " << StagePhase(line.stage);
      for (const auto& word : line.words) s << " " << word;
    }
    s << "\n";
  }
  return s.str() + Answers();
}

std::string SugarscapeState::Answers() const {
  if (!game_->negotiate()) return "";
  std::string out = "answers " + std::to_string(answers_.size()) + "\n";
  for (const auto& line : answers_) out += line + "\n";
  return out;
}

std::string SugarscapeState::ToString() const {
  std::ostringstream s;
  s << "step " << world_.steps() << ", population " << world_.population() << ", trades " << trades_
    << ", gini " << world_.Gini();
  return s.str();
}

TROUPE_REGISTER_GAME("sugarscape", SugarscapeParamSpecs(), SugarscapeGame);

}  // namespace troupe::sugarscape
