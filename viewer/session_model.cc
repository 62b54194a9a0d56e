// Building the viewer's session model from events.
#include "viewer/session_model.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstdint>

#include "core/base/words.h"

namespace troupe::view {

void SessionModel::Clear() { *this = SessionModel(); }

std::string SessionModel::RoleName(int role) const {
  return role >= 0 && role < run_.role_size() ? run_.role(role) : "role " + std::to_string(role);
}

std::string SessionModel::SeatName(int seat) const {
  return seat >= 0 && seat < run_.seat_size() ? run_.seat(seat) : "seat " + std::to_string(seat);
}

int SessionModel::RoleOfSeat(const EpisodeRecord& episode, int seat) const {
  if (seat >= 0 && seat < static_cast<int>(episode.seat_role.size())) return episode.seat_role[seat];
  return seat >= 0 && seat < run_.seat_role_size() ? run_.seat_role(seat) : -1;
}

int SessionModel::ModelOfRole(int role) const {
  if (role < 0 || role >= workflow_.role_size()) return -1;
  const std::string& model = workflow_.role(role).model();
  for (int m = 0; m < workflow_.model_size() && !model.empty(); ++m) {
    if (workflow_.model(m).name() == model) return m;
  }
  return -1;
}

std::string FirstWord(const std::string& text) { return text.substr(0, text.find(' ')); }

bool PersuasionCase(const MessageRow& vote) {
  return !vote.recommended.empty() && !SameWordAnyCase(FirstWord(vote.unheard), vote.recommended);
}

bool Persuaded(const MessageRow& vote) {
  return PersuasionCase(vote) && SameWordAnyCase(FirstWord(vote.text), vote.recommended);
}

EpisodeRecord& SessionModel::EpisodeFor(int iteration, int64_t episode) {
  auto [it, fresh] = episode_index_.emplace(std::make_pair(iteration, episode), episodes.size());
  if (fresh) {
    if (first_episode_iteration_ < 0 || iteration < first_episode_iteration_) first_episode_iteration_ = iteration;
    last_episode_iteration_ = std::max(last_episode_iteration_, iteration);
    EpisodeRecord r;
    r.iteration = iteration;
    r.episode = episode;
    episodes.push_back(r);
  }
  return episodes[it->second];
}

std::vector<size_t> SessionModel::EpisodesOf(int iteration) const {
  std::vector<size_t> out;
  for (auto it = episode_index_.lower_bound({iteration, INT64_MIN});
       it != episode_index_.end() && it->first.first == iteration; ++it) {
    out.push_back(it->second);
  }
  return out;
}

const EpisodeRecord* SessionModel::Episode(int iteration, int64_t episode) const {
  auto it = episode_index_.find({iteration, episode});
  return it == episode_index_.end() ? nullptr : &episodes[it->second];
}

void SessionModel::Add(const session::Event& e) {
  ++events_;
  last_event_time = e.time();
  switch (e.body_case()) {
    case session::Event::kRunStart: {
      if (has_run() && e.run_start().run_id() != run_.run_id()) {
        Clear();
        status_ = "restarted";
      }
      run_ = e.run_start();
      workflow_.Clear();
      google::protobuf::TextFormat::ParseFromString(run_.workflow_text(), &workflow_);
      if (status_ != "restarted") status_ = "running";
      break;
    }
    case session::Event::kEpisodeStart: {
      const auto& s = e.episode_start();
      EpisodeRecord& r = EpisodeFor(s.iteration(), s.episode());
      r.evaluation = s.evaluation();
      r.seat_role.assign(s.seat_role().begin(), s.seat_role().end());
      r.seat_snapshot.assign(s.seat_snapshot().begin(), s.seat_snapshot().end());
      break;
    }
    case session::Event::kEpisodeEnd: {
      const auto& s = e.episode_end();
      EpisodeRecord& r = EpisodeFor(s.iteration(), s.episode());
      r.ended = true;
      r.dropped = s.dropped();
      r.final_state = s.final_state();
      for (const auto& [k, v] : s.metrics()) r.metrics[k] = v;
      break;
    }
    case session::Event::kNode: {
      activations.emplace_back(e.time(), e.node().role());
      if (activations.size() > 64) activations.erase(activations.begin(), activations.begin() + 32);
      break;
    }
    case session::Event::kMessage: {
      const auto& m = e.message();
      MessageRow row;
      row.iteration = m.iteration();
      row.episode = m.episode();
      row.role = m.role();
      row.seat = m.seat();
      row.turn = m.turn();
      row.phase = m.phase();
      row.channel = m.channel();
      row.text = m.text();
      row.prompt = m.prompt();
      row.step = m.step();
      row.recommended = m.recommended();
      row.unheard = m.unheard();
      row.text_tokens = m.text_tokens();
      row.wire_bytes = m.wire_bytes();
      row.valid = m.valid();
      row.latent_vectors = m.latent().vectors();
      row.latent_width = m.latent().width();
      row.latent_norms.assign(m.latent().norms().begin(), m.latent().norms().end());
      row.latent_preview.assign(m.latent().preview().begin(), m.latent().preview().end());
      EpisodeFor(m.iteration(), m.episode()).messages.push_back(messages.size());
      messages.push_back(std::move(row));
      break;
    }
    case session::Event::kSnapshot: {
      const auto& s = e.snapshot();
      EpisodeFor(s.iteration(), s.episode()).snapshots.push_back(s);
      break;
    }
    case session::Event::kCredit: {
      const auto& c = e.credit();
      auto& curves = role_curves[c.role()];
      const float x = static_cast<float>(c.iteration());
      curves["reward"].Add(x, static_cast<float>(c.reward_mean()));
      curves["advantage mean"].Add(x, static_cast<float>(c.advantage_mean()));
      curves["advantage std"].Add(x, static_cast<float>(c.advantage_std()));
      curves["invalid"].Add(x, static_cast<float>(c.invalid_fraction()));
      break;
    }
    case session::Event::kMetrics: {
      const auto& m = e.metrics();
      for (const auto& [k, v] : m.values()) metrics[k].Add(static_cast<float>(m.iteration()), static_cast<float>(v));
      if (first_iteration_ < 0) first_iteration_ = m.iteration();
      last_iteration_ = std::max(last_iteration_, m.iteration());
      if (status_ == "restarted" || status_ == "waiting for a run") status_ = "running";
      break;
    }
    case session::Event::kThroughput:
      publisher_drops_ = e.throughput().events_dropped();
      metrics["events dropped by the run"].Add(static_cast<float>(e.throughput().iteration()),
                                               static_cast<float>(e.throughput().events_dropped()));
      break;
    case session::Event::kWorker: {
      const auto& w = e.worker();
      worker_log.push_back(w.model() + "#" + std::to_string(w.replica()) + " " +
                           session::WorkerEvent::Kind_Name(w.kind()) + (w.detail().empty() ? "" : ": " + w.detail()));
      break;
    }
    case session::Event::kRunEnd: status_ = e.run_end().failed() ? "failed: " + e.run_end().reason() : "ended"; break;
    default: break;
  }
}

}  // namespace troupe::view
