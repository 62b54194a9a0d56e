// The Sugarscape world: placement, the tick, and each rule.
#include "games/sugarscape/world.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/base/errors.h"
#include "core/rng.h"

namespace troupe::sugarscape {

WorldParams G1mtPreset() { return WorldParams{}; }

WorldParams SeedStudyPreset() {
  WorldParams p;
  p.rules = Rules::kClassic;
  p.torus = true;
  p.population = 200;
  p.endowment_min = 5;
  p.endowment_max = 25;
  p.metabolism_min = 1;
  p.metabolism_max = 4;
  p.vision_min = 1;
  p.vision_max = 6;
  p.max_age_min = 60;
  p.max_age_max = 100;
  p.placement_with_replacement = false;
  return p;
}

// SplitMix64 from (seed, step, purpose): a step's draws do not depend on
// anything but the world's seed and the step.
struct World::Rng {
  uint64_t state;
  Rng(uint64_t seed, uint64_t step, uint64_t purpose) : state(troupe::Rng::Mix(seed, step, purpose)) {}
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-40 for any n here).
  int Below(int n) { return static_cast<int>((static_cast<unsigned __int128>(Next()) * static_cast<uint64_t>(n)) >> 64); }
  int Between(int lo, int hi) { return lo + Below(hi - lo + 1); }  // inclusive
};

