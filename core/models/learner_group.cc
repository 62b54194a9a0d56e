// LearnerStore and LearnerGroup over c10d's TCPStore and ProcessGroupGloo.
#define USE_C10D_GLOO 1
#include "core/models/learner_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <cstdlib>

#include "core/base/errors.h"

namespace troupe {

namespace {

bool IsLoopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

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
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
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
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    // Peers reach a learner on loopback when the store is there; else on the
    // interface GLOO_SOCKET_IFNAME names (as in PyTorch), else at its host name's address.
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    options->devices.push_back(IsLoopback(spec.store_host) ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                               : interface != nullptr && *interface != '\0'
                                   ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                   : c10d::ProcessGroupGloo::createDefaultDevice());
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.rank, spec.world, options);
  } catch (const std::exception& e) {
    throw CommsError("learner " + std::to_string(spec.rank) + " of " + std::to_string(spec.world) + " could not join " +
                     spec.prefix + " at " + spec.store_host + ":" + std::to_string(spec.store_port) + ": " + e.what());
  }
}

LearnerGroup::~LearnerGroup() = default;

const LearnerGroupSpec& LearnerGroup::spec() const { return impl_->spec; }

void LearnerGroup::AllReduceSum(std::vector<at::Tensor>& tensors) {
  if (!impl_->group || tensors.empty()) return;
  // One flat buffer on the host: one collective, whatever the tensors' devices.
  std::vector<torch::Tensor> flat_parts;
  flat_parts.reserve(tensors.size());
  for (const auto& t : tensors) flat_parts.push_back(t.detach().to(torch::kCPU, torch::kFloat).reshape({-1}));
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
