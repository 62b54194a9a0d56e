// SessionEvents: turns what a run does into session events (comms/proto/
// session.proto) and sends them to a publisher (ZeroMQ, for viewers and
// `troupe record`) and/or a session file (`troupe train --record`). Messages
// and state snapshots are sent for the first `detail_episodes` episodes of each
// iteration; episode ends, credit and metrics for all.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comms/event_stream.h"
#include "comms/session_file.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/rollout/rollout.h"

namespace troupe {

struct WorkerNotice;

// What each role's calls of a batch got (calls, mean reward, advantage mean and
// spread, unparseable fraction), one entry per role index: the iteration's
// credit events and its metrics.jsonl line both report these.
std::vector<session::RoleCredit> CreditByRole(const std::vector<CallRecord>& records, int roles);

class SessionEvents : public RolloutObserver {
 public:
  // Empty `publish` / `record_path`: that output is off.
  SessionEvents(const CompiledWorkflow& workflow, const std::string& publish, const std::string& record_path,
                bool append = false);
  ~SessionEvents() override;
  bool enabled() const { return publisher_ || writer_; }

  void RunStarted(const std::string& run_id, int start_iteration);
  void BeginIteration(int iteration, bool evaluation);
  void WorkerChanged(const WorkerNotice& notice);
  void Credit(int iteration, const std::vector<CallRecord>& records);
  void Metrics(int iteration, const std::map<std::string, double>& values, double episodes_per_s,
               double forward_calls_per_turn);
  void RunEnded(int iterations, double seconds, bool failed, const std::string& reason);

  bool Detailed(int episode) const override;
  void EpisodeStarted(int episode, int group, const std::vector<int>& seat_roles) override;
  void SnapshotsPlaying(int episode, const std::vector<std::string>& seat_snapshot) override;
  void Acted(int episode, const CallRecord& call, const std::vector<std::string>& words, bool scripted) override;
  void ToolRan(int episode, const std::string& node, int step, const std::vector<std::string>& inputs,
               const std::map<std::string, std::vector<std::string>>& outputs, bool ok) override;
  void StateChanged(int episode, const State& state) override;
  void EpisodeEnded(int episode, const EpisodeSummary& summary) override;

  int64_t dropped() const { return publisher_ ? publisher_->dropped() : 0; }
  std::string publish_endpoint() const { return publisher_ ? publisher_->endpoint() : ""; }
  // Publishing: waits up to `seconds` for a subscriber (a viewer or recorder started first).
  bool AwaitSubscriber(double seconds) {
    return publisher_ && publisher_->AwaitSubscriber(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  }

 private:
  void Emit(session::Event& event, bool flush = false);
  // A message event with the fields every message has.
  // K, width, per-vector norms and a preview of each vector.
  static void SummarizeLatents(const std::vector<float>& latents, int width, session::Message* m);
  session::Message* NewMessage(session::Event* e, int episode, int role, int seat, int turn, const std::string& phase,
                               const std::string& channel, const std::vector<std::string>& words) const;
  const CompiledWorkflow& workflow_;
  std::unique_ptr<EventPublisher> publisher_;
  std::unique_ptr<SessionWriter> writer_;
  uint64_t sequence_ = 0;
  double t0_ = 0.0;
  int iteration_ = 0;
  bool evaluation_ = false;
  bool ended_ = false;
  session::Event run_start_;
  std::map<int, std::vector<std::string>> snapshots_playing_;  // by episode, until its EpisodeStart goes out
  std::vector<session::Event> early_;
};

}  // namespace troupe
