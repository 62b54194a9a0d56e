// Episode panel: pick an iteration and episode (live or recorded), then the
// game's registered renderer draws it up to the replay cursor.
#include <imgui.h>

#include <map>
#include <string>

#include "viewer/episode_renderers.h"
#include "viewer/panels/panels.h"

namespace troupe::view {

namespace {

// Which seats frozen snapshots played in the episode (snapshot pools), one line per snapshot; nothing when none did.
void DrawSnapshotsPlaying(const SessionModel& m, const EpisodeRecord& ep) {
  std::map<std::string, std::string> seats_of;  // snapshot -> its seats
  for (size_t seat = 0; seat < ep.seat_snapshot.size(); ++seat) {
    const std::string& label = ep.seat_snapshot[seat];
    if (label.empty()) continue;
    std::string& seats = seats_of[label];
    seats += (seats.empty() ? "" : ", ") + m.SeatName(static_cast<int>(seat));
  }
  for (const auto& [label, seats] : seats_of) {
    ImGui::TextColored(ImVec4(0.75f, 0.65f, 1.0f, 1), "snapshot %s", label.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("played %s (frozen; not trained on)", seats.c_str());
  }
}

}  // namespace

void DrawEpisodePanel(ViewState& state) {
  SessionModel& m = state.model;
  if (m.episodes.empty()) {
    ImGui::TextDisabled("No episodes yet. A run publishes the calls of its first episodes each iteration.");
    return;
  }
  const int first = m.first_episode_iteration(), last = m.last_episode_iteration();
  int it = state.selected_iteration < 0 ? last : state.selected_iteration;
  ImGui::SetNextItemWidth(220);
  if (ImGui::SliderInt("iteration", &it, first, std::max(first, last))) {
    state.selected_iteration = it;
    state.follow = false;
    state.message_cursor = SIZE_MAX;
  }
  const std::vector<size_t> eps = m.EpisodesOf(state.selected_iteration);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(160);
  std::string current = "episode " + std::to_string(state.selected_episode);
  if (ImGui::BeginCombo("##episode", current.c_str())) {
    for (size_t i : eps) {
      const EpisodeRecord& e = m.episodes[i];
      if (e.messages.empty() && e.snapshots.empty()) continue;
      std::string label =
          "episode " + std::to_string(e.episode) + (e.dropped ? " (dropped)" : "") + (e.evaluation ? " (eval)" : "");
      if (ImGui::Selectable(label.c_str(), e.episode == state.selected_episode)) {
        state.selected_episode = e.episode;
        state.message_cursor = SIZE_MAX;
        state.follow = false;
      }
    }
    ImGui::EndCombo();
  }
  const EpisodeRecord* ep = state.SelectedEpisode();
  if (ep == nullptr) {
    // Fall back to the first episode of the iteration with calls in it.
    for (size_t i : eps) {
      if (!m.episodes[i].messages.empty()) {
        state.selected_episode = m.episodes[i].episode;
        ep = &m.episodes[i];
        break;
      }
    }
  }
  if (ep == nullptr) {
    ImGui::TextDisabled("No published calls in iteration %d.", state.selected_iteration);
    return;
  }
  const size_t shown = std::min(state.message_cursor, ep->messages.size());
  ImGui::SameLine();
  ImGui::TextDisabled("%zu / %zu messages%s", shown, ep->messages.size(),
                      ep->dropped ? "  (dropped: a worker was lost)"
                      : ep->ended ? ""
                                  : "  (playing)");
  // Pipelines (no game) get the pipeline view.
  const std::string game = m.run().game().empty() && m.workflow().has_pipeline() ? "pipeline" : m.run().game();
  auto& registry = EpisodeRendererRegistry::Get();
  static std::map<std::string, std::unique_ptr<EpisodeRenderer>> renderers;
  auto& renderer = renderers[game];
  if (!renderer) renderer = registry.Create(registry.Has(game) ? game : "generic");
  ImGui::BeginChild("episode_body");
  DrawSnapshotsPlaying(m, *ep);
  renderer->Draw(m, *ep, shown);
  ImGui::EndChild();
}

}  // namespace troupe::view
