// The controller's worker hub: joining, requests, heartbeats, losses.
#include "workflows/runtime/worker_hub.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>

#include <spdlog/spdlog.h>

#include "comms/curve.h"
#include "comms/endpoint.h"
#include "workflows/specs/model_spec.h"
#include "workflows/runtime/model_worker.h"
#include "workflows/runtime/wire_records.h"

namespace troupe {

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string Ms(double seconds) { return std::to_string(static_cast<int64_t>(seconds * 1000)) + " ms"; }

}  // namespace

WorkerHub::WorkerHub(HubSpec spec, std::function<void(const WorkerNotice&)> notify)
    : spec_(std::move(spec)), notify_(std::move(notify)) {
  for (const auto& m : spec_.models) configs_.push_back(ModelConfigOf(m));
  const RuntimeSettings& rt = spec_.runtime;
  endpoint_ = rt.endpoint.empty() ? UniqueInprocEndpoint("troupe-workers") : rt.endpoint;
  SocketOptions so;
  so.security.keys_dir = rt.keys_dir;
  so.receive_hwm = 100000;
  so.send_hwm = 100000;
  if (so.security.enabled()) auth_ = std::make_unique<CurveAuthenticator>(so.security);
  socket_ = FramedSocket::Bind(zmq::socket_type::router, endpoint_, so);
  if (endpoint_.rfind("tcp://", 0) == 0) endpoint_ = socket_->endpoint();  // port 0 resolved

  std::vector<int> replicas(configs_.size(), 1);
  std::vector<bool> external(configs_.size(), false);
  for (const auto& p : rt.external) {
    replicas[p.model] = p.replicas;
    external[p.model] = true;
  }
  for (size_t m = 0; m < configs_.size(); ++m) {
    for (int r = 0; r < replicas[m]; ++r) {
      Worker w;
      w.model = static_cast<int>(m);
      w.replica = r;
      w.identity = WorkerIdentity(configs_[m].name, r);
      workers_.push_back(w);
    }
  }
  auto errors = std::make_shared<std::pair<std::mutex, std::vector<std::string>>>();
  for (size_t m = 0; m < configs_.size(); ++m) {
    if (external[m]) continue;
    WorkerOptions o;
    o.endpoint = endpoint_;
    o.model = configs_[m].name;
    o.security = so.security;
    o.heartbeat_ms = rt.heartbeat_ms;
    o.controller_timeout_ms = std::max(rt.request_timeout_ms, 60000);
    threads_.emplace_back([o, this, errors] {
      try {
        ServeModel(o, &stop_);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(errors->first);
        errors->second.push_back("in-process worker " + o.model + ": " + e.what());
      }
    });
  }
  try {
    const double deadline = Now() + rt.join_timeout_ms / 1000.0;
    bool told = false;
    while (true) {
      std::vector<std::string> missing;
      for (const auto& w : workers_) {
        if (!w.joined) missing.push_back(w.identity);
      }
      if (missing.empty()) break;
      {
        std::lock_guard<std::mutex> lock(errors->first);
        if (!errors->second.empty()) throw CommsError(errors->second.front());
      }
      if (!told && !rt.external.empty()) {
        std::string commands;
        for (const auto& w : workers_) {
          if (!w.joined && external[w.model]) {
            commands += "\n  troupe worker --model " + configs_[w.model].name + " --replica " +
                        std::to_string(w.replica) + " --connect " + endpoint_ +
                        (rt.keys_dir.empty() ? "" : " --keys " + rt.keys_dir);
          }
        }
        // At warning level: the run cannot start until they join, so --quiet still says how.
        spdlog::warn("waiting for {} model worker(s) at {}: start each with{}", missing.size(), endpoint_, commands);
        told = true;
      }
      if (Now() > deadline) {
        std::string list;
        for (const auto& id : missing) list += (list.empty() ? "" : ", ") + id;
        throw TimeoutError("waited " + std::to_string(rt.join_timeout_ms / 1000) + " s at " + endpoint_ +
                           " for model workers that never joined: " + list);
      }
      wire::Envelope env;
      std::string identity;
      if (socket_->Receive(&env, std::chrono::milliseconds(100), &identity, &attachment_)) Handle(identity, env);
    }
  } catch (...) {
    stop_ = true;
    for (auto& t : threads_) t.join();
    throw;
  }
}

