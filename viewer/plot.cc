// Line plots with per-column reduction and hover values.
#include "viewer/plot.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace troupe::view {

ImU32 PaletteColor(int index, float alpha) {
  static const ImVec4 colors[] = {{0.30f, 0.62f, 0.98f, 1}, {0.98f, 0.55f, 0.20f, 1}, {0.35f, 0.80f, 0.40f, 1},
                                  {0.85f, 0.35f, 0.85f, 1}, {0.95f, 0.85f, 0.30f, 1}, {0.30f, 0.85f, 0.85f, 1},
                                  {0.95f, 0.40f, 0.45f, 1}, {0.65f, 0.55f, 0.95f, 1}};
  ImVec4 c = colors[((index % 8) + 8) % 8];
  c.w = alpha;
  return ImGui::ColorConvertFloat4ToU32(c);
}

void Plot(const char* title, const std::vector<PlotLine>& lines, ImVec2 size, float x_limit) {
  ImGui::PushID(title);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::InvisibleButton("plot", size);
  const bool hovered = ImGui::IsItemHovered();
  const ImVec2 p1(p0.x + size.x, p0.y + size.y);
  dl->AddRectFilled(p0, p1, IM_COL32(24, 26, 30, 255), 3.0f);
  dl->AddText(ImVec2(p0.x + 6, p0.y + 3), IM_COL32(210, 210, 215, 255), title);
  float xmin = FLT_MAX, xmax = -FLT_MAX, ymin = FLT_MAX, ymax = -FLT_MAX;
  for (const auto& l : lines) {
    const Series& s = *l.series;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (s.x[i] > x_limit || !std::isfinite(s.y[i])) continue;
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]);
      ymax = std::max(ymax, s.y[i]);
    }
  }
  if (xmin > xmax) {
    dl->AddText(ImVec2(p0.x + 6, p0.y + size.y / 2 - 7), IM_COL32(140, 140, 150, 255), "no data yet");
    ImGui::PopID();
    return;
  }
  if (ymax - ymin < 1e-9f) {
    ymax += 0.5f;
    ymin -= 0.5f;
  }
  if (xmax - xmin < 1e-9f) xmax = xmin + 1;
  const float left = p0.x + 44, right = p1.x - 6, top = p0.y + 20, bottom = p1.y - 14;
  const float width = std::max(1.0f, right - left);
  auto X = [&](float x) { return left + (x - xmin) / (xmax - xmin) * width; };
  auto Y = [&](float y) { return bottom - (y - ymin) / (ymax - ymin) * (bottom - top); };
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", ymax);
  dl->AddText(ImVec2(p0.x + 4, top - 6), IM_COL32(150, 150, 160, 255), buf);
  std::snprintf(buf, sizeof buf, "%.3g", ymin);
  dl->AddText(ImVec2(p0.x + 4, bottom - 8), IM_COL32(150, 150, 160, 255), buf);
  std::snprintf(buf, sizeof buf, "%.0f", xmax);
  dl->AddText(ImVec2(right - ImGui::CalcTextSize(buf).x, bottom), IM_COL32(150, 150, 160, 255), buf);
  dl->AddLine(ImVec2(left, bottom), ImVec2(right, bottom), IM_COL32(70, 70, 80, 255));
  // One column per two pixels; integer-width lines take ImGui's cheap textured path.
  const int columns = std::max(1, static_cast<int>(width / 2));
  for (const auto& l : lines) {
    const Series& s = *l.series;
    // One min/max per pixel column, and the column's first and last value for joining.
    std::vector<float> lo(columns + 1, FLT_MAX), hi(columns + 1, -FLT_MAX), first(columns + 1), last(columns + 1);
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (s.x[i] > x_limit || !std::isfinite(s.y[i])) continue;
      const int c = std::clamp(static_cast<int>((s.x[i] - xmin) / (xmax - xmin) * columns), 0, columns);
      if (lo[c] == FLT_MAX) first[c] = s.y[i];
      lo[c] = std::min(lo[c], s.y[i]);
      hi[c] = std::max(hi[c], s.y[i]);
      last[c] = s.y[i];
    }
    std::vector<ImVec2> path;
    path.reserve(2 * (columns + 1));
    for (int c = 0; c <= columns; ++c) {
      if (lo[c] == FLT_MAX) continue;
      const float x = left + 2.0f * c;
      path.emplace_back(x, Y(first[c]));
      if (Y(lo[c]) - Y(hi[c]) > 1.0f) {  // the column's range, where it spans more than a pixel
        dl->AddLine(ImVec2(x, Y(lo[c])), ImVec2(x, Y(hi[c])), l.color, 1.0f);
      }
      if (last[c] != first[c]) path.emplace_back(x, Y(last[c]));
    }
    dl->AddPolyline(path.data(), static_cast<int>(path.size()), l.color, 0, 1.0f);
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
