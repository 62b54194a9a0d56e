// Sugarscape engine speed, in agent-steps per second (live traders summed over
// steps, divided by wall time):
//   sugarscape_bench g1mt [ROUNDS]        200 traders, 200 steps, with and without trade, one thread
//   sugarscape_bench scale [STEPS]        1000 x 1000 (the classic map tiled 20 x 20), 250,000 traders
//   sugarscape_bench worlds N THREADS     N g1mt worlds (seeds 1..N) stepped 200 times on THREADS threads
//   sugarscape_bench grid                 cost per agent-step as population and vision grow
// bench/sugarscape_speed.sh runs them all and reports them beside Mesa's figure.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "games/sugarscape/world.h"

using namespace troupe::sugarscape;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Timed {
  double agent_steps = 0, seconds = 0;
  double rate() const { return agent_steps / seconds; }
};

Timed RunWorld(const WorldParams& p, const Landscape& l, uint64_t seed, int steps) {
  World w(p, l, seed);
  Timed t;
  const double t0 = Now();
  for (int s = 0; s < steps; ++s) t.agent_steps += w.population(), w.Step();
  t.seconds = Now() - t0;
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Landscape Tiled(const Landscape& tile, int times) {
  Landscape l;
  l.width = tile.width * times;
  l.height = tile.height * times;
  l.sugar.resize(static_cast<size_t>(l.width) * l.height);
  l.spice.resize(l.sugar.size());
  for (int y = 0; y < l.height; ++y) {
    for (int x = 0; x < l.width; ++x) {
      const size_t from = static_cast<size_t>(y % tile.height) * tile.width + x % tile.width;
      l.sugar[static_cast<size_t>(y) * l.width + x] = tile.sugar[from];
      l.spice[static_cast<size_t>(y) * l.width + x] = tile.spice[from];
    }
  }
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "g1mt";
  const Landscape classic = ClassicMap();
  if (mode == "g1mt") {
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    for (bool trade : {true, false}) {
      WorldParams p = G1mtPreset();
      p.trade = trade;
      std::vector<double> rates;
      double agent_steps = 0;
      for (int r = 0; r < rounds; ++r) {
        const Timed t = RunWorld(p, classic, static_cast<uint64_t>(r + 1), 200);
        rates.push_back(t.rate());
        agent_steps += t.agent_steps;
      }
      std::printf("{\"mode\": \"g1mt\", \"trade\": %s, \"rounds\": %d, \"agent_steps_per_round\": %.0f, "
                  "\"agent_steps_per_s\": %.4g, \"min\": %.4g, \"max\": %.4g}\n",
                  trade ? "true" : "false", rounds, agent_steps / rounds, Median(rates),
                  *std::min_element(rates.begin(), rates.end()), *std::max_element(rates.begin(), rates.end()));
    }
  } else if (mode == "scale") {
    const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
    WorldParams p = G1mtPreset();
    p.population = 250000;
    const Timed t = RunWorld(p, Tiled(classic, 20), 1, steps);
    std::printf("{\"mode\": \"scale\", \"cells\": 1000000, \"traders\": 250000, \"steps\": %d, "
                "\"seconds_per_step\": %.4g, \"agent_steps_per_s\": %.4g}\n",
                steps, t.seconds / steps, t.rate());
  } else if (mode == "worlds") {
    const int n = argc > 2 ? std::atoi(argv[2]) : 64, threads = argc > 3 ? std::atoi(argv[3]) : 2;
    std::vector<double> agent_steps(threads, 0.0);
    const double t0 = Now();
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        for (int i = k; i < n; i += threads) agent_steps[k] += RunWorld(G1mtPreset(), classic, i + 1, 200).agent_steps;
      });
    }
    for (auto& th : pool) th.join();
    const double s = Now() - t0;
    double total = 0;
    for (double a : agent_steps) total += a;
    std::printf("{\"mode\": \"worlds\", \"worlds\": %d, \"threads\": %d, \"seconds\": %.4g, \"agent_steps_per_s\": %.4g}\n",
                n, threads, s, total / s);
  } else if (mode == "grid") {
    for (int population : {100, 200, 400, 800}) {
      for (int vision : {1, 3, 5, 8}) {
        WorldParams p = G1mtPreset();
        p.population = population;
        p.vision_min = p.vision_max = vision;
        const Timed t = RunWorld(p, classic, 1, 100);
        std::printf("{\"mode\": \"grid\", \"population\": %d, \"vision\": %d, \"ns_per_agent_step\": %.4g}\n",
                    population, vision, 1e9 / t.rate());
      }
    }
  } else {
    std::fprintf(stderr, "usage: sugarscape_bench g1mt|scale|worlds|grid ...\n");
    return 2;
  }
  return 0;
}