WorkerHub::~WorkerHub() {
  wire::Envelope bye;
  bye.mutable_shutdown();
  for (const auto& w : workers_) {
    if (w.alive) socket_->Send(bye, w.identity, true);
  }
  // Give in-process workers a moment to read it; the stop flag ends them regardless.
  stop_ = true;
  for (auto& t : threads_) t.join();
}

void WorkerHub::Handle(const std::string& identity, const wire::Envelope& env) {
  const bool heartbeat = identity.size() > 3 && identity.compare(identity.size() - 3, 3, "/hb") == 0;
  const std::string base = heartbeat ? identity.substr(0, identity.size() - 3) : identity;
  int index = -1;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].identity == base) index = static_cast<int>(i);
  }
  if (env.has_hello()) {
    wire::Envelope reply;
    if (index < 0) {
      std::string names;
      for (const auto& m : configs_) names += (names.empty() ? "" : ", ") + m.name;
      reply.mutable_failure()->set_message("this run declares no worker " + base + " (models: " + names + ")");
      socket_->Send(reply, identity, true);
      return;
    }
    Worker& w = workers_[index];
    if (w.joined) return;  // a repeated hello
    w.joined = w.alive = true;
    w.last_heard = Now();
    auto* welcome = reply.mutable_welcome();
    *welcome->mutable_spec() = spec_.models.at(w.model);
    socket_->Send(reply, identity);
    if (notify_)
      notify_({configs_[w.model].name, w.replica, false,
               "from " + env.hello().host() + " pid " + std::to_string(env.hello().pid()), endpoint_});
    return;
  }
  if (index < 0 || !workers_[index].alive) return;  // unknown, or lost already: ignore
  workers_[index].last_heard = Now();
  if (heartbeat) {
    wire::Envelope ack;
    ack.mutable_heartbeat()->set_sent_at(Now());
    socket_->Send(ack, identity, true);
    return;
  }
  auto it = pending_.find(env.request_id());
  if (it == pending_.end() || it->second.worker != index) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (env.has_failure()) {
    if (p.on_failure) {
      p.on_failure(env.failure().message());
      return;
    }
    pending_.clear();
    throw CommsError("model worker " + base + " failed: " + env.failure().message());
  }
  if (env.has_generated()) {
    workers_[index].forward_calls = env.generated().forward_calls();
    workers_[index].encoded_positions = env.generated().encoded_positions();
  }
  if (env.has_done()) workers_[index].forward_calls = env.done().forward_calls();
  p.on_reply(env);
}

int WorkerHub::Send(int worker, wire::Envelope& request, std::function<void(const wire::Envelope&)> on_reply,
                    std::function<void()> on_lost, std::string_view attachment) {
  return Send(worker, request, std::move(on_reply), std::move(on_lost), nullptr, attachment);
}

int WorkerHub::Send(int worker, wire::Envelope& request, std::function<void(const wire::Envelope&)> on_reply,
                    std::function<void()> on_lost, std::function<void(const std::string&)> on_failure,
                    std::string_view attachment) {
  const uint64_t id = next_request_++;
  request.set_request_id(id);
  Pending p;
  p.worker = worker;
  p.sent_at = Now();
  p.on_reply = std::move(on_reply);
  p.on_lost = std::move(on_lost);
  p.on_failure = std::move(on_failure);
  pending_[id] = std::move(p);
  const bool sent = attachment.empty() ? socket_->Send(request, workers_[worker].identity)
                                       : socket_->SendWithAttachment(request, attachment, workers_[worker].identity);
  if (!sent) Lose(worker, "its connection is gone");
  return static_cast<int>(id);
}

