// Interval charts through gnuplot (interval_chart.h).
#include "workflows/report/interval_chart.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "workflows/report/line_chart.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

// Whether a series has intervals to draw (lo and hi beside every point).
bool Bars(const IntervalSeries& s) { return !s.lo.empty() && s.lo.size() == s.x.size() && s.hi.size() == s.x.size(); }

}  // namespace

std::string PlotFileName(const std::string& metric) {
  std::string file = metric;
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return file;
}

std::string GnuplotQuoted(const std::string& s, bool shown) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (shown && (c == '_' || c == '^' || c == '@' || c == '&' || c == '{' || c == '}')) q += "\\\\";
    q += c;
  }
  return q + "\"";
}

void RunGnuplot(const std::string& gp_file, const std::string& png_file) {
  const fs::path gp(gp_file), png(png_file);
  const std::string folder = gp.parent_path().empty() ? "." : gp.parent_path().string();
  fs::remove(png);
  const std::string command = "cd '" + folder + "' && gnuplot '" + gp.filename().string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buf[512];
  while (pipe && fgets(buf, sizeof buf, pipe)) output += buf;
  const int status = pipe ? pclose(pipe) : -1;
  if (status != 0 || !fs::exists(png)) throw Error("gnuplot could not draw " + png.string() + ": " + output);
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool WriteIntervalChart(const std::string& base, const std::vector<IntervalSeries>& series,
                        const IntervalChartOptions& o) {
  const fs::path png = base + ".png", dat = base + ".dat", gp = base + ".gp";
  // One block per series (gnuplot's `index`), separated by two blank lines.
  std::ostringstream data;
  for (size_t s = 0; s < series.size(); ++s) {
    const bool bars = Bars(series[s]);
    data << (s ? "\n\n" : "") << "# " << series[s].label << (bars ? "\n# x mean lo hi\n" : "\n# x y\n");
    for (size_t i = 0; i < series[s].x.size(); ++i) {
      if (!std::isfinite(series[s].x[i]) || !std::isfinite(series[s].y[i])) continue;
      data << series[s].x[i] << " " << series[s].y[i];
      if (bars) data << " " << series[s].lo[i] << " " << series[s].hi[i];
      data << "\n";
    }
  }
  WriteFileAtomically(dat.string(), data.str());
  std::ostringstream script;
  script << "# Drawn by troupe; edit and redraw with: gnuplot " << gp.filename().string() << "\n"
         << "set terminal pngcairo size 900,540 enhanced font \"DejaVu Sans,11\"\n"
         << "set output " << GnuplotQuoted(png.filename().string(), false) << "\n"
         << "set title " << GnuplotQuoted(o.title) << "\n"
         << "set xlabel " << GnuplotQuoted(o.x_label) << "\nset ylabel " << GnuplotQuoted(o.y_label) << "\n"
         << "set grid\nset key outside right top\n";
  bool any_bars = false;
  for (const IntervalSeries& s : series) any_bars = any_bars || Bars(s);
  // Room around points with interval bars; lines over steps run edge to edge.
  if (any_bars) script << "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n";
  if (!o.x_ticks.empty()) {
    script << "set xtics (";
    for (size_t i = 0; i < o.x_ticks.size(); ++i) script << (i ? ", " : "") << GnuplotQuoted(o.x_ticks[i]) << " " << i;
    script << ")\n";
  }
  script << "plot ";
  for (size_t s = 0; s < series.size(); ++s) {
    script << (s ? ", \\\n     " : "") << GnuplotQuoted(dat.filename().string(), false) << " index " << s;
    if (!Bars(series[s])) {
      script << " using 1:2 with lines lw 2 title " << GnuplotQuoted(series[s].label);
      continue;
    }
    script << " using 1:2:3:4 with " << (o.x_ticks.empty() ? "yerrorlines" : "yerrorbars")  // categories: no line between
           << " lw 2 pt 7 title " << GnuplotQuoted(series[s].label);
  }
  script << "\n";
  WriteFileAtomically(gp.string(), script.str());
  if (OnPath("gnuplot")) {
    RunGnuplot(gp.string(), png.string());
    return true;
  }
  std::vector<ChartSeries> means;
  for (const IntervalSeries& s : series) means.push_back({s.label, s.x, s.y});
  WriteLineChartPng(png.string(), means, {o.title + (any_bars ? " (install gnuplot for interval bars)" : ""), o.x_label});
  return false;
}

}  // namespace troupe
