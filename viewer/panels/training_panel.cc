// Training panel: per-role curves over iterations (reward, advantage mean and
// std, invalid outputs), the run's losses, entropy, KL, cooperation and
// throughput; runs loaded with --compare are drawn beside the live one.
#include <imgui.h>

#include "viewer/panels/panels.h"
#include "viewer/plot.h"

namespace troupe::view {

namespace {

// Lines of one metric: this run's keys starting with `prefix` (one per role or
// model), then the same keys of compared runs, dimmer.
std::vector<PlotLine> MetricLines(const ViewState& s, const std::string& prefix) {
  std::vector<PlotLine> lines;
  int colour = 0;
  for (const auto& [key, series] : s.model.metrics) {
    if (key.rfind(prefix, 0) != 0) continue;
    lines.push_back({&series, PaletteColor(colour), key.size() > prefix.size() ? key.substr(prefix.size()) : key});
    for (const auto& other : s.compare) {
      auto it = other.model.metrics.find(key);
      if (it != other.model.metrics.end()) lines.push_back({&it->second, PaletteColor(colour, 0.45f), other.name});
    }
    ++colour;
  }
  return lines;
}

}  // namespace

void DrawTrainingPanel(ViewState& state) {
  const SessionModel& m = state.model;
  if (m.metrics.empty() && m.role_curves.empty()) {
    ImGui::TextDisabled("No training metrics yet.");
    return;
  }
  const float limit = state.follow ? 1e30f : static_cast<float>(state.iteration_cursor);
  const float w = (ImGui::GetContentRegionAvail().x - 8) / 2;
  const float h = 150;
  int cell = 0;
  auto place = [&]() {
    if (cell++ % 2 == 1) ImGui::SameLine();
  };
  for (const char* curve : {"reward", "advantage mean", "advantage std", "invalid"}) {
    std::vector<PlotLine> lines;
    for (const auto& [role, curves] : m.role_curves) {
      auto it = curves.find(curve);
      if (it == curves.end()) continue;
      lines.push_back({&it->second, PaletteColor(role), m.RoleName(role)});
      for (const auto& other : state.compare) {
        auto r = other.model.role_curves.find(role);
        if (r == other.model.role_curves.end()) continue;
        auto c = r->second.find(curve);
        if (c != r->second.end()) lines.push_back({&c->second, PaletteColor(role, 0.45f), other.name});
      }
    }
    if (lines.empty()) continue;
    place();
    Plot((std::string("per role: ") + curve).c_str(), lines, ImVec2(w, h), limit);
  }
  // The run's own curves, then the game's headline metrics as the run declared them.
  std::vector<std::pair<std::string, std::string>> run_plots = {
      {"loss/", "loss"}, {"entropy/", "entropy"}, {"kl/", "KL to reference"}};
  for (const auto& h : state.model.run().headline_metric()) {
    run_plots.push_back({"game/" + h, h});
    run_plots.push_back({"eval/" + h, h + " (evaluation)"});
  }
  run_plots.push_back({"eval/wire_bytes", "bytes per episode"});
  run_plots.push_back({"time/episodes_per_s", "episodes/s"});
  for (const auto& [prefix, title] : run_plots) {
    std::vector<PlotLine> lines = MetricLines(state, prefix);
    if (lines.empty()) continue;
    place();
    Plot(title.c_str(), lines, ImVec2(w, h), limit);
  }
}

}  // namespace troupe::view