namespace {
enum Purpose : uint64_t { kSetup = 1, kMoveOrder, kMoveTies, kTradeOrder, kBirths, kPairing };

bool IsClose(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

// ln(k) for the small whole amounts g1mt holdings are, read instead of computed.
constexpr int kLogTable = 4096;
const double* LogTable() {
  static const std::vector<double> table = [] {
    std::vector<double> t(kLogTable);
    t[0] = -std::numeric_limits<double>::infinity();
    for (int k = 1; k < kLogTable; ++k) t[k] = std::log(static_cast<double>(k));
    return t;
  }();
  return table.data();
}

double Log(double v) {
  const int k = static_cast<int>(v);
  return k >= 0 && k < kLogTable && static_cast<double>(k) == v ? LogTable()[k] : std::log(v);
}
}  // namespace

World::World(const WorldParams& params, Landscape landscape, uint64_t seed)
    : params_(params), landscape_(std::move(landscape)), seed_(seed), width_(landscape_.width),
      height_(landscape_.height) {
  const auto& p = params_;
  auto range = [](const char* what, int lo, int hi, int least) {
    if (lo < least || hi < lo) {
      throw GameError(std::string(what) + ": the range " + std::to_string(lo) + ".." + std::to_string(hi) +
                      " is empty or below " + std::to_string(least));
    }
  };
  range("endowment", p.endowment_min, p.endowment_max, 1);
  range("metabolism", p.metabolism_min, p.metabolism_max, 1);
  range("vision", p.vision_min, p.vision_max, 1);
  if (p.max_age_max > 0) range("max_age", p.max_age_min, p.max_age_max, 1);
  const int cells = width_ * height_;
  if (p.torus && p.vision_max >= std::min(width_, height_)) {
    throw GameError("vision_max " + std::to_string(p.vision_max) + " must be below the torus's shorter side (" +
                    std::to_string(std::min(width_, height_)) + ")");
  }
  if (p.population < 0) throw GameError("population must not be negative");
  if (!p.placement_with_replacement && p.population > cells) {
    throw GameError("population " + std::to_string(p.population) + " does not fit the " + std::to_string(width_) +
                    " x " + std::to_string(height_) + " grid (one trader per cell)");
  }
  cell_sugar_.assign(landscape_.sugar.begin(), landscape_.sugar.end());  // cells start full
  cell_spice_.assign(landscape_.spice.begin(), landscape_.spice.end());
  count_.assign(cells, 0);
  head_.assign(cells, -1);
  offsets_.resize(p.vision_max + 1);
  for (int r = 0; r <= p.vision_max; ++r) {
    for (int dy = -r; dy <= r; ++dy) {
      for (int dx = -r; dx <= r; ++dx) {
        if (dx == 0 && dy == 0) continue;
        const bool in = p.rules == Rules::kG1mt ? std::abs(dx) + std::abs(dy) <= r : (dx == 0 || dy == 0);
        if (in) offsets_[r].push_back({dx, dy, std::sqrt(double(dx * dx + dy * dy))});
      }
    }
    std::stable_sort(offsets_[r].begin(), offsets_[r].end(),
                     [](const Step_& a, const Step_& b) { return a.distance < b.distance; });
  }
  const size_t reserve = static_cast<size_t>(p.population) * (p.replacement ? 2 : 1) + 16;
  for (auto* v : {&cell_, &next_, &prev_, &ms_, &mp_, &vision_, &age_, &max_age_, &live_pos_}) v->reserve(reserve);
  for (auto* v : {&sugar_, &spice_, &exponent_sugar_}) v->reserve(reserve);
  live_.reserve(reserve);
  order_.reserve(reserve);
  candidates_.reserve(offsets_.back().size() + 1);
  candidate_distance_.reserve(offsets_.back().size() + 1);
  const int levels = landscape_.MaxCapacity() + 1;
  log_sugar_.resize(levels);
  log_spice_.resize(levels);

  Rng rng(seed_, 0, kSetup);
  std::vector<int> empty;  // placement without replacement: a shuffled list of cells
  if (!p.placement_with_replacement) {
    empty.resize(cells);
    for (int c = 0; c < cells; ++c) empty[c] = c;
  }
  for (int i = 0; i < p.population; ++i) {
    int cell;
    if (p.placement_with_replacement) {
      cell = rng.Below(cells);
    } else {
      const int k = i + rng.Below(cells - i);
      std::swap(empty[i], empty[k]);
      cell = empty[i];
    }
    Place(NewTrader(rng), cell);
  }
}

int World::NewTrader(Rng& rng) {
  const auto& p = params_;
  int t;
  if (!free_.empty()) {
    t = free_.back();
    free_.pop_back();
  } else {
    t = static_cast<int>(cell_.size());
    for (auto* v : {&cell_, &next_, &prev_, &ms_, &mp_, &vision_, &age_, &max_age_, &live_pos_}) v->push_back(0);
    for (auto* v : {&sugar_, &spice_, &exponent_sugar_}) v->push_back(0.0);
    alive_.push_back(0);
  }
  sugar_[t] = rng.Between(p.endowment_min, p.endowment_max);
  spice_[t] = rng.Between(p.endowment_min, p.endowment_max);
  ms_[t] = rng.Between(p.metabolism_min, p.metabolism_max);
  mp_[t] = rng.Between(p.metabolism_min, p.metabolism_max);
  vision_[t] = rng.Between(p.vision_min, p.vision_max);
  max_age_[t] = p.max_age_max > 0 ? rng.Between(p.max_age_min, p.max_age_max) : 0;
  age_[t] = 0;
  exponent_sugar_[t] = static_cast<double>(ms_[t]) / (ms_[t] + mp_[t]);
  alive_[t] = 1;
  live_pos_[t] = static_cast<int>(live_.size());
  live_.push_back(t);
  cell_[t] = -1;
  return t;
}

void World::Place(int t, int cell) {
  cell_[t] = cell;
  prev_[t] = -1;
  next_[t] = head_[cell];
  if (head_[cell] >= 0) prev_[head_[cell]] = t;
  head_[cell] = t;
  ++count_[cell];
}

void World::Unplace(int t) {
  const int cell = cell_[t];
  if (prev_[t] >= 0) next_[prev_[t]] = next_[t];
  else head_[cell] = next_[t];
  if (next_[t] >= 0) prev_[next_[t]] = prev_[t];
  --count_[cell];
  cell_[t] = -1;
}

void World::Kill(int t) {
  Unplace(t);
  lifespan_sum_ += age_[t];
  alive_[t] = 0;
  const int pos = live_pos_[t], last = live_.back();
  live_[pos] = last;
  live_pos_[last] = pos;
  live_.pop_back();
  free_.push_back(t);
}

double World::Welfare(int t, double sugar, double spice) const {
  const double a = exponent_sugar_[t];
  return std::pow(sugar, a) * std::pow(spice, 1.0 - a);
}

double World::Mrs(int t, double sugar, double spice) const { return (spice / mp_[t]) / (sugar / ms_[t]); }

void World::Shuffle(std::vector<int>* order, Rng& rng) const {
  for (int i = static_cast<int>(order->size()) - 1; i > 0; --i) std::swap((*order)[i], (*order)[rng.Below(i + 1)]);
}

// Rule M. Welfare after harvesting a cell, compared as logarithms: each
// level of the cell's resources costs a logarithm once per mover, not per cell.
void World::Move(int t) {
  const double a = exponent_sugar_[t];
  const double s = sugar_[t], p = spice_[t];
  for (size_t c = 0; c < log_sugar_.size(); ++c) {
    log_sugar_[c] = a * Log(s + static_cast<double>(c));
    log_spice_[c] = (1.0 - a) * Log(p + static_cast<double>(c));
  }
  const int here = cell_[t];
  double best = -std::numeric_limits<double>::infinity();
  candidates_.clear();
  candidate_distance_.clear();
  auto consider = [&](int cell, double distance) {
    const double w = log_sugar_[cell_sugar_[cell]] + log_spice_[cell_spice_[cell]];
    if (w < best - 1e-9) return;  // welfares within a relative 1e-9 are equal (Mesa's isclose)
    if (w > best + 1e-9) {
      best = w;
      candidates_.clear();
      candidate_distance_.clear();
    } else if (w > best) {
      best = w;  // the best so far, still close to the earlier ones
    }
    candidates_.push_back(cell);
    candidate_distance_.push_back(distance);
  };
  if (params_.rules == Rules::kClassic) consider(here, 0.0);  // staying is a move
  const int hx = here % width_, hy = here / width_;
  for (const Step_& o : offsets_[vision_[t]]) {
    const int cell = Offset(hx, hy, o.dx, o.dy);
    if (cell >= 0 && count_[cell] == 0) consider(cell, o.distance);
  }
  if (candidates_.empty()) return;  // nowhere empty to go: stay
  // The candidates kept as best may include some a later, slightly better cell left behind the tolerance.
  double nearest = std::numeric_limits<double>::infinity();
  size_t kept = 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const int cell = candidates_[i];
    if (log_sugar_[cell_sugar_[cell]] + log_spice_[cell_spice_[cell]] < best - 1e-9) continue;
    candidates_[kept] = cell;
    candidate_distance_[kept++] = candidate_distance_[i];
    nearest = std::min(nearest, candidate_distance_[i]);
  }
  size_t finals = 0;
  for (size_t i = 0; i < kept; ++i) {
    if (IsClose(candidate_distance_[i], nearest, 1e-2)) candidates_[finals++] = candidates_[i];
  }
  Rng rng(seed_, static_cast<uint64_t>(step_), kMoveTies ^ (static_cast<uint64_t>(t) << 8));
  const int to = finals == 1 ? candidates_[0] : candidates_[rng.Below(static_cast<int>(finals))];
  if (to == here) return;
  Unplace(t);
  Place(t, to);
}

