// Sugarscape's world engine, rule by rule on hand-built tiny worlds, and the
// presets on the classic and the seed study's landscapes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/base/errors.h"
#include "games/sugarscape/world.h"

using namespace troupe;
using namespace troupe::sugarscape;

namespace {

// A bounded w x h landscape with every capacity `cap`.
Landscape Flat(int w, int h, int cap) {
  Landscape l;
  l.width = w;
  l.height = h;
  l.sugar.assign(static_cast<size_t>(w) * h, static_cast<int8_t>(cap));
  l.spice = l.sugar;
  return l;
}

// An empty g1mt world on a flat landscape, every cell emptied of resources.
World Empty(int w, int h, int cap = 4, Rules rules = Rules::kG1mt) {
  WorldParams p = rules == Rules::kG1mt ? G1mtPreset() : SeedStudyPreset();
  p.population = 0;
  p.torus = false;
  World world(p, Flat(w, h, cap), 1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) world.SetCell(x, y, 0, 0);
  return world;
}

}  // namespace

TEST_CASE("the classic map is built in, with spice as the sugar map mirrored left-right", "[sugarscape]") {
  const Landscape l = ClassicMap();
  REQUIRE(l.width == 50);
  REQUIRE(l.height == 50);
  CHECK(l.MaxCapacity() == 4);
  for (int y = 0; y < 50; ++y)
    for (int x = 0; x < 50; ++x) CHECK(l.spice[y * 50 + x] == l.sugar[y * 50 + 49 - x]);
  CHECK(l.sugar[0] == 0);        // first row: 0 0 0 ... 3 3 2 2
  CHECK(l.sugar[49] == 2);
  CHECK(l.sugar[36] == 3);
}

TEST_CASE("a malformed or missing landscape file is refused with its line", "[sugarscape]") {
  CHECK_THROWS_WITH(ParseMap("1 2 3\n1 2\n", "m.txt"), Catch::Contains("m.txt:2: 2 cells, but the first row has 3"));
  CHECK_THROWS_WITH(ParseMap("1 x 3\n", "m.txt"), Catch::Contains("m.txt:1: 'x' is not a capacity"));
  CHECK_THROWS_WITH(ParseMap("\n\n", "m.txt"), Catch::Contains("m.txt: no rows"));
  CHECK_THROWS_WITH(ReadMapFile("/nonexistent/map.txt"), Catch::Contains("/nonexistent/map.txt: cannot open"));
  CHECK_THROWS_WITH(MakeLandscape("hills", 50), Catch::Contains("is not classic, peaks or file:PATH"));
}

TEST_CASE("the seed study's torus has four peaks of capacity 4 fading with distance", "[sugarscape]") {
  const Landscape l = PeaksTorus(50);
  CHECK(l.sugar[15 * 50 + 15] == 4);
  CHECK(l.sugar[35 * 50 + 35] == 4);
  CHECK(l.spice[35 * 50 + 15] == 4);
  CHECK(l.spice[15 * 50 + 35] == 4);
  CHECK(l.sugar[15 * 50 + 35] < 4);  // a spice peak is not a sugar peak
  CHECK(l.sugar[15 * 50 + 23] == 3);  // distance 8
  CHECK(l.sugar[27 * 50 + 15] == 2);  // distance 12
  CHECK(l.sugar[0] == 0);             // (0,0): 21.2 from (15,15), and from (35,35) across the torus's edges
}

TEST_CASE("growback adds one per step up to each cell's capacity", "[sugarscape]") {
  World w = Empty(3, 1, 2);
  w.Step();
  CHECK(w.cell_sugar(0, 0) == 1);
  CHECK(w.cell_spice(2, 0) == 1);
  w.Step();
  w.Step();
  CHECK(w.cell_sugar(1, 0) == 2);  // capped at capacity
  CHECK(w.cell_spice(1, 0) == 2);
}

