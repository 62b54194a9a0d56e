// The viewer's panels, one file each. Each draws into the current ImGui window.
#pragma once

#include <string>
#include <vector>

#include "viewer/view_state.h"

namespace troupe::view {

void DrawGraphPanel(ViewState& state);     // workflow graph (panels/graph_panel.cc)
void DrawEpisodePanel(ViewState& state);   // one episode, by game (panels/episode_panel.cc)
void DrawMessagesPanel(ViewState& state);  // filterable message log (panels/messages_panel.cc)
void DrawTrainingPanel(ViewState& state);  // per-role and run curves (panels/training_panel.cc)
void DrawControlsPanel(ViewState& state);  // source, pause, scrub, playback (panels/controls_panel.cc)

struct PanelInfo {
  const char* name;   // for --panel
  const char* title;  // window title
  void (*draw)(ViewState&);
};
const std::vector<PanelInfo>& Panels();

}  // namespace troupe::view