void World::Eat(int t) {
  const int cell = cell_[t];
  sugar_[t] += cell_sugar_[cell];
  spice_[t] += cell_spice_[cell];
  cell_sugar_[cell] = 0;
  cell_spice_[cell] = 0;
  if (params_.rules == Rules::kG1mt) {
    sugar_[t] -= ms_[t];
    spice_[t] -= mp_[t];
  }
}

// Rule T between t and u, repeated until an exchange is refused.
int World::TradePair(int t, int u, StepStats* stats) {
  if (t == u || !alive_[t] || !alive_[u]) return 0;
  double h[4] = {sugar_[t], spice_[t], sugar_[u], spice_[u]};
  const int done = Exchanges(t, u, h, params_.rules == Rules::kG1mt, stats);
  sugar_[t] = h[0], spice_[t] = h[1], sugar_[u] = h[2], spice_[u] = h[3];
  return done;
}

int World::Exchanges(int t, int u, double* h, bool whole, StepStats* stats) const {
  int done = 0;
  for (;;) {
    const double mrs_t = Mrs(t, h[0], h[1]), mrs_u = Mrs(u, h[2], h[3]);
    if (IsClose(mrs_t, mrs_u, 1e-9)) return done;
    const double price = std::sqrt(mrs_t * mrs_u);
    // The higher MRS values sugar more: it buys sugar with spice.
    const bool t_buys = mrs_t > mrs_u;
    const int buyer = t_buys ? t : u, seller = t_buys ? u : t;
    double* b = t_buys ? h : h + 2;  // the buyer's sugar and spice
    double* s = t_buys ? h + 2 : h;
    double dsugar, dspice;
    if (whole) {
      if (price >= 1) dsugar = 1, dspice = std::floor(price);
      else dsugar = std::floor(1 / price), dspice = 1;
    } else {
      if (price > 1) dsugar = 1, dspice = price;
      else dsugar = 1 / price, dspice = 1;
    }
    const double bs = b[0] + dsugar, bp = b[1] - dspice;
    const double ss = s[0] - dsugar, sp = s[1] + dspice;
    if (bs <= 0 || bp <= 0 || ss <= 0 || sp <= 0) return done;
    if (!(Mrs(buyer, bs, bp) > Mrs(seller, ss, sp))) return done;  // the cheap test first
    // Both welfares rise: W' > W as logarithms, a ln(s'/s) + (1 - a) ln(p'/p) > 0.
    auto rises = [&](int who, const double* was, double s2, double p2) {
      const double a = exponent_sugar_[who];
      return a * (Log(s2) - Log(was[0])) + (1.0 - a) * (Log(p2) - Log(was[1])) > 0;
    };
    if (!rises(buyer, b, bs, bp) || !rises(seller, s, ss, sp)) return done;
    b[0] = bs, b[1] = bp, s[0] = ss, s[1] = sp;
    ++done;
    if (stats) {
      ++stats->trades;
      stats->price_sum += price;
      stats->log_price_sum += std::log(price);
    }
  }
}

