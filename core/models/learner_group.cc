// LearnerStore and LearnerGroup over c10d's TCPStore and ProcessGroupGloo or,
// in a build with TROUPE_WITH_NCCL (CMake: a CUDA LibTorch and nccl.h), ProcessGroupNCCL.
// (PyTorch's wheels may ship LibTorch without Gloo's headers: then only NCCL.)
#if __has_include(<gloo/config.h>) && __has_include(<gloo/algorithm.h>)
#define USE_C10D_GLOO 1
#define TROUPE_WITH_GLOO 1
#else
#define TROUPE_WITH_GLOO 0
#endif
#ifndef TROUPE_WITH_NCCL
#define TROUPE_WITH_NCCL 0
#endif
#include "core/models/learner_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#if TROUPE_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if TROUPE_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/torch.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <set>

#include "core/base/errors.h"
#include "core/models/torch_compat.h"

namespace troupe {

namespace {

bool IsLoopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

// NCCL allows one rank per GPU: the learners tell each other (through the
// store) which host and device they train on, and NCCL is chosen only when
// each is a CUDA device no other learner uses.
bool EachOnItsOwnGpu(c10d::Store& store, const LearnerGroupSpec& spec) {
  if (spec.device.rfind("cuda", 0) != 0) return false;
  const std::string mine = HostName() + "/" + spec.device;
  store.set("device/" + std::to_string(spec.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::set<std::string> seen;
  bool all_cuda = true;
  for (int r = 0; r < spec.world; ++r) {
    const std::vector<uint8_t> v = store.get("device/" + std::to_string(r));
    const std::string theirs(v.begin(), v.end());
    all_cuda = all_cuda && theirs.find("/cuda") != std::string::npos;
    seen.insert(theirs);
  }
  return all_cuda && static_cast<int>(seen.size()) == spec.world;
}

// The collectives' common base: c10d::Backend since LibTorch 2.0.
#if TROUPE_TORCH_AT_LEAST(2, 0)
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

}  // namespace

bool LearnersHaveNccl() { return TROUPE_WITH_NCCL != 0; }
bool LearnersHaveGloo() { return TROUPE_WITH_GLOO != 0; }

struct LearnerStore::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

LearnerStore::LearnerStore(int port) : impl_(std::make_unique<Impl>()) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = true;
  o.waitWorkers = false;
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>("0.0.0.0", o);
  } catch (const std::exception& e) {
    throw CommsError("cannot serve the learners' rendezvous store on port " + std::to_string(port) + ": " + e.what());
  }
}

LearnerStore::~LearnerStore() = default;

int LearnerStore::port() const { return impl_->store->getPort(); }

struct LearnerGroup::Impl {
  LearnerGroupSpec spec;
  std::string backend = "gloo";
  c10::intrusive_ptr<CollectiveBackend> group;
  bool on_device = false;  // NCCL sums on the learners' GPUs; Gloo on the host
};

LearnerGroup::LearnerGroup(const LearnerGroupSpec& spec) : impl_(std::make_unique<Impl>()) {
  impl_->spec = spec;
  if (spec.world < 2) return;
  if (spec.rank < 0 || spec.rank >= spec.world) {
    throw CommsError("learner rank " + std::to_string(spec.rank) + " outside a group of " + std::to_string(spec.world));
  }
  const auto timeout = std::chrono::milliseconds(spec.timeout_ms);
  try {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(spec.store_port);
    o.isServer = false;
    o.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(spec.store_host, o);
    auto store = c10::make_intrusive<c10d::PrefixStore>(spec.prefix + "/", tcp);
#if TROUPE_WITH_NCCL
    if (EachOnItsOwnGpu(*store, spec)) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, spec.rank, spec.world, options);
      impl_->backend = "nccl";
      impl_->on_device = true;
      return;
    }
#endif
#if TROUPE_WITH_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    // Peers reach a learner on loopback when the store is there; else on the
    // interface GLOO_SOCKET_IFNAME names (as in PyTorch), else at its host name's address.
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    options->devices.push_back(IsLoopback(spec.store_host) ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                               : interface != nullptr && *interface != '\0'
                                   ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                   : c10d::ProcessGroupGloo::createDefaultDevice());
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.rank, spec.world, options);
#else
    throw CommsError("this LibTorch has no Gloo headers: learners can only sum over NCCL, each on a GPU of its own");
#endif
  } catch (const std::exception& e) {
    throw CommsError("learner " + std::to_string(spec.rank) + " of " + std::to_string(spec.world) + " could not join " +
                     spec.prefix + " at " + spec.store_host + ":" + std::to_string(spec.store_port) + ": " + e.what());
  }
}

LearnerGroup::~LearnerGroup() = default;

const LearnerGroupSpec& LearnerGroup::spec() const { return impl_->spec; }

const std::string& LearnerGroup::backend() const { return impl_->backend; }

void LearnerGroup::AllReduceSum(std::vector<at::Tensor>& tensors) {
  if (!impl_->group || tensors.empty()) return;
  // One flat float32 buffer, one collective: on the GPU for NCCL, on the host for Gloo.
  const torch::Device where = impl_->on_device ? tensors.front().device() : torch::Device(torch::kCPU);
  std::vector<torch::Tensor> flat_parts;
  flat_parts.reserve(tensors.size());
  for (const auto& t : tensors) flat_parts.push_back(t.detach().to(where, torch::kFloat).reshape({-1}));
  std::vector<torch::Tensor> buffer = {torch::cat(flat_parts)};
  try {
    impl_->group->allreduce(buffer)->wait();
  } catch (const std::exception& e) {
    throw CommsError("learner " + std::to_string(rank()) + " of " + std::to_string(world()) + " (" + impl_->spec.prefix +
                     "): a collective failed, a peer is gone: " + e.what());
  }
  int64_t at = 0;
  for (auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(buffer[0].narrow(0, at, n).view(t.sizes()).to(t.device(), t.scalar_type()));
    at += n;
  }
}

}  // namespace troupe
