// Line plots with per-column reduction and hover values.
#include "viewer/plot.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <map>

namespace troupe::view {

ImU32 PaletteColor(int index, float alpha) {
  static const ImVec4 colors[] = {{0.30f, 0.62f, 0.98f, 1}, {0.98f, 0.55f, 0.20f, 1}, {0.35f, 0.80f, 0.40f, 1},
                                  {0.85f, 0.35f, 0.85f, 1}, {0.95f, 0.85f, 0.30f, 1}, {0.30f, 0.85f, 0.85f, 1},
                                  {0.95f, 0.40f, 0.45f, 1}, {0.65f, 0.55f, 0.95f, 1}};
  ImVec4 c = colors[((index % 8) + 8) % 8];
  c.w = alpha;
  return ImGui::ColorConvertFloat4ToU32(c);
}

namespace {

// A plot's lines reduced to pixel columns, in units of the data; recomputed only
// when the data, the cursor or the width changes (a live run adds one point per
// iteration; a replayed one changes nothing between frames).
struct Reduced {
  size_t points = 0;
  float x_limit = 0;
  int columns = 0;
  float xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  bool empty = true;
  struct Line {
    std::vector<float> lo, hi, first, last;  // per column; lo == FLT_MAX where empty
  };
  std::vector<Line> lines;
};

void Reduce(const std::vector<PlotLine>& lines, float x_limit, int columns, Reduced* r) {
  r->xmin = FLT_MAX, r->xmax = -FLT_MAX, r->ymin = FLT_MAX, r->ymax = -FLT_MAX;
  for (const auto& l : lines) {
    const Series& s = *l.series;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (s.x[i] > x_limit || !std::isfinite(s.y[i])) continue;
      r->xmin = std::min(r->xmin, s.x[i]);
      r->xmax = std::max(r->xmax, s.x[i]);
      r->ymin = std::min(r->ymin, s.y[i]);
      r->ymax = std::max(r->ymax, s.y[i]);
    }
  }
  r->empty = r->xmin > r->xmax;
  r->lines.assign(lines.size(), {});
  if (r->empty) return;
  if (r->ymax - r->ymin < 1e-9f) {
    r->ymax += 0.5f;
    r->ymin -= 0.5f;
  }
  if (r->xmax - r->xmin < 1e-9f) r->xmax = r->xmin + 1;
  for (size_t k = 0; k < lines.size(); ++k) {
    const Series& s = *lines[k].series;
    Reduced::Line& out = r->lines[k];
    out.lo.assign(columns + 1, FLT_MAX);
    out.hi.assign(columns + 1, -FLT_MAX);
    out.first.assign(columns + 1, 0);
    out.last.assign(columns + 1, 0);
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (s.x[i] > x_limit || !std::isfinite(s.y[i])) continue;
      const int c = std::clamp(static_cast<int>((s.x[i] - r->xmin) / (r->xmax - r->xmin) * columns), 0, columns);
      if (out.lo[c] == FLT_MAX) out.first[c] = s.y[i];
      out.lo[c] = std::min(out.lo[c], s.y[i]);
      out.hi[c] = std::max(out.hi[c], s.y[i]);
      out.last[c] = s.y[i];
    }
  }
}

}  // namespace

