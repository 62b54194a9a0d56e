// A heatmap drawn by gnuplot (cross-play payoff matrices): one coloured cell
// per row and column with its value written in it. The data and the script
// are written beside the PNG, so a user can restyle and redraw it.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace troupe {

struct HeatmapOptions {
  std::string title, x_label, y_label;
  std::vector<std::string> rows, columns;  // labels, top to bottom and left to right
};

// values[r][c]; NaN: a cell left blank. Writes BASE.dat and BASE.gp, and
// BASE.png when gnuplot is on the PATH (returns whether it drew it). Error
// when a file cannot be written or gnuplot fails.
bool WriteHeatmap(const std::string& base, const std::vector<std::vector<double>>& values,
                  const HeatmapOptions& options);

}  // namespace troupe