void World::Trades(Rng& rng, StepStats* stats) {
  order_.assign(live_.begin(), live_.end());
  Shuffle(&order_, rng);
  // g1mt: everyone within vision (the diamond); classic: the four neighbours.
  for (int t : order_) {
    const int radius = params_.rules == Rules::kG1mt ? vision_[t] : 1;
    const int here = cell_[t], hx = here % width_, hy = here / width_;
    for (const Step_& o : offsets_[std::min(radius, params_.vision_max)]) {
      const int cell = Offset(hx, hy, o.dx, o.dy);
      if (cell < 0) continue;
      for (int u = head_[cell]; u >= 0; u = next_[u]) {
        if (TradePair(t, u, stats) > 0) trade_pairs_.emplace_back(t, u);
      }
    }
  }
}

StepStats World::Step() {
  StepStats stats = BeginStep();
  // T: trade, in a new random order.
  if (params_.trade) {
    Rng trade_rng(seed_, static_cast<uint64_t>(step_), kTradeOrder);
    Trades(trade_rng, &stats);
  }
  EndStep(&stats);
  return stats;
}

StepStats World::BeginStep() {
  StepStats stats;
  trade_pairs_.clear();
  lifespan_sum_ = 0;
  // G1: growback.
  const size_t cells = cell_sugar_.size();
  for (size_t c = 0; c < cells; ++c) {
    cell_sugar_[c] = static_cast<int8_t>(std::min<int>(cell_sugar_[c] + 1, landscape_.sugar[c]));
    cell_spice_[c] = static_cast<int8_t>(std::min<int>(cell_spice_[c] + 1, landscape_.spice[c]));
  }
  // M: traders in a fresh random order move and harvest (g1mt: and eat, and may starve).
  Rng order_rng(seed_, static_cast<uint64_t>(step_), kMoveOrder);
  order_.assign(live_.begin(), live_.end());
  Shuffle(&order_, order_rng);
  const bool g1mt = params_.rules == Rules::kG1mt;
  for (int t : order_) {
    Move(t);
    Eat(t);
    if (g1mt && (sugar_[t] <= 0 || spice_[t] <= 0)) {
      Kill(t);
      ++stats.deaths;
      ++stats.starved;
    }
  }
  return stats;
}