TEST_CASE("a trader moves to the cell of best welfare, and to the nearest among equals", "[sugarscape]") {
  World w = Empty(11, 11);
  const int t = w.AddTrader(5, 5, 10, 10, 1, 1, 3);
  w.SetCell(5, 7, 2, 2);  // distance 2, welfare (12*12)^(1/2) = 12
  w.SetCell(8, 5, 3, 3);  // distance 3, welfare 13: the best
  w.SetCell(3, 5, 3, 3);  // distance 2, also 13: equal and nearer
  w.Move(t);
  CHECK(w.x(t) == 3);
  CHECK(w.y(t) == 5);
  // Welfare weighs the resource the trader burns faster: sugar at 4 per step.
  World v = Empty(11, 11);
  const int u = v.AddTrader(5, 5, 10, 10, 4, 1, 2);
  v.SetCell(4, 5, 3, 0);
  v.SetCell(6, 5, 0, 4);
  v.Move(u);
  CHECK(v.x(u) == 4);
}

TEST_CASE("the g1mt neighbourhood is a Manhattan diamond clipped at the borders", "[sugarscape]") {
  // From a corner with vision 2, the reachable cells are those with x + y <= 2.
  for (int target_x = 0; target_x < 4; ++target_x) {
    for (int target_y = 0; target_y < 4; ++target_y) {
      if (target_x == 0 && target_y == 0) continue;
      World w = Empty(6, 6);
      const int t = w.AddTrader(0, 0, 10, 10, 1, 1, 2);
      w.SetCell(target_x, target_y, 4, 4);
      w.Move(t);
      const bool reachable = target_x + target_y <= 2;
      INFO(target_x << "," << target_y);
      CHECK((w.x(t) == target_x && w.y(t) == target_y) == reachable);
    }
  }
  // An occupied cell is no candidate.
  World w = Empty(5, 1);
  const int t = w.AddTrader(0, 0, 10, 10, 1, 1, 2);
  w.AddTrader(1, 0, 10, 10, 1, 1, 1);
  w.SetCell(1, 0, 4, 4);
  w.SetCell(2, 0, 1, 1);
  w.Move(t);
  CHECK(w.x(t) == 2);
}

TEST_CASE("the classic rules move along the four lattice directions only, and may stay", "[sugarscape]") {
  World w = Empty(7, 7, 4, Rules::kClassic);
  const int t = w.AddTrader(3, 3, 10, 10, 1, 1, 3);
  w.SetCell(4, 4, 4, 4);  // diagonal: not in sight
  w.Move(t);
  CHECK(w.x(t) == 3);
  CHECK(w.y(t) == 3);
  w.SetCell(3, 6, 1, 1);
  w.Move(t);
  CHECK(w.y(t) == 6);
}

TEST_CASE("a trade happens only when both welfares rise and the MRS do not cross", "[sugarscape]") {
  // a holds much spice and little sugar (high MRS): it buys sugar with spice.
  World w = Empty(2, 1);
  const int a = w.AddTrader(0, 0, 5, 40, 1, 1, 1);
  const int b = w.AddTrader(1, 0, 40, 5, 1, 1, 1);
  const double wa = w.Welfare(a), wb = w.Welfare(b);
  StepStats stats;
  const int exchanges = w.TradePair(a, b, &stats);
  CHECK(exchanges > 0);
  CHECK(stats.trades == exchanges);
  CHECK(w.Welfare(a) > wa);
  CHECK(w.Welfare(b) > wb);
  CHECK(w.Mrs(a) >= w.Mrs(b));                       // they met or stopped short, never crossed
  CHECK(w.sugar(a) + w.sugar(b) == Approx(45));      // exchanges conserve both goods
  CHECK(w.spice(a) + w.spice(b) == Approx(45));
  CHECK(stats.price_sum / stats.trades == Approx(1).margin(6));  // prices near 1 for symmetric needs
  // Equal MRS: nothing to gain.
  World v = Empty(2, 1);
  const int c = v.AddTrader(0, 0, 20, 20, 2, 2, 1), d = v.AddTrader(1, 0, 10, 10, 1, 1, 1);
  CHECK(v.TradePair(c, d) == 0);
  // g1mt exchanges are whole units: p >= 1 buys 1 sugar for floor(p) spice.
  World x = Empty(2, 1);
  const int e = x.AddTrader(0, 0, 10, 90, 1, 1, 1), f = x.AddTrader(1, 0, 90, 10, 1, 1, 1);
  x.TradePair(e, f);
  CHECK(x.sugar(e) == std::floor(x.sugar(e)));
  CHECK(x.spice(e) == std::floor(x.spice(e)));
}