void WorkerHub::Lose(int worker, const std::string& why) {
  Worker& w = workers_[worker];
  if (!w.alive) return;
  w.alive = false;
  ++lost_;
  const std::string name = configs_[w.model].name;
  const std::string message = "model worker " + w.identity + " at " + endpoint_ + " lost: " + why;
  spdlog::warn("{}", message);
  if (notify_) notify_({name, w.replica, true, why, endpoint_});
  std::vector<std::function<void()>> lost_calls;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.worker == worker) {
      lost_calls.push_back(std::move(it->second.on_lost));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  if (!spec_.runtime.continue_on_loss) {
    pending_.clear();
    throw WorkerLostError(message + " (runtime.on_worker_loss is FAIL)");
  }
  if (Alive(w.model).empty()) {
    pending_.clear();
    throw WorkerLostError(message + "; model " + name + " has no workers left");
  }
  for (auto& f : lost_calls) f();
}

void WorkerHub::AwaitAll() {
  const RuntimeSettings& rt = spec_.runtime;
  while (!pending_.empty()) {
    wire::Envelope env;
    std::string identity;
    if (socket_->Receive(&env, std::chrono::milliseconds(std::min(rt.heartbeat_ms, 50)), &identity, &attachment_)) {
      Handle(identity, env);
    }
    const double now = Now();
    std::vector<std::pair<int, std::string>> to_lose;
    for (const auto& [id, p] : pending_) {
      const Worker& w = workers_[p.worker];
      if (now - w.last_heard > rt.worker_timeout_ms / 1000.0) {
        to_lose.emplace_back(p.worker, "no heartbeat for " + Ms(now - w.last_heard) + " (worker_timeout_ms " +
                                           std::to_string(rt.worker_timeout_ms) + ")");
      } else if (now - p.sent_at > rt.request_timeout_ms / 1000.0) {
        to_lose.emplace_back(p.worker, "no answer to a request in " + Ms(now - p.sent_at) + " (request_timeout_ms " +
                                           std::to_string(rt.request_timeout_ms) + ")");
      }
    }
    for (const auto& [worker, why] : to_lose) Lose(worker, why);
  }
}

std::vector<int> WorkerHub::Alive(int model) const {
  std::vector<int> out;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].model == model && workers_[i].alive) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<std::vector<Generation>> WorkerHub::Generate(const std::vector<GenerateBatch>& batches) {
  std::vector<std::vector<Generation>> out(batches.size());
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    const GenerateBatch& b = batches[bi];
    out[bi].resize(b.queries.size());
    const std::vector<int> alive = Alive(b.model);
    if (alive.empty()) throw WorkerLostError("no live worker serves model " + configs_[b.model].name);
    const size_t n = b.queries.size();
    const size_t parts = std::min(alive.size(), n);
    for (size_t c = 0; c < parts; ++c) {
      const size_t begin = n * c / parts, end = n * (c + 1) / parts;
      wire::Envelope req;
      ToWire(b, begin, end, parts == 1 ? b.seed : Rng::Mix(b.seed, c), req.mutable_generate());
      std::vector<Generation>* rows = &out[bi];
      const std::string who = workers_[alive[c]].identity;
      Send(
          alive[c], req,
          [rows, begin, end, who](const wire::Envelope& reply) {
            if (!reply.has_generated() || reply.generated().rows_size() != static_cast<int>(end - begin)) {
              throw CommsError("model worker " + who + " answered a generate request with the wrong rows");
            }
            for (size_t i = begin; i < end; ++i)
              (*rows)[i] = FromWire(reply.generated().rows(static_cast<int>(i - begin)));
          },
          [rows, begin, end] {
            for (size_t i = begin; i < end; ++i) (*rows)[i].lost = true;
          });
    }
  }
  AwaitAll();
  return out;
}

