// Heatmaps through gnuplot (heatmap_chart.h).
#include "workflows/report/heatmap_chart.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "workflows/report/interval_chart.h"

namespace troupe {

namespace fs = std::filesystem;

bool WriteHeatmap(const std::string& base, const std::vector<std::vector<double>>& values, const HeatmapOptions& o) {
  const fs::path png = base + ".png", dat = base + ".dat", gp = base + ".gp";
  if (values.size() != o.rows.size()) throw Error("a heatmap of " + std::to_string(values.size()) + " rows has " + std::to_string(o.rows.size()) + " row labels");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::ostringstream data;
  data << std::setprecision(6);
  for (size_t r = 0; r < values.size(); ++r) {
    if (values[r].size() != o.columns.size()) throw Error("a heatmap row has " + std::to_string(values[r].size()) + " values for " + std::to_string(o.columns.size()) + " columns");
    for (size_t c = 0; c < values[r].size(); ++c) {
      if (!std::isfinite(values[r][c])) continue;
      data << c << " " << r << " " << values[r][c] << "\n";
      lo = std::min(lo, values[r][c]);
      hi = std::max(hi, values[r][c]);
    }
  }
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (lo == hi) lo -= 0.5, hi += 0.5;
  WriteFileAtomically(dat.string(), data.str());
  const size_t rows = o.rows.size(), columns = o.columns.size();
  std::ostringstream script;
  script << "# Drawn by troupe; edit and redraw with: gnuplot " << gp.filename().string() << "\n"
         << "set terminal pngcairo size " << std::max<size_t>(640, 160 + 90 * columns) << ","
         << std::max<size_t>(420, 160 + 48 * rows) << " enhanced font \"DejaVu Sans,10\"\n"
         << "set output " << GnuplotQuoted(png.filename().string(), false) << "\n"
         << "set title " << GnuplotQuoted(o.title) << "\n"
         << "set xlabel " << GnuplotQuoted(o.x_label) << "\nset ylabel " << GnuplotQuoted(o.y_label) << "\n"
         << "set xrange [-0.5:" << columns - 0.5 << "]\nset yrange [" << rows - 0.5 << ":-0.5]\n"
         << "set cbrange [" << lo << ":" << hi << "]\n"
         << "set palette defined (0 \"#b2182b\", 0.5 \"#f7f7f7\", 1 \"#2166ac\")\n"
         << "set tics scale 0\nset xtics rotate by 30 right (";
  for (size_t c = 0; c < columns; ++c) script << (c ? ", " : "") << GnuplotQuoted(o.columns[c]) << " " << c;
  script << ")\nset ytics (";
  for (size_t r = 0; r < rows; ++r) script << (r ? ", " : "") << GnuplotQuoted(o.rows[r]) << " " << r;
  script << ")\nplot " << GnuplotQuoted(dat.filename().string(), false) << " using 1:2:3 with image notitle, \\\n     "
         << GnuplotQuoted(dat.filename().string(), false) << " using 1:2:(sprintf(\"%.2f\", $3)) with labels notitle\n";
  WriteFileAtomically(gp.string(), script.str());
  if (!OnPath("gnuplot")) return false;
  RunGnuplot(gp.string(), png.string());
  return true;
}

}  // namespace troupe
