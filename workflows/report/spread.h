// A mean with the half-width of its 95% interval (Student's t), for figures
// measured over seeds or episodes, and the mean's 95% percentile-bootstrap
// interval, for figures whose values pile up at a bound (a QA answer's F1 is
// mostly 0 or 1, where a symmetric interval would cross the bound).
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

struct Spread {
  int n = 0;
  double mean = 0.0, half_width = 0.0;  // half_width 0 below two values
};

Spread SpreadOf(const std::vector<double>& values);

struct Interval {
  double lo = 0.0, hi = 0.0;
};

// The 2.5th and 97.5th percentiles of the means of `resamples` resamples of
// `values` drawn with replacement; seeded, so the same values give the same
// interval. Both ends are the mean below two values.
Interval BootstrapInterval(const std::vector<double>& values, int resamples = 2000, uint64_t seed = 1);

// The same over values in groups (games of several training seeds): each
// resample draws the groups with replacement, then values within each drawn
// group, so the interval holds the spread between seeds as well as between
// games. One group: BootstrapInterval; empty groups are left out.
Interval GroupedBootstrapInterval(const std::vector<std::vector<double>>& groups, int resamples = 2000,
                                  uint64_t seed = 1);

}  // namespace troupe
