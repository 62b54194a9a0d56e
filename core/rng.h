// The one random number generator troupe uses for sampling, tie-breaks and
// shuffles: seeded, cheap to copy, and serialisable for exact resume.
#pragma once

#include <cstdint>
#include <random>
#include <sstream>
#include <string>

namespace troupe {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : engine_(seed) {}

  double Uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(engine_); }
  // Uniform integer in [0, n).
  int Below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(engine_); }
  uint64_t Next() { return engine_(); }

  // A seed derived from (base, a, b) that does not depend on the order of calls.
  static uint64_t Mix(uint64_t base, uint64_t a, uint64_t b = 0) {
    uint64_t x = base ^ (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
  }

  std::string Save() const {
    std::ostringstream out;
    out << engine_;
    return out.str();
  }
  void Load(const std::string& state) {
    std::istringstream in(state);
    in >> engine_;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace troupe
