// A small line-plot widget for long series: several lines over one x range,
// reduced to one min/max pair per pixel column (10,000 points cost a pass, not
// 10,000 segments), with the values under the mouse shown on hover.
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "viewer/session_model.h"

namespace troupe::view {

struct PlotLine {
  const Series* series = nullptr;
  ImU32 color = 0;
  std::string label;
};

// x values above `x_limit` are not drawn (replay scrubbing).
void Plot(const char* title, const std::vector<PlotLine>& lines, ImVec2 size, float x_limit);

ImU32 PaletteColor(int index, float alpha = 1.0f);

}  // namespace troupe::view
