// Source switching, event pumping and the replay cursor.
#include "viewer/view_state.h"

#include <cstring>

namespace troupe::view {

bool ViewState::OpenFile(const std::string& path) {
  model.Clear();
  auto file = std::make_unique<FileSource>(path);
  source_error = file->error();
  const bool opened = file->opened();
  source = std::move(file);
  std::snprintf(file_input, sizeof file_input, "%s", path.c_str());
  selected_iteration = -1;
  message_cursor = SIZE_MAX;
  follow = true;
  return opened;
}

void ViewState::Connect(const std::string& endpoint) {
  model.Clear();
  source_error.clear();
  try {
    source = std::make_unique<LiveSource>(endpoint, keys_dir);
  } catch (const std::exception& e) {
    source_error = e.what();
  }
  std::snprintf(endpoint_input, sizeof endpoint_input, "%s", endpoint.c_str());
  selected_iteration = -1;
  message_cursor = SIZE_MAX;
  follow = true;
}

void ViewState::Pump(size_t max_events) {
  if (!source || paused) return;
  std::vector<session::Event> batch;
  source->Take(&batch, max_events);
  for (const auto& e : batch) model.Add(e);
  if (source->live() && source_error.empty()) source_error = source->error();
}

void ViewState::Advance(double dt) {
  if (follow && model.last_iteration() >= 0) {
    iteration_cursor = model.last_iteration();
    // Show the newest episode that has messages.
    for (int it = model.last_iteration(); it >= std::max(model.first_iteration(), model.last_iteration() - 1); --it) {
      auto eps = model.EpisodesOf(it);
      if (!eps.empty() && !model.episodes[eps.front()].messages.empty()) {
        selected_iteration = it;
        break;
      }
    }
  }
  if (selected_iteration < 0 && !model.episodes.empty()) {
    selected_iteration = model.episodes.front().iteration;
    selected_episode = model.episodes.front().episode;
  }
  if (!playing) return;
  const EpisodeRecord* ep = SelectedEpisode();
  if (ep == nullptr) return;
  play_accum += dt * speed;
  while (play_accum >= 1.0) {
    play_accum -= 1.0;
    if (message_cursor == SIZE_MAX) message_cursor = 0;
    if (message_cursor < ep->messages.size()) {
      ++message_cursor;
      continue;
    }
    // Next episode of the session.
    auto eps = model.EpisodesOf(selected_iteration);
    bool moved = false;
    for (size_t i = 0; i + 1 < eps.size(); ++i) {
      if (model.episodes[eps[i]].episode == selected_episode) {
        selected_episode = model.episodes[eps[i + 1]].episode;
        moved = true;
        break;
      }
    }
    if (!moved) {
      const int next = selected_iteration + 1;
      if (next > model.last_iteration() || model.EpisodesOf(next).empty()) {
        playing = false;
        return;
      }
      selected_iteration = next;
      iteration_cursor = std::max(iteration_cursor, next);
      selected_episode = model.episodes[model.EpisodesOf(next).front()].episode;
    }
    message_cursor = 0;
    ep = SelectedEpisode();
    if (ep == nullptr) return;
  }
}

const EpisodeRecord* ViewState::SelectedEpisode() const { return model.Episode(selected_iteration, selected_episode); }

}  // namespace troupe::view
