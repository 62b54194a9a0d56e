// Line charts as PNG files, for the figures a run leaves behind (population,
// prices... over steps): axes with ticks, one coloured line per series, a
// legend and a title. Torch- and GPU-free: text from stb_easy_font, the file
// from stb_image_write, written whole or not at all.
#pragma once

#include <string>
#include <vector>

namespace troupe {

struct ChartSeries {
  std::string label;
  std::vector<double> x, y;  // same length; non-finite points are skipped
};

struct ChartOptions {
  std::string title, x_label;
  int width = 800, height = 450;
};

// Throws Error when the file cannot be written.
void WriteLineChartPng(const std::string& path, const std::vector<ChartSeries>& series, const ChartOptions& options);

}  // namespace troupe
