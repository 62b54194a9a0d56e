// Means and 95% intervals.
#include "workflows/report/spread.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "core/rng.h"

namespace troupe {

namespace {

// Student's t at 97.5% for n - 1 degrees of freedom (the normal's 1.96 beyond 30).
double T975(int n) {
  static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                             2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  const int df = n - 1;
  return df <= 0 ? 0.0 : df <= 30 ? t[df] : 1.96;
}

// The 2.5th and 97.5th percentiles of resampled means.
Interval PercentileInterval(std::vector<double> means) {
  std::sort(means.begin(), means.end());
  auto at = [&](double q) { return means[static_cast<size_t>(std::lround(q * static_cast<double>(means.size() - 1)))]; };
  return {at(0.025), at(0.975)};
}

}  // namespace

Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  s.n = static_cast<int>(v.size());
  if (s.n == 0) return s;
  for (double x : v) s.mean += x / s.n;
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  if (s.n > 1) s.half_width = T975(s.n) * std::sqrt(var / (s.n - 1)) / std::sqrt(static_cast<double>(s.n));
  return s;
}

Interval BootstrapInterval(const std::vector<double>& v, int resamples, uint64_t seed) {
  const size_t n = v.size();
  if (n < 2 || resamples < 2) {
    const double mean = SpreadOf(v).mean;
    return {mean, mean};
  }
  Rng rng(seed);
  std::vector<double> means(static_cast<size_t>(resamples));
  for (double& m : means) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += v[rng.Next() % n];
    m = sum / static_cast<double>(n);
  }
  return PercentileInterval(std::move(means));
}

Interval GroupedBootstrapInterval(const std::vector<std::vector<double>>& groups, int resamples, uint64_t seed) {
  std::vector<const std::vector<double>*> kept;
  for (const auto& g : groups) {
    if (!g.empty()) kept.push_back(&g);
  }
  if (kept.size() == 1) return BootstrapInterval(*kept[0], resamples, seed);
  if (kept.empty() || resamples < 2) return {0.0, 0.0};
  Rng rng(seed);
  std::vector<double> means(static_cast<size_t>(resamples));
  for (double& m : means) {
    double sum = 0.0;
    size_t count = 0;
    for (size_t k = 0; k < kept.size(); ++k) {
      const std::vector<double>& g = *kept[rng.Next() % kept.size()];
      for (size_t i = 0; i < g.size(); ++i) sum += g[rng.Next() % g.size()];
      count += g.size();
    }
    m = sum / static_cast<double>(count);
  }
  return PercentileInterval(std::move(means));
}

}  // namespace troupe
