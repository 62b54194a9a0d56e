// The viewer's state shared by its panels: the session model, its source, the
// runs loaded for comparison, and the replay cursor (iteration, episode,
// message) with playback.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "viewer/event_source.h"
#include "viewer/session_model.h"

namespace troupe::view {

struct ComparedRun {
  std::string name;
  SessionModel model;
};

struct ViewState {
  SessionModel model;
  std::unique_ptr<EventSource> source;
  std::vector<ComparedRun> compare;
  std::string source_error;

  bool paused = false;          // live: stop taking events (they queue, and drop past the limit)
  bool follow = true;           // keep the cursor on the newest iteration
  int iteration_cursor = 0;     // curves and episodes up to here
  int selected_iteration = -1;  // the episode view's iteration
  int64_t selected_episode = 0;
  size_t message_cursor = SIZE_MAX;  // messages shown of the selected episode (SIZE_MAX: all)
  bool playing = false;
  float speed = 6.0f;  // messages per second in playback
  double play_accum = 0.0;
  double frame_ms = 0.0;  // last frame's build+render time

  char file_input[512] = "";
  char endpoint_input[256] = "tcp://127.0.0.1:5556";
  std::string keys_dir;  // CurveZMQ client keys for live runs that use them

  // False when the file cannot be read as a session (source_error says why).
  bool OpenFile(const std::string& path);
  void Connect(const std::string& endpoint);
  // Takes new events from the source into the model (bounded work per frame).
  void Pump(size_t max_events);
  // Playback and follow-live cursor updates for a frame of `dt` seconds.
  void Advance(double dt);
  const EpisodeRecord* SelectedEpisode() const;
};

}  // namespace troupe::view