std::vector<ModelTrainStats> WorkerHub::TrainOnWorkers(const std::vector<CallRecord>& records, bool supervised,
                                                       int steps) {
  std::vector<ModelTrainStats> stats(configs_.size());
  std::vector<wire::Envelope> requests(configs_.size());
  for (auto& r : requests) {
    r.mutable_update()->set_supervised(supervised);
    r.mutable_update()->set_steps(steps);
  }
  for (const auto& rec : records) ToWire(rec, requests.at(rec.model).mutable_update()->add_records());
  // Every live replica of a model is one of its data-parallel learners: each
  // is sent the whole update and trains on its share, summing gradients with
  // the others. A learner lost midway makes the others fail their collective
  // and go back to where the update began; the update is then sent again to
  // the survivors, as a new group.
  struct Attempt {
    std::vector<int> learners;
    std::vector<std::optional<ModelTrainStats>> replies;
    std::string failure;
  };
  std::vector<int> todo;
  for (int m = 0; m < size(); ++m) todo.push_back(m);
  while (!todo.empty()) {
    std::vector<Attempt> attempts(configs_.size());
    for (int m : todo) {
      Attempt& a = attempts[m];
      a.learners = Alive(m);
      a.replies.resize(a.learners.size());
      wire::LearnerGroup* group = requests[m].mutable_update()->mutable_learners();
      *group = GroupOf(m, a.learners);
      for (size_t r = 0; r < a.learners.size(); ++r) {
        group->set_rank(static_cast<int>(r));
        Send(
            a.learners[r], requests[m],  // serialised here: the next learner's rank may be set
            [&a, r](const wire::Envelope& reply) { a.replies[r] = FromWire(reply.updated().stats()); }, [] {},
            [&a, this, w = a.learners[r]](const std::string& why) {
              if (a.failure.empty()) a.failure = "model worker " + workers_[w].identity + " failed: " + why;
            });
      }
    }
    AwaitAll();
    std::vector<int> retry;
    for (int m : todo) {
      Attempt& a = attempts[m];
      const bool lost = std::any_of(a.learners.begin(), a.learners.end(), [&](int w) { return !workers_[w].alive; });
      if (!a.failure.empty()) {
        if (!lost) throw CommsError(a.failure);
        spdlog::warn("model {}: a data-parallel learner was lost during an update; {} learner(s) take it again",
                     configs_[m].name, Alive(m).size());
        groups_[m].regroup = true;
        retry.push_back(m);
        ++retaken_;
        continue;
      }
      // Every live learner finished (one lost after its last collective changes nothing).
      const ModelTrainStats* first = nullptr;
      int64_t positions = 0;  // each learner encodes its own share of the records
      for (size_t r = 0; r < a.learners.size(); ++r) {
        if (!a.replies[r]) continue;
        positions += a.replies[r]->positions;
        if (first == nullptr) first = &*a.replies[r];
        if (a.replies[r]->parameter_digest != first->parameter_digest) {
          throw CommsError("the data-parallel learners of model " + configs_[m].name +
                           " are out of step after an update: " + workers_[a.learners[r]].identity +
                           "'s parameters differ from the first learner's");
        }
      }
      if (first != nullptr) {  // none: all were lost, and Lose has thrown
        stats[m] = *first;
        stats[m].positions = positions;
      }
    }
    todo = retry;
  }
  return stats;
}

wire::LearnerGroup WorkerHub::GroupOf(int model, const std::vector<int>& learners) {
  wire::LearnerGroup g;
  g.set_world(static_cast<int>(learners.size()));
  if (learners.size() < 2) return g;
  if (!store_) store_ = std::make_unique<LearnerStore>(0);
  Group& group = groups_[model];
  if (group.regroup || group.members != learners) {
    ++group.generation;
    group.members = learners;
    group.regroup = false;
  }
  g.set_store_port(store_->port());
  g.set_prefix(configs_[model].name + "/" + std::to_string(group.generation));
  g.set_timeout_ms(spec_.runtime.request_timeout_ms);
  return g;
}

void WorkerHub::OnPrimaries(const std::function<wire::Envelope(int)>& request,
                            const std::function<void(int, const wire::Envelope&)>& on_reply) {
  std::vector<int> todo;
  for (int m = 0; m < size(); ++m) todo.push_back(m);
  while (!todo.empty()) {
    std::vector<int> retry;
    for (int m : todo) {
      wire::Envelope req = request(m);
      Send(
          Alive(m).at(0), req, [&on_reply, m](const wire::Envelope& reply) { on_reply(m, reply); },
          [&retry, m] { retry.push_back(m); });
    }
    AwaitAll();
    todo = retry;
  }
}