void World::EndStep(StepStats* out) {
  StepStats& stats = *out;
  const bool g1mt = params_.rules == Rules::kG1mt;
  // Classic: metabolism and ageing after trade, then death.
  if (!g1mt) {
    order_.assign(live_.begin(), live_.end());
    for (int t : order_) {
      sugar_[t] -= ms_[t];
      spice_[t] -= mp_[t];
      ++age_[t];
      const bool starved = sugar_[t] <= 0 || spice_[t] <= 0;
      const bool aged = max_age_[t] > 0 && age_[t] >= max_age_[t];
      if (starved || aged) {
        Kill(t);
        ++stats.deaths;
        stats.starved += starved;
        stats.aged += aged && !starved;
      }
    }
  }
  // R: replacement, each new trader on a random empty cell.
  if (params_.replacement && stats.deaths > 0) {
    Rng births(seed_, static_cast<uint64_t>(step_), kBirths);
    const int cells_n = width_ * height_;
    for (int i = 0; i < stats.deaths; ++i) {
      if (population() >= cells_n) break;
      int cell = births.Below(cells_n);
      for (int tries = 0; count_[cell] != 0 && tries < 64; ++tries) cell = births.Below(cells_n);
      for (int c = 0; count_[cell] != 0 && c < cells_n; ++c) cell = (cell + 1) % cells_n;  // a scan, rarely
      Place(NewTrader(births), cell);
      ++stats.born;
    }
  }
  ++step_;
  stats.population = population();
  stats.lifespan_sum = lifespan_sum_;
}

std::vector<std::pair<int, int>> World::PairNeighbours() {
  std::vector<std::pair<int, int>> pairs;
  Rng rng(seed_, static_cast<uint64_t>(step_), kPairing);
  order_.assign(live_.begin(), live_.end());
  Shuffle(&order_, rng);
  std::vector<uint8_t>& paired = paired_;
  paired.assign(alive_.size(), 0);
  int choices[64];
  for (int t : order_) {
    if (paired[t]) continue;
    int n = 0;
    const int here = cell_[t], hx = here % width_, hy = here / width_;
    for (const Step_& o : offsets_[1]) {  // the four neighbouring cells
      const int cell = Offset(hx, hy, o.dx, o.dy);
      if (cell < 0) continue;
      for (int u = head_[cell]; u >= 0 && n < 64; u = next_[u]) {
        if (!paired[u]) choices[n++] = u;
      }
    }
    if (n == 0) continue;
    const int u = choices[rng.Below(n)];
    paired[t] = paired[u] = 1;
    pairs.emplace_back(t, u);
  }
  return pairs;
}

void World::Exchange(int t, int u, double t_sugar, double t_spice, double u_sugar, double u_spice) {
  sugar_[t] = t_sugar, spice_[t] = t_spice, sugar_[u] = u_sugar, spice_[u] = u_spice;
  trade_pairs_.emplace_back(t, u);
}

double World::Gini() const {
  std::vector<double> w;
  w.reserve(live_.size());
  for (int t : live_) w.push_back(sugar_[t] + spice_[t]);
  if (w.empty()) return 0.0;
  std::sort(w.begin(), w.end());
  double weighted = 0.0, total = 0.0;
  for (size_t i = 0; i < w.size(); ++i) {
    weighted += static_cast<double>(i + 1) * w[i];
    total += w[i];
  }
  if (total <= 0) return 0.0;
  const double n = static_cast<double>(w.size());
  return 2.0 * weighted / (n * total) - (n + 1.0) / n;
}

void World::Clear() {
  for (int t : std::vector<int>(live_)) Kill(t);
}

void World::SetCell(int x, int y, int sugar, int spice) {
  cell_sugar_[Cell(x, y)] = static_cast<int8_t>(sugar);
  cell_spice_[Cell(x, y)] = static_cast<int8_t>(spice);
}

int World::AddTrader(int x, int y, double sugar, double spice, int metabolism_sugar, int metabolism_spice, int vision,
                     int max_age) {
  if (vision < 1 || vision > params_.vision_max) {
    throw GameError("vision " + std::to_string(vision) + " is outside 1.." + std::to_string(params_.vision_max));
  }
  Rng rng(seed_, 0, kSetup);
  const int t = NewTrader(rng);
  sugar_[t] = sugar;
  spice_[t] = spice;
  ms_[t] = metabolism_sugar;
  mp_[t] = metabolism_spice;
  vision_[t] = vision;
  max_age_[t] = max_age;
  exponent_sugar_[t] = static_cast<double>(ms_[t]) / (ms_[t] + mp_[t]);
  Place(t, Cell(x, y));
  return t;
}

}  // namespace troupe::sugarscape
