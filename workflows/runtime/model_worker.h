// A model worker: connects to a controller, says which model it serves, gets
// that model's spec (wire::ModelServeSpec: the model and its trainer, not the
// workflow), builds it (ModelServer) and serves Generate,
// Update, checkpoint and weight requests until told to stop. A second socket
// sends heartbeats, so the controller notices a worker that died or hangs,
// and the worker notices a controller that went away. The same function runs
// in a thread of the controller's process (inproc://) and as `troupe worker`.
#pragma once

#include <atomic>
#include <iosfwd>
#include <string>

#include "comms/curve.h"

namespace troupe {

struct WorkerOptions {
  std::string endpoint;  // the controller's worker endpoint
  std::string model;     // the physical model to serve
  int replica = 0;
  Security security;
  int heartbeat_ms = 200;
  int controller_timeout_ms = 60000;  // exit when the controller is silent this long
  int join_timeout_ms = 60000;        // waiting for the controller's welcome
  bool announce = false;              // log "serving" at info (a `troupe worker` process), else at debug
};

// Routing identity of a worker's request socket ("model#replica").
std::string WorkerIdentity(const std::string& model, int replica);

// Serves until Shutdown, `stop`, or a silent controller; returns why it ended.
// Throws CommsError/TimeoutError when it cannot join; request errors are sent
// back to the controller as Failure replies.
std::string ServeModel(const WorkerOptions& options, const std::atomic<bool>* stop);

}  // namespace troupe