TEST_CASE("a trader whose sugar or spice runs out dies, and under the classic rules also at its age", "[sugarscape]") {
  World w = Empty(3, 1);
  const int t = w.AddTrader(0, 0, 2, 10, 3, 1, 1);  // eats 3 sugar a step, finds none
  w.Step();
  CHECK(w.population() == 0);
  (void)t;
  World v = Empty(3, 1, 4, Rules::kClassic);
  v.AddTrader(0, 0, 50, 50, 1, 1, 1, /*max_age=*/2);
  v.Step();
  CHECK(v.population() == 1);
  v.Step();
  CHECK(v.population() == 0);
}

TEST_CASE("g1mt places its traders with replacement, and without it each on its own cell", "[sugarscape]") {
  WorldParams p = G1mtPreset();
  p.population = 40;
  World crowded(p, Flat(4, 4, 1), 3);  // 40 traders on 16 cells: with replacement they share
  CHECK(crowded.population() == 40);
  int most = 0;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) most = std::max(most, crowded.occupants(x, y));
  CHECK(most > 1);
  p.placement_with_replacement = false;
  CHECK_THROWS_WITH(World(p, Flat(4, 4, 1), 3), Catch::Contains("does not fit the 4 x 4 grid"));
  p.population = 16;
  World full(p, Flat(4, 4, 1), 3);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) CHECK(full.occupants(x, y) == 1);
}

TEST_CASE("endowments, metabolisms and visions are drawn from the preset's inclusive ranges", "[sugarscape]") {
  World w(G1mtPreset(), ClassicMap(), 11);
  REQUIRE(w.population() == 200);
  std::set<int> visions, metabolisms;
  for (int t : w.live()) {
    CHECK(w.sugar(t) >= 25);
    CHECK(w.sugar(t) <= 50);
    visions.insert(w.vision(t));
    metabolisms.insert(w.metabolism_sugar(t));
  }
  CHECK(visions == std::set<int>{1, 2, 3, 4, 5});
  CHECK(metabolisms == std::set<int>{1, 2, 3, 4, 5});
}

TEST_CASE("a world is a function of its seed", "[sugarscape]") {
  auto run = [](Rules rules, uint64_t seed) {
    WorldParams p = rules == Rules::kG1mt ? G1mtPreset() : SeedStudyPreset();
    World w(p, rules == Rules::kG1mt ? ClassicMap() : PeaksTorus(50), seed);
    std::vector<double> trace;
    for (int s = 0; s < 50; ++s) {
      const StepStats st = w.Step();
      trace.push_back(st.population);
      trace.push_back(static_cast<double>(st.trades));
      trace.push_back(st.price_sum);
    }
    trace.push_back(w.Gini());
    return trace;
  };
  for (Rules rules : {Rules::kG1mt, Rules::kClassic}) {
    CHECK(run(rules, 4) == run(rules, 4));
    CHECK(run(rules, 4) != run(rules, 5));
  }
}

TEST_CASE("g1mt settles: traders who cannot survive die, and trade happens", "[sugarscape]") {
  World w(G1mtPreset(), ClassicMap(), 2);
  int64_t trades = 0;
  for (int s = 0; s < 100; ++s) trades += w.Step().trades;
  CHECK(w.population() < 200);
  CHECK(w.population() > 20);
  CHECK(trades > 100);
  CHECK(w.Gini() > 0.0);
  CHECK(w.Gini() < 1.0);
}