void WorkerHub::SyncReplicas(int model) {
  const std::vector<int> alive = Alive(model);
  if (alive.size() < 2) return;
  // The parameters travel as attachments: copied once out of the primary's
  // reply, written once into each replica's frame.
  std::string weights;
  bool answered = false;
  wire::Envelope get;
  get.mutable_weights()->set_get(true);
  Send(
      alive[0], get,
      [this, &weights, &answered](const wire::Envelope&) {
        answered = true;
        weights.assign(attachment_.view());
      },
      [] {});
  AwaitAll();
  if (!answered) return;  // the primary was lost meanwhile: the next update syncs
  if (weights.empty()) {
    throw CommsError("model worker " + workers_[alive[0]].identity + " answered without its parameters attached");
  }
  wire::Envelope set;
  set.mutable_weights();
  for (size_t i = 1; i < alive.size(); ++i) {
    if (workers_[alive[i]].alive)
      Send(
          alive[i], set, [](const wire::Envelope&) {}, [] {}, weights);
  }
  AwaitAll();
}

std::vector<HybridStepStats> WorkerHub::HybridStep(const HybridBatch& batch, const HybridSettings& settings) {
  std::vector<HybridStepStats> stats(configs_.size());
  std::vector<wire::Envelope> requests(configs_.size());
  for (int m = 0; m < size(); ++m) ToWire(ExamplesOfModel(batch, m, m), settings, requests[m].mutable_hybrid_step());
  OnPrimaries([&](int m) { return requests[m]; },
              [&](int m, const wire::Envelope& reply) { stats[m] = FromWire(reply.hybrid_stepped()); });
  for (int m = 0; m < size(); ++m) SyncReplicas(m);
  return stats;
}

std::vector<ModelTrainStats> WorkerHub::Update(const std::vector<CallRecord>& records) {
  return TrainOnWorkers(records, false, 0);
}

std::vector<ModelTrainStats> WorkerHub::Supervised(const std::vector<CallRecord>& demos, int steps) {
  // A few steps a request: a long warm start of a large model must not look
  // like a silent worker (request_timeout_ms bounds each request).
  constexpr int kStepsPerRequest = 10;
  if (steps <= kStepsPerRequest) return TrainOnWorkers(demos, true, steps);
  std::vector<ModelTrainStats> total;
  for (int done = 0; done < steps; done += kStepsPerRequest) {
    std::vector<ModelTrainStats> part = TrainOnWorkers(demos, true, std::min(kStepsPerRequest, steps - done));
    if (total.empty()) {
      total = std::move(part);
      continue;
    }
    for (size_t m = 0; m < total.size() && m < part.size(); ++m) {
      const int steps_before = total[m].steps;
      total[m] = part[m];  // the latest loss and entropy
      total[m].steps += steps_before;
    }
  }
  return total;
}

void WorkerHub::Save(const std::string& dir) {
  OnPrimaries(
      [&](int) {
        wire::Envelope req;
        req.mutable_checkpoint()->set_dir(dir);
        return req;
      },
      [](int, const wire::Envelope&) {});
}

void WorkerHub::SaveSnapshot(int model, const std::string& dir) {
  wire::Envelope req;
  req.mutable_checkpoint()->set_dir(dir);
  req.mutable_checkpoint()->set_parameters_only(true);
  for (;;) {
    const std::vector<int> alive = Alive(model);
    if (alive.empty()) throw WorkerLostError("no live worker serves model " + configs_.at(model).name);
    bool lost = false;
    Send(
        alive.front(), req, [](const wire::Envelope&) {}, [&lost] { lost = true; });
    AwaitAll();
    if (!lost) return;
  }
}

void WorkerHub::Load(const std::string& dir, bool with_optimizer) {
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i].alive) continue;
    wire::Envelope req;
    req.mutable_checkpoint()->set_dir(dir);
    req.mutable_checkpoint()->set_load(true);
    req.mutable_checkpoint()->set_with_optimizer(with_optimizer);
    Send(
        static_cast<int>(i), req, [](const wire::Envelope&) {}, [] {});
  }
  AwaitAll();
}

int64_t WorkerHub::forward_calls() const {
  int64_t n = 0;
  for (const auto& w : workers_) n += w.forward_calls;
  return n;
}

int64_t WorkerHub::encoded_positions() const {
  int64_t n = 0;
  for (const auto& w : workers_) n += w.encoded_positions;
  return n;
}

}  // namespace troupe
