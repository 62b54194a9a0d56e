// What the controller's side of the runtime needs to serve a workflow's
// models (WorkerHub): where workers meet it, which models run in `troupe
// worker` processes, the timeouts, and each model's serve spec. No game, no
// roles: the runtime knows models, not what they play.
#pragma once

#include <string>
#include <vector>

#include "comms/proto/runtime.pb.h"

namespace troupe {

struct WorkerPlacement {
  int model = 0;
  int replicas = 0;
};

struct RuntimeSettings {
  std::string endpoint;                   // empty: private inproc://
  std::vector<WorkerPlacement> external;  // models served by `troupe worker`
  int heartbeat_ms = 0;
  int worker_timeout_ms = 0;
  int request_timeout_ms = 0;
  int join_timeout_ms = 0;
  bool continue_on_loss = false;
  std::string keys_dir;
  std::string publish;
  int detail_episodes = 0;
};

// The runtime's narrow spec of a workflow (workflows/config/serve_specs.h makes it).
struct HubSpec {
  std::vector<wire::ModelServeSpec> models;  // by model index
  RuntimeSettings runtime;
};

}  // namespace troupe
