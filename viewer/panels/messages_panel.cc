// Messages panel: a filterable log (role, episode, channel, phase) of every
// published message, with tokens, bytes and latent summaries.
#include <imgui.h>

#include <cstring>

#include "viewer/episode_renderers.h"
#include "viewer/panels/panels.h"

namespace troupe::view {

void DrawMessagesPanel(ViewState& state) {
  const SessionModel& m = state.model;
  static int role = -1, episode = -1, channel = 0;
  static char phase[32] = "";
  static std::vector<size_t> rows;
  static size_t filtered_upto = 0;
  static std::string key;
  ImGui::SetNextItemWidth(120);
  std::string role_label = role < 0 ? "all roles" : m.RoleName(role);
  bool changed = false;
  if (ImGui::BeginCombo("##role", role_label.c_str())) {
    if (ImGui::Selectable("all roles", role < 0)) role = -1, changed = true;
    for (int r = 0; r < m.run().role_size(); ++r) {
      if (ImGui::Selectable(m.RoleName(r).c_str(), role == r)) role = r, changed = true;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  changed |= ImGui::InputInt("episode", &episode);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  const char* channels[] = {"any channel", "TEXT", "LATENT", "HYBRID"};
  changed |= ImGui::Combo("##channel", &channel, channels, 4);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(80);
  changed |= ImGui::InputText("phase", phase, sizeof phase);
  const std::string now = m.run().run_id();
  if (changed || now != key || filtered_upto > m.messages.size()) {
    rows.clear();
    filtered_upto = 0;
    key = now;
  }
  for (; filtered_upto < m.messages.size(); ++filtered_upto) {
    const MessageRow& r = m.messages[filtered_upto];
    if (role >= 0 && r.role != role) continue;
    if (episode >= 0 && r.episode != episode) continue;
    if (channel > 0 && r.channel != channels[channel]) continue;
    if (phase[0] != 0 && r.phase != phase) continue;
    rows.push_back(filtered_upto);
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%zu of %zu", rows.size(), m.messages.size());
  const ImGuiTableFlags flags =
      ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (ImGui::BeginTable("messages", 9, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("it", ImGuiTableColumnFlags_WidthFixed, 40);
    ImGui::TableSetupColumn("ep", ImGuiTableColumnFlags_WidthFixed, 28);
    ImGui::TableSetupColumn("turn", ImGuiTableColumnFlags_WidthFixed, 34);
    ImGui::TableSetupColumn("who", ImGuiTableColumnFlags_WidthFixed, 90);
    ImGui::TableSetupColumn("phase", ImGuiTableColumnFlags_WidthFixed, 50);
    ImGui::TableSetupColumn("text", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("tok", ImGuiTableColumnFlags_WidthFixed, 30);
    ImGui::TableSetupColumn("bytes", ImGuiTableColumnFlags_WidthFixed, 44);
    ImGui::TableSetupColumn("latent", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(rows.size()));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const MessageRow& r = m.messages[rows[i]];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%d", r.iteration);
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(r.episode));
        ImGui::TableNextColumn();
        ImGui::Text("%d", r.turn + 1);
        ImGui::TableNextColumn();
        ImGui::Text("%s", m.SeatName(r.seat).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.phase.c_str());
        ImGui::TableNextColumn();
        if (r.valid) ImGui::TextUnformatted(r.text.c_str());
        else ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", r.text.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%d", r.text_tokens);
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(r.wire_bytes));
        ImGui::TableNextColumn();
        ImGui::PushID(i);
        DrawLatentSummary(r);
        ImGui::PopID();
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace troupe::view
