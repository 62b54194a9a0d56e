// What the viewer knows about a session, built incrementally from session
// events (live or from a file): the run and its workflow, per-iteration
// metrics and per-role credit curves, episodes with their messages and state
// snapshots, workers, and where the run stands. No rendering here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comms/proto/session.pb.h"
#include "comms/proto/workflow.pb.h"

namespace troupe::view {

struct MessageRow {
  int iteration = 0;
  int64_t episode = 0;
  int role = 0, seat = 0, turn = 0;
  std::string phase, channel, text;
  std::string prompt;  // what the caller read (text calls; a tool's inputs)
  int step = 0;        // pipelines: the tick the node ran in
  // Persuasion probes: what the teammates recommended, and the answer with no message heard (empty: not probed).
  std::string recommended, unheard;
  int text_tokens = 0;
  int64_t wire_bytes = 0;
  bool valid = true;
  int latent_vectors = 0, latent_width = 0;
  std::vector<float> latent_norms;
  std::vector<float> latent_preview;  // [K, min(width, 16)]
};

struct EpisodeRecord {
  int iteration = 0;
  int64_t episode = 0;
  bool evaluation = false;
  std::vector<int> seat_role;  // who played each seat, when roles draw seats (empty: the run's seat_role)
  std::vector<std::string> seat_snapshot;  // per seat, the snapshot that played it ("" the current model); empty: none did
  std::vector<size_t> messages;  // indices into SessionModel::messages
  std::vector<session::StateSnapshot> snapshots;
  std::map<std::string, double> metrics;
  std::string final_state;
  bool ended = false, dropped = false;
};

struct Series {
  std::vector<float> x, y;
  void Add(float xi, float yi) {
    x.push_back(xi);
    y.push_back(yi);
  }
};

// The first word of a message (a vote's choice, a recommendation).
std::string FirstWord(const std::string& text);

// A probed vote whose teammates recommended otherwise than what the voter
// answered with no message heard (a case the persuasion probe counts).
bool PersuasionCase(const MessageRow& vote);

// A case in which the voter voted the recommendation: the probe saw it swayed.
bool Persuaded(const MessageRow& vote);

class SessionModel {
 public:
  void Add(const session::Event& event);
  void Clear();

  bool has_run() const { return run_.role_size() > 0 || !run_.run_id().empty(); }
  const session::RunStart& run() const { return run_; }
  const config::Workflow& workflow() const { return workflow_; }
  std::string RoleName(int role) const;
  std::string SeatName(int seat) const;
  // The role that played `seat` in `episode` (-1 when unknown).
  int RoleOfSeat(const EpisodeRecord& episode, int seat) const;
  // The physical model a role maps to, by its index among the workflow's models; -1: scripted or unknown.
  int ModelOfRole(int role) const;
  // "waiting", "running", "ended", "failed: ...", "restarted"
  const std::string& status() const { return status_; }
  int first_iteration() const { return first_iteration_; }
  // Iterations that have episodes (-1 when none).
  int first_episode_iteration() const { return first_episode_iteration_; }
  int last_episode_iteration() const { return last_episode_iteration_; }
  int last_iteration() const { return last_iteration_; }
  int64_t events() const { return events_; }
  int64_t publisher_drops() const { return publisher_drops_; }

  std::vector<MessageRow> messages;
  std::vector<EpisodeRecord> episodes;
  std::map<std::string, Series> metrics;                     // metrics.jsonl keys over iterations
  std::map<int, std::map<std::string, Series>> role_curves;  // role -> reward/advantage/invalid curves
  std::vector<std::string> worker_log;
  // (event time, role) of recent node activations, newest last (kept short).
  std::vector<std::pair<double, int>> activations;
  double last_event_time = 0.0;

  // Episodes of one iteration, in order.
  std::vector<size_t> EpisodesOf(int iteration) const;
  const EpisodeRecord* Episode(int iteration, int64_t episode) const;

 private:
  EpisodeRecord& EpisodeFor(int iteration, int64_t episode);
  session::RunStart run_;
  config::Workflow workflow_;
  std::string status_ = "waiting for a run";
  int first_iteration_ = -1, last_iteration_ = -1;
  int first_episode_iteration_ = -1, last_episode_iteration_ = -1;
  int64_t events_ = 0, publisher_drops_ = 0;
  std::map<std::pair<int, int64_t>, size_t> episode_index_;
};

}  // namespace troupe::view
