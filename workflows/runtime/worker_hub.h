// WorkerHub: the controller's side of the star. It binds the worker endpoint,
// starts in-process workers (threads on inproc://) for the models the runtime
// section does not place in `troupe worker` processes, waits until every
// declared worker has joined, and then serves the PolicyService calls by
// sending requests to workers and gathering their replies. Heartbeats and
// per-request deadlines find workers that died or stopped answering: the run
// then fails with WorkerLostError, or (on_worker_loss: CONTINUE) marks the
// affected rows lost and goes on with the remaining replicas.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comms/framed_socket.h"
#include "comms/proto/runtime.pb.h"
#include "core/base/errors.h"
#include "core/models/learner_group.h"
#include "workflows/specs/runtime_settings.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

class WorkerLostError : public CommsError {
 public:
  using CommsError::CommsError;
};

// What the hub tells its owner about workers joining and being lost.
struct WorkerNotice {
  std::string model;
  int replica = 0;
  bool lost = false;  // false: joined
  std::string detail;
  std::string endpoint;  // where the hub listens for workers
};

class WorkerHub : public PolicyService {
 public:
  // Waiting for workers and losing them are logged (spdlog); `notify` hears of both too.
  explicit WorkerHub(HubSpec spec, std::function<void(const WorkerNotice&)> notify = nullptr);
  ~WorkerHub() override;

  int size() const override { return static_cast<int>(configs_.size()); }
  const ModelConfig& config(int model) const override { return configs_.at(model); }
  std::vector<std::vector<Generation>> Generate(const std::vector<GenerateBatch>& batches) override;
  std::vector<ModelTrainStats> Update(const std::vector<CallRecord>& records) override;
  std::vector<ModelTrainStats> Supervised(const std::vector<CallRecord>& demos, int steps) override;
  std::vector<HybridStepStats> HybridStep(const HybridBatch& batch, const HybridSettings& settings) override;
  void Save(const std::string& dir) override;
  void Load(const std::string& dir, bool with_optimizer) override;
  // From the model's primary worker, which must see `dir` (the run folder's file system).
  void SaveSnapshot(int model, const std::string& dir) override;
  int64_t forward_calls() const override;
  int64_t encoded_positions() const override;

  const std::string& endpoint() const { return endpoint_; }
  int64_t lost_workers() const { return lost_; }
  // Updates sent again to a model's surviving learners after one was lost midway.
  int64_t retaken_updates() const { return retaken_; }
  const FrameRejects& rejects() const { return socket_->rejects(); }

 private:
  struct Worker {
    int model = 0;
    int replica = 0;
    std::string identity;
    bool joined = false;
    bool alive = false;
    double last_heard = 0.0;
    int64_t forward_calls = 0;
    int64_t encoded_positions = 0;
  };
  // A request in flight and what to do with its reply.
  struct Pending {
    int worker = 0;
    double sent_at = 0.0;
    std::function<void(const wire::Envelope&)> on_reply;
    std::function<void()> on_lost;
    std::function<void(const std::string&)> on_failure;  // a Failure reply; unset: the hub throws
    bool answered = false;
  };

  void WaitForWorkers();
  // `on_reply` may read attachment_: the attachment of the reply it handles.
  int Send(int worker, wire::Envelope& request, std::function<void(const wire::Envelope&)> on_reply,
           std::function<void()> on_lost, std::string_view attachment = {});
  int Send(int worker, wire::Envelope& request, std::function<void(const wire::Envelope&)> on_reply,
           std::function<void()> on_lost, std::function<void(const std::string&)> on_failure,
           std::string_view attachment = {});
  // Receives until every pending request is answered or its worker lost.
  void AwaitAll();
  void Handle(const std::string& identity, const wire::Envelope& envelope);
  void Lose(int worker, const std::string& why);
  std::vector<int> Alive(int model) const;
  std::vector<ModelTrainStats> TrainOnWorkers(const std::vector<CallRecord>& records, bool supervised, int steps);
  // One request per model to its first live replica, retried on the next when one is lost.
  void OnPrimaries(const std::function<wire::Envelope(int)>& request,
                   const std::function<void(int, const wire::Envelope&)>& on_reply);
  // Hybrid steps train the primary only; its parameters are then shipped to the other replicas.
  void SyncReplicas(int model);
  // The learner group of a model's live workers (a new one whenever they change).
  wire::LearnerGroup GroupOf(int model, const std::vector<int>& learners);

  const HubSpec spec_;
  std::vector<ModelConfig> configs_;  // from spec_.models
  std::function<void(const WorkerNotice&)> notify_;
  std::string endpoint_;
  std::unique_ptr<FramedSocket> socket_;
  Attachment attachment_;  // of the message being handled
  std::unique_ptr<class CurveAuthenticator> auth_;
  std::vector<Worker> workers_;
  std::map<uint64_t, Pending> pending_;
  uint64_t next_request_ = 1;
  int64_t lost_ = 0;
  int64_t retaken_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  // Data-parallel learners: the rendezvous store (made when a model first has
  // two), and per model its group.
  std::unique_ptr<LearnerStore> store_;
  struct Group {
    int generation = 0;
    std::vector<int> members;
    bool regroup = false;  // a member was lost: the survivors form a new group even if the same
  };
  std::map<int, Group> groups_;
};

}  // namespace troupe