void Plot(const char* title, const std::vector<PlotLine>& lines, ImVec2 size, float x_limit) {
  ImGui::PushID(title);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::InvisibleButton("plot", size);
  const bool hovered = ImGui::IsItemHovered();
  const ImVec2 p1(p0.x + size.x, p0.y + size.y);
  dl->AddRect(p0, p1, IM_COL32(60, 63, 72, 255), 3.0f);  // an outline: filling costs a software renderer
  dl->AddText(ImVec2(p0.x + 6, p0.y + 3), IM_COL32(210, 210, 215, 255), title);
  const float left = p0.x + 44, right = p1.x - 6, top = p0.y + 20, bottom = p1.y - 14;
  const float width = std::max(1.0f, right - left);
  // One column per two pixels; integer-width lines take ImGui's cheap textured path.
  const int columns = std::max(1, static_cast<int>(width / 2));
  static std::map<ImGuiID, Reduced> cache;
  Reduced& r = cache[ImGui::GetID("reduced")];
  size_t points = lines.size();
  for (const auto& l : lines) points += l.series->x.size();
  if (r.points != points || r.x_limit != x_limit || r.columns != columns || r.lines.size() != lines.size()) {
    Reduce(lines, x_limit, columns, &r);
    r.points = points;
    r.x_limit = x_limit;
    r.columns = columns;
  }
  if (r.empty) {
    dl->AddText(ImVec2(p0.x + 6, p0.y + size.y / 2 - 7), IM_COL32(140, 140, 150, 255), "no data yet");
    ImGui::PopID();
    return;
  }
  const float xmin = r.xmin, xmax = r.xmax, ymin = r.ymin, ymax = r.ymax;
  auto Y = [&](float y) { return bottom - (y - ymin) / (ymax - ymin) * (bottom - top); };
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", ymax);
  dl->AddText(ImVec2(p0.x + 4, top - 6), IM_COL32(150, 150, 160, 255), buf);
  std::snprintf(buf, sizeof buf, "%.3g", ymin);
  dl->AddText(ImVec2(p0.x + 4, bottom - 8), IM_COL32(150, 150, 160, 255), buf);
  std::snprintf(buf, sizeof buf, "%.0f", xmax);
  dl->AddText(ImVec2(right - ImGui::CalcTextSize(buf).x, bottom), IM_COL32(150, 150, 160, 255), buf);
  dl->AddLine(ImVec2(left, bottom), ImVec2(right, bottom), IM_COL32(70, 70, 80, 255));
  std::vector<ImVec2> path;
  for (size_t k = 0; k < lines.size(); ++k) {
    const Reduced::Line& c = r.lines[k];
    const ImU32 color = lines[k].color;
    path.clear();
    for (int i = 0; i <= columns; ++i) {
      if (c.lo[i] == FLT_MAX) continue;
      const float x = left + 2.0f * i;
      path.emplace_back(x, Y(c.first[i]));
      if (Y(c.lo[i]) - Y(c.hi[i]) > 1.0f) {  // the column's range, where it spans more than a pixel
        dl->AddLine(ImVec2(x, Y(c.lo[i])), ImVec2(x, Y(c.hi[i])), color, 1.0f);
      }
      if (c.last[i] != c.first[i]) path.emplace_back(x, Y(c.last[i]));
    }
    dl->AddPolyline(path.data(), static_cast<int>(path.size()), color, 0, 1.0f);
  }
  if (hovered) {
    const float mx = ImGui::GetIO().MousePos.x;
    const float x = xmin + (mx - left) / width * (xmax - xmin);
    dl->AddLine(ImVec2(mx, top), ImVec2(mx, bottom), IM_COL32(200, 200, 200, 80));
    ImGui::BeginTooltip();
    ImGui::Text("iteration %.0f", x);
    for (const auto& l : lines) {
      const Series& s = *l.series;
      if (s.x.empty()) continue;
      const auto it = std::lower_bound(s.x.begin(), s.x.end(), x);
      const size_t i = it == s.x.end() ? s.x.size() - 1 : static_cast<size_t>(it - s.x.begin());
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(l.color), "%s: %.4g", l.label.c_str(), s.y[i]);
    }
    ImGui::EndTooltip();
  }
  // Legend.
  float lx = left + 4;
  if (lines.size() > 1) {
    for (const auto& l : lines) {
      const float w = ImGui::CalcTextSize(l.label.c_str()).x;
      if (lx + w + 14 > right) break;
      dl->AddRectFilled(ImVec2(lx, top + 3), ImVec2(lx + 8, top + 11), l.color);
      dl->AddText(ImVec2(lx + 11, top - 1), IM_COL32(190, 190, 195, 255), l.label.c_str());
      lx += w + 22;
    }
  }
  ImGui::PopID();
}

}  // namespace troupe::view
