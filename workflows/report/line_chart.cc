// A small rasteriser: lines (thick Bresenham), rectangles and stb_easy_font's quads.
#include "workflows/report/line_chart.h"

#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "core/base/errors.h"

namespace troupe {

namespace {

struct Rgb {
  unsigned char r, g, b;
};

const Rgb kPalette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                        {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h), px_(static_cast<size_t>(w) * h * 3, 255) {}
  void Set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    unsigned char* p = &px_[(static_cast<size_t>(y) * w_ + x) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  void Fill(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = std::max(0, y0); y < std::min(h_, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(w_, x1); ++x) Set(x, y, c);
  }
  void Line(double fx0, double fy0, double fx1, double fy1, Rgb c, int thick) {
    int x0 = static_cast<int>(std::lround(fx0)), y0 = static_cast<int>(std::lround(fy0));
    const int x1 = static_cast<int>(std::lround(fx1)), y1 = static_cast<int>(std::lround(fy1));
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      Fill(x0 - thick / 2, y0 - thick / 2, x0 - thick / 2 + thick, y0 - thick / 2 + thick, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // Text at (x, y) (top left), each font pixel `scale` pixels wide.
  void Text(int x, int y, const std::string& text, Rgb c, int scale = 2) {
    std::vector<char> buffer(text.size() * 1200 + 256);  // a glyph takes up to ~17 quads of 64 bytes
    std::string copy = text;
    const int quads = stb_easy_font_print(0, 0, copy.data(), nullptr, buffer.data(), static_cast<int>(buffer.size()));
    const float* v = reinterpret_cast<const float*>(buffer.data());
    const int stride = 4;  // floats per vertex: x, y, z, colour
    for (int q = 0; q < quads; ++q) {
      const float* a = v + q * 4 * stride;
      const float qx0 = a[0], qy0 = a[1], qx1 = a[2 * stride], qy1 = a[2 * stride + 1];
      Fill(x + static_cast<int>(qx0 * scale), y + static_cast<int>(qy0 * scale), x + static_cast<int>(qx1 * scale),
           y + static_cast<int>(qy1 * scale), c);
    }
  }
  static int TextWidth(const std::string& text, int scale = 2) {
    std::string copy = text;
    return stb_easy_font_width(copy.data()) * scale;
  }
  bool Write(const std::string& path) const {
    return stbi_write_png(path.c_str(), w_, h_, 3, px_.data(), w_ * 3) != 0;
  }

 private:
  int w_, h_;
  std::vector<unsigned char> px_;
};

// Round tick values covering [lo, hi], four to ten of them.
std::vector<double> Ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 8;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string Format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

void WriteLineChartPng(const std::string& path, const std::vector<ChartSeries>& series, const ChartOptions& o) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const auto& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xlo = std::min(xlo, s.x[i]), xhi = std::max(xhi, s.x[i]);
      ylo = std::min(ylo, s.y[i]), yhi = std::max(yhi, s.y[i]);
    }
  }
  if (!(xlo <= xhi)) xlo = 0, xhi = 1, ylo = 0, yhi = 1;  // nothing to draw: empty axes
  if (xhi - xlo < 1e-12) xhi = xlo + 1;
  if (yhi - ylo < 1e-12) ylo -= 0.5, yhi += 0.5;
  const double pad = (yhi - ylo) * 0.05;
  ylo -= pad, yhi += pad;

  Canvas c(o.width, o.height);
  const Rgb ink{40, 40, 40}, grid{225, 225, 225};
  const int left = 80, right = o.width - 40, top = 44, bottom = o.height - 50;
  auto px = [&](double x) { return left + (x - xlo) / (xhi - xlo) * (right - left); };
  auto py = [&](double y) { return bottom - (y - ylo) / (yhi - ylo) * (bottom - top); };
  for (double t : Ticks(ylo, yhi)) {
    c.Line(left, py(t), right, py(t), grid, 1);
    const std::string label = Format(t);
    c.Text(left - 8 - Canvas::TextWidth(label), static_cast<int>(py(t)) - 6, label, ink);
  }
  for (double t : Ticks(xlo, xhi)) {
    c.Line(px(t), top, px(t), bottom, grid, 1);
    const std::string label = Format(t);
    c.Text(static_cast<int>(px(t)) - Canvas::TextWidth(label) / 2, bottom + 8, label, ink);
  }
  c.Line(left, bottom, right, bottom, ink, 1);
  c.Line(left, top, left, bottom, ink, 1);
  c.Text((o.width - Canvas::TextWidth(o.title, 3)) / 2, 10, o.title, ink, 3);
  c.Text((o.width - Canvas::TextWidth(o.x_label)) / 2, o.height - 22, o.x_label, ink);
  for (size_t k = 0; k < series.size(); ++k) {
    const Rgb color = kPalette[k % (sizeof(kPalette) / sizeof(kPalette[0]))];
    const ChartSeries& s = series[k];
    bool have = false;
    double lx = 0, ly = 0;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        have = false;
        continue;
      }
      const double x = px(s.x[i]), y = py(s.y[i]);
      if (have) c.Line(lx, ly, x, y, color, 2);
      else c.Fill(static_cast<int>(x) - 1, static_cast<int>(y) - 1, static_cast<int>(x) + 2, static_cast<int>(y) + 2, color);
      lx = x, ly = y, have = true;
    }
    if (series.size() > 1 && series.size() <= 10 && !s.label.empty()) {  // a legend, when it fits
      const int ly0 = top + 6 + static_cast<int>(k) * 18;
      c.Fill(right - 150, ly0 + 4, right - 130, ly0 + 8, color);
      c.Text(right - 124, ly0, s.label, ink);
    }
  }
  const std::string tmp = path + ".tmp";
  if (!c.Write(tmp)) throw Error("cannot write the chart " + tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cannot move the chart into place at " + path + ": " + ec.message());
}

}  // namespace troupe
