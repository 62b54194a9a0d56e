// Charts drawn by gnuplot: means with 95% intervals (experiment results: a
// metric against a grid axis, one line per value of another), or plain lines
// (`troupe run`'s metrics over steps: series without intervals). The data and
// the script are written beside the PNG, so a user can restyle and redraw it
// (`gnuplot NAME.gp`). Without gnuplot on the PATH the lines are drawn by the
// built-in line chart (line_chart.h), without interval bars, and the script
// is still written.
#pragma once

#include <string>
#include <vector>

namespace troupe {

struct IntervalSeries {
  std::string label;
  std::vector<double> x, y, lo, hi;  // the point, and its interval's ends (lo, hi empty: a plain line)
};

struct IntervalChartOptions {
  std::string title, x_label, y_label;
  // Categorical x: the label of each x = 0, 1, ...; empty: x is numeric.
  std::vector<std::string> x_ticks;
};

// Writes BASE.dat, BASE.gp and BASE.png. Returns true when gnuplot drew the
// PNG (with interval bars), false when the built-in chart did. Error when no
// file can be written, or gnuplot fails.
bool WriteIntervalChart(const std::string& base, const std::vector<IntervalSeries>& series,
                        const IntervalChartOptions& options);

// A metric's name as a plot's file name: characters other than letters, digits, '-' and '_' become '_'
// ("persuadability/population" -> "persuadability_population").
std::string PlotFileName(const std::string& metric);

// Whether a program of that name is on the PATH.
bool OnPath(const std::string& program);

// A string as gnuplot reads it between double quotes; `shown` text also keeps
// enhanced text's marks (_ ^ @ & { }) from acting.
std::string GnuplotQuoted(const std::string& s, bool shown = true);

// Runs gnuplot on the script `gp` in its folder (it reads its data by relative
// names), which must draw `png`. Error with gnuplot's output when it does not.
void RunGnuplot(const std::string& gp, const std::string& png);

}  // namespace troupe
