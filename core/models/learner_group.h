// Data-parallel learners on LibTorch's c10d: the N workers that serve one
// physical model each train on their share of an update's records, and their
// gradients are summed before every optimiser step, so the N copies stay
// identical without shipping parameters: with ProcessGroupNCCL when every
// learner's model is on its own CUDA device and the build has NCCL, else with
// ProcessGroupGloo (on the host, whatever the device). They meet at a
// TCPStore that the controller serves (LearnerStore); a new group (a new key
// prefix) forms whenever the set of live learners changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace troupe {

// One learner's place in its group. world <= 1: a lone learner, no group.
struct LearnerGroupSpec {
  int rank = 0;
  int world = 1;
  std::string store_host;  // the controller's TCPStore
  int store_port = 0;
  std::string prefix;      // the group's keys in the store: one per model and membership
  int timeout_ms = 600000; // rendezvous and each collective
  std::string device = "cpu";  // the learner's model: "cpu" or "cuda:N"
};

// Whether this build can sum over NCCL (a CUDA LibTorch with c10d's NCCL
// backend), and over Gloo (PyTorch's wheels ship LibTorch without Gloo's headers).
bool LearnersHaveNccl();
bool LearnersHaveGloo();

// The TCPStore server: the controller's side of the rendezvous (any port when 0).
class LearnerStore {
 public:
  explicit LearnerStore(int port = 0);
  ~LearnerStore();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A learner's membership of its group. Joining blocks until all
// `world` learners joined (or the timeout); a lost peer makes the next
// collective throw CommsError.
class LearnerGroup {
 public:
  explicit LearnerGroup(const LearnerGroupSpec& spec);
  ~LearnerGroup();
  const LearnerGroupSpec& spec() const;
  int rank() const { return spec().rank; }
  int world() const { return spec().world; }
  // "nccl" or "gloo": NCCL only when every learner is on a CUDA device of its own.
  const std::string& backend() const;
  // Sums the tensors over the group, in place (one collective for all of them).
  void AllReduceSum(std::vector<at::Tensor>& tensors);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
