// A mean with the half-width of its 95% interval (Student's t), for figures
// measured over seeds or episodes.
#pragma once

#include <vector>

namespace troupe {

struct Spread {
  int n = 0;
  double mean = 0.0, half_width = 0.0;  // half_width 0 below two values
};

Spread SpreadOf(const std::vector<double>& values);

}  // namespace troupe
