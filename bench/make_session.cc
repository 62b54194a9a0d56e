// Makes a long session file from a short recorded one, for the viewer's
// frame-time benchmark: the recorded iterations are repeated up to N, their
// metrics given a trend so the curves are not flat, and the per-call events
// (messages, states) kept for every `detail_every`-th iteration.
// Usage: make_session IN OUT [iterations=10000] [detail_every=50]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "comms/session_file.h"

using namespace troupe;

namespace {

// The iteration an event belongs to (0: none).
int IterationOf(const session::Event& e) {
  switch (e.body_case()) {
    case session::Event::kEpisodeStart: return e.episode_start().iteration();
    case session::Event::kEpisodeEnd: return e.episode_end().iteration();
    case session::Event::kNode: return e.node().iteration();
    case session::Event::kMessage: return e.message().iteration();
    case session::Event::kSnapshot: return e.snapshot().iteration();
    case session::Event::kCredit: return e.credit().iteration();
    case session::Event::kMetrics: return e.metrics().iteration();
    case session::Event::kThroughput: return e.throughput().iteration();
    default: return 0;
  }
}

void SetIteration(session::Event* e, int it) {
  switch (e->body_case()) {
    case session::Event::kEpisodeStart: e->mutable_episode_start()->set_iteration(it); break;
    case session::Event::kEpisodeEnd: e->mutable_episode_end()->set_iteration(it); break;
    case session::Event::kNode: e->mutable_node()->set_iteration(it); break;
    case session::Event::kMessage: e->mutable_message()->set_iteration(it); break;
    case session::Event::kSnapshot: e->mutable_snapshot()->set_iteration(it); break;
    case session::Event::kCredit: e->mutable_credit()->set_iteration(it); break;
    case session::Event::kMetrics: e->mutable_metrics()->set_iteration(it); break;
    case session::Event::kThroughput: e->mutable_throughput()->set_iteration(it); break;
    default: break;
  }
}

bool Detail(const session::Event& e) {
  return e.has_node() || e.has_message() || e.has_snapshot() || e.has_episode_start() ||
         (e.has_episode_end() && !e.episode_end().final_state().empty());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_session IN OUT [iterations] [detail_every]\n");
    return 2;
  }
  const int n = argc > 3 ? std::stoi(argv[3]) : 10000;
  const int every = argc > 4 ? std::stoi(argv[4]) : 50;
  SessionContents in = ReadSessionFile(argv[1]);
  std::map<int, std::vector<const session::Event*>> by_iteration;
  std::vector<const session::Event*> head;
  for (const auto& e : in.events) {
    const int it = IterationOf(e);
    if (it > 0) by_iteration[it].push_back(&e);
    else if (!e.has_run_end()) head.push_back(&e);
  }
  if (by_iteration.empty()) {
    std::fprintf(stderr, "make_session: %s has no iterations\n", argv[1]);
    return 1;
  }
  SessionWriter out(argv[2]);
  uint64_t seq = 0;
  auto write = [&](session::Event e) {
    e.set_sequence(seq++);
    out.Write(e);
  };
  for (const auto* e : head) write(*e);
  const int S = static_cast<int>(by_iteration.size());
  std::vector<int> source;
  for (const auto& [it, events] : by_iteration) source.push_back(it);
  for (int t = 1; t <= n; ++t) {
    const bool detail = t % every == 0 || t <= S;
    for (const auto* src : by_iteration[source[(t - 1) % S]]) {
      if (!detail && Detail(*src)) continue;
      session::Event e = *src;
      SetIteration(&e, t);
      const double trend = 1.0 + 0.5 * std::sin(t / 700.0) + static_cast<double>(t) / n;
      if (e.has_metrics()) {
        for (auto& [k, v] : *e.mutable_metrics()->mutable_values()) v = v * trend;
      }
      if (e.has_credit()) e.mutable_credit()->set_reward_mean(e.credit().reward_mean() * trend);
      write(e);
    }
  }
  session::Event end;
  end.mutable_run_end()->set_iterations(n);
  write(end);
  out.Flush();
  std::printf("wrote %s: %llu events, %d iterations (per-call detail every %d)\n", argv[2],
              static_cast<unsigned long long>(seq), n, every);
  return 0;
}
