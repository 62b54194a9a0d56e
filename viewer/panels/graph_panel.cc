// Workflow graph panel: roles coloured by their physical model (shared,
// separate and partial sharing visible at a glance), channels styled by mode,
// nodes lit while they act.
#include <imgui.h>

#include <cmath>
#include <map>
#include <set>

#include "viewer/graph_layout.h"
#include "viewer/panels/panels.h"
#include "viewer/plot.h"

namespace troupe::view {

namespace {

void Arrow(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 color, float thickness, bool dashed) {
  const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
  if (len < 1) return;
  const float ux = dx / len, uy = dy / len;
  if (dashed) {
    for (float t = 0; t < len; t += 12) {
      const float e = std::min(len, t + 7);
      dl->AddLine(ImVec2(a.x + ux * t, a.y + uy * t), ImVec2(a.x + ux * e, a.y + uy * e), color, thickness);
    }
  } else {
    dl->AddLine(a, b, color, thickness);
  }
  const ImVec2 tip = b, l(b.x - ux * 10 - uy * 5, b.y - uy * 10 + ux * 5),
               r(b.x - ux * 10 + uy * 5, b.y - uy * 10 - ux * 5);
  dl->AddTriangleFilled(tip, l, r, color);
}

}  // namespace

void DrawGraphPanel(ViewState& state) {
  const SessionModel& m = state.model;
  if (!m.has_run()) {
    ImGui::TextDisabled("No run yet: open a session file or connect to a run (Controls).");
    return;
  }
  static std::string laid_out_for;
  static WorkflowGraph graph;
  if (laid_out_for != m.run().run_id() + m.run().workflow_text()) {
    graph = BuildWorkflowGraph(m.run(), m.workflow());
    laid_out_for = m.run().run_id() + m.run().workflow_text();
  }
  // Which roles act now: the selected message in replay, recent activations when live.
  std::set<int> lit;
  if (state.source && state.source->live()) {
    for (const auto& [t, role] : m.activations) {
      if (m.last_event_time - t < 1.0) lit.insert(role);
    }
  }
  if (const EpisodeRecord* ep = state.SelectedEpisode(); ep != nullptr && state.message_cursor != SIZE_MAX &&
                                                         state.message_cursor > 0 &&
                                                         state.message_cursor <= ep->messages.size()) {
    lit.insert(m.messages[ep->messages[state.message_cursor - 1]].role);
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = 22.0f * (1 + static_cast<float>(m.run().model_size()));
  const ImVec2 area(avail.x, std::max(120.0f, avail.y - legend_h));
  const float pad = 60;
  auto at = [&](const GraphNode& n) {
    return ImVec2(origin.x + pad + n.x * (area.x - 2 * pad), origin.y + 56 + n.y * (area.y - 100));
  };
  const float radius = 26;
  for (const auto& e : graph.edges) {
    ImVec2 a = at(graph.nodes[e.from]), b = at(graph.nodes[e.to]);
    if (e.from == e.to) {  // a channel within a role (team deliberation)
      const ImU32 c = e.mode == 1   ? IM_COL32(190, 120, 255, 255)
                      : e.mode == 2 ? IM_COL32(120, 220, 200, 255)
                                    : IM_COL32(200, 200, 200, 220);
      dl->AddCircle(ImVec2(a.x, a.y - radius - 10), 12, c, 20, e.mode == 0 ? 1.5f : 2.5f);
      continue;
    }
    const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
    if (len < 1) continue;
    const ImVec2 u(dx / len, dy / len);
    a = ImVec2(a.x + u.x * radius, a.y + u.y * radius);
    b = ImVec2(b.x - u.x * radius, b.y - u.y * radius);
    if (e.mode < 0) {
      dl->AddLine(a, b, IM_COL32(90, 95, 105, 255), 1.0f);
      continue;
    }
    // Two channels between the same pair run side by side.
    const ImVec2 side(-u.y * 5, u.x * 5);
    a = ImVec2(a.x + side.x, a.y + side.y);
    b = ImVec2(b.x + side.x, b.y + side.y);
    if (e.mode == 0) {
      Arrow(dl, a, b, IM_COL32(220, 220, 225, 255), 1.5f, false);  // TEXT: solid
    } else if (e.mode == 1) {
      Arrow(dl, a, b, IM_COL32(190, 120, 255, 255), 2.5f, true);  // LATENT: dashed violet
    } else {
      Arrow(dl, a, b, IM_COL32(120, 220, 200, 255), 1.5f, false);  // HYBRID: double teal
      Arrow(dl, ImVec2(a.x + side.x * 0.8f, a.y + side.y * 0.8f), ImVec2(b.x + side.x * 0.8f, b.y + side.y * 0.8f),
            IM_COL32(190, 120, 255, 255), 1.5f, true);
    }
  }
  for (const auto& n : graph.nodes) {
    const ImVec2 c = at(n);
    const bool on = n.role >= 0 && lit.count(n.role);
    if (n.role < 0) {
      dl->AddRectFilled(ImVec2(c.x - 40, c.y - 16), ImVec2(c.x + 40, c.y + 16), IM_COL32(60, 64, 72, 255), 6);
      dl->AddRect(ImVec2(c.x - 40, c.y - 16), ImVec2(c.x + 40, c.y + 16), IM_COL32(140, 145, 155, 255), 6);
    } else {
      const ImU32 fill = n.model >= 0 ? PaletteColor(n.model, on ? 1.0f : 0.75f) : IM_COL32(110, 110, 118, 255);
      if (on) dl->AddCircleFilled(c, radius + 7, IM_COL32(255, 240, 150, 110), 32);
      dl->AddCircleFilled(c, radius, fill, 32);
      dl->AddCircle(c, radius, on ? IM_COL32(255, 245, 170, 255) : IM_COL32(20, 20, 24, 255), 32, on ? 3.0f : 1.5f);
      if (n.adapter) dl->AddCircle(c, radius - 5, IM_COL32(255, 255, 255, 230), 32, 2.0f);
    }
    const ImVec2 ts = ImGui::CalcTextSize(n.label.c_str());
    dl->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y / 2), IM_COL32(15, 15, 18, 255), n.label.c_str());
    if (n.role < 0) dl->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y / 2), IM_COL32(230, 230, 235, 255), n.label.c_str());
    const ImVec2 ds = ImGui::CalcTextSize(n.detail.c_str());
    dl->AddText(ImVec2(c.x - ds.x / 2, c.y + radius + 4), IM_COL32(170, 172, 180, 255), n.detail.c_str());
  }
  ImGui::Dummy(area);
  // Legend: models (colour) and channel modes.
  for (int i = 0; i < m.run().model_size(); ++i) {
    int roles = 0;
    for (int r : m.run().role_model()) roles += r == i;
    ImGui::ColorButton(("##model" + std::to_string(i)).c_str(), ImGui::ColorConvertU32ToFloat4(PaletteColor(i)),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(12, 12));
    ImGui::SameLine();
    ImGui::Text("model %s: %d role%s", m.run().model(i).c_str(), roles, roles == 1 ? "" : "s");
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped(
      "channels: solid TEXT, dashed LATENT, double HYBRID; a ring over a role is a channel within it; "
      "a white inner ring is a per-role adapter on a shared trunk");
  ImGui::PopStyleColor();
}

}  // namespace troupe::view
