// Controls: the source (a session file or a live run, switchable here), where
// the run stands, pause/resume, and replay: scrub by iteration and episode,
// step through messages, play at a chosen speed.
#include <imgui.h>

#include "viewer/panels/panels.h"

namespace troupe::view {

void DrawControlsPanel(ViewState& state) {
  SessionModel& m = state.model;
  ImGui::SetNextItemWidth(260);
  ImGui::InputText("##file", state.file_input, sizeof state.file_input);
  ImGui::SameLine();
  if (ImGui::Button("Open file")) state.OpenFile(state.file_input);
  ImGui::SetNextItemWidth(260);
  ImGui::InputText("##endpoint", state.endpoint_input, sizeof state.endpoint_input);
  ImGui::SameLine();
  if (ImGui::Button("Connect")) state.Connect(state.endpoint_input);
  ImGui::Separator();
  if (state.source) {
    ImGui::Text("%s %s", state.source->live() ? "live:" : "file:", state.source->Describe().c_str());
  }
  const std::string status = m.status();
  const ImVec4 colour = status.rfind("failed", 0) == 0 ? ImVec4(1, 0.4f, 0.4f, 1)
                        : status == "ended"            ? ImVec4(0.6f, 0.85f, 1, 1)
                                                       : ImVec4(0.5f, 0.95f, 0.5f, 1);
  ImGui::TextColored(colour, "run %s: %s", m.run().run_id().c_str(), status.c_str());
  if (auto* live = dynamic_cast<LiveSource*>(state.source.get());
      live != nullptr && status == "running" && live->silent_for() > 5) {
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "no events for %.0f s (reconnecting as the run comes back)",
                       live->silent_for());
  }
  if (!state.source_error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s", state.source_error.c_str());
  ImGui::Text("%lld events; iterations %d..%d", static_cast<long long>(m.events()), m.first_iteration(),
              m.last_iteration());
  if (state.source) {
    ImGui::Text("dropped here %lld, missed %lld, dropped by the run %lld",
                static_cast<long long>(state.source->dropped()), static_cast<long long>(state.source->missed()),
                static_cast<long long>(m.publisher_drops()));
  }
  for (size_t i = m.worker_log.size() > 3 ? m.worker_log.size() - 3 : 0; i < m.worker_log.size(); ++i) {
    ImGui::TextDisabled("worker %s", m.worker_log[i].c_str());
  }
  ImGui::Separator();
  if (state.source && state.source->live()) {
    if (ImGui::Button(state.paused ? "Resume view" : "Pause view")) state.paused = !state.paused;
    ImGui::SameLine();
  }
  ImGui::Checkbox("follow newest", &state.follow);
  if (m.last_iteration() >= 0) {
    int it = state.iteration_cursor;
    ImGui::SetNextItemWidth(300);
    if (ImGui::SliderInt("iteration##scrub", &it, std::max(0, m.first_iteration()), m.last_iteration())) {
      state.iteration_cursor = it;
      state.selected_iteration = it;
      state.message_cursor = SIZE_MAX;
      state.follow = false;
    }
  }
  const EpisodeRecord* ep = state.SelectedEpisode();
  const size_t total = ep ? ep->messages.size() : 0;
  size_t& cursor = state.message_cursor;
  const size_t shown = std::min(cursor, total);
  if (ImGui::Button("|<")) cursor = 0, state.follow = false;
  ImGui::SameLine();
  if (ImGui::Button("<")) cursor = shown > 0 ? shown - 1 : 0, state.follow = false;
  ImGui::SameLine();
  if (ImGui::Button(state.playing ? "Pause" : "Play")) {
    state.playing = !state.playing;
    state.follow = false;
    if (state.playing && shown >= total) cursor = 0;
  }
  ImGui::SameLine();
  if (ImGui::Button(">")) cursor = std::min(total, shown + 1), state.follow = false;
  ImGui::SameLine();
  if (ImGui::Button(">|")) cursor = SIZE_MAX;
  ImGui::SameLine();
  ImGui::Text("message %zu / %zu", shown, total);
  ImGui::SetNextItemWidth(300);
  ImGui::SliderFloat("messages/s", &state.speed, 0.5f, 60.0f, "%.1f", ImGuiSliderFlags_Logarithmic);
  ImGui::TextDisabled("frame %.2f ms", state.frame_ms);
}

const std::vector<PanelInfo>& Panels() {
  static const std::vector<PanelInfo> panels = {{"graph", "Workflow graph", DrawGraphPanel},
                                                {"episode", "Episode", DrawEpisodePanel},
                                                {"messages", "Messages", DrawMessagesPanel},
                                                {"training", "Training", DrawTrainingPanel},
                                                {"controls", "Controls", DrawControlsPanel}};
  return panels;
}

}  // namespace troupe::view
