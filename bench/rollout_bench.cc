// Rollout throughput of the default workflow's game on one model: Red-Black
// episodes per second at 1, 16 and 256 concurrent episodes, with speed-ups
// reported against the single-episode run measured in the same process, and
// the number of model forward calls per game round (it must not grow with the
// number of episodes: every pending decision of every episode is one batch).
// Pass `--direct` to call the model in this thread (LocalPolicy) instead of
// through a model worker over inproc:// (the production path): the difference
// is what the runtime's messaging costs.
//
// Then the work a per-seat KV cache could save: every call today encodes its
// prompt from the start, although an agent's prompt within a game extends
// what it read and wrote at its previous call. From 16 episodes' records it
// counts the token positions the forward passes encode (prompt + response,
// without padding) and the positions left when each call encodes only what
// its seat's previous call (prompt + response) did not already cover, or
// what no earlier call of the episode covered (a cache shared by the
// episode's agents), with forward FLOPs ~ 2 x parameters per position.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>
#include <iostream>
#include <string>

#include "core/base/heap_tuning.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/model_spec.h"
#include "workflows/run/rollout.h"
#include "workflows/runtime/model_server.h"
#include "workflows/runtime/worker_hub.h"

using namespace troupe;

int main(int argc, char** argv) {
  KeepFreedMemoryOnHeap();  // as the troupe binary does
  std::string file = "workflows/shipped/red_black.textproto";
  bool direct = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--direct") direct = true;
    else file = argv[i];
  }
  try {
    CompiledWorkflow w = CompileWorkflow(LoadWorkflowFile(file));
    SetTorchThreads(w.run.threads);
    std::unique_ptr<PolicyService> pool;
    if (direct) pool = std::make_unique<LocalPolicy>(MakeHubSpec(w).models);
    else pool = std::make_unique<WorkerHub>(MakeHubSpec(w));  // the production path: a model worker over inproc://
    std::printf("%s\n", direct ? "models called directly in this thread" : "models in a worker over inproc://");
    Rollout rollout(w, *pool);
    Rng rng(1);
    std::printf("%-12s %12s %12s %14s %12s\n", "concurrent", "episodes", "episodes/s", "vs 1 episode", "fwd/round");
    double base = 0.0;
    std::string json = "{";
    for (int concurrent : {1, 16, 256}) {
      const int repeats = concurrent == 1 ? 8 : concurrent == 16 ? 2 : 1;
      int episodes = 0;
      int64_t forward = 0, rounds = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < repeats; ++r) {
        RolloutOptions o;
        o.episodes = concurrent;
        o.group_size = concurrent;
        o.seed = static_cast<uint64_t>(r + 1);
        o.guided = w.run.guided_choices;  // decode as the workflow trains
        RolloutBatch b = rollout.Run(o, rng);
        episodes += concurrent;
        forward += b.forward_calls;
        rounds += b.turns;
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double eps = episodes / s;
      if (concurrent == 1) base = eps;
      const double per_round = static_cast<double>(forward) / rounds;
      std::printf("%-12d %12d %12.2f %13.1fx %12.1f\n", concurrent, episodes, eps, eps / base, per_round);
      json += (json.size() > 1 ? "," : "") + std::string("\"episodes_per_s_") + std::to_string(concurrent) +
              "\":" + std::to_string(eps) + ",\"forward_calls_per_round_" + std::to_string(concurrent) +
              "\":" + std::to_string(per_round);
    }
    // Prefix reuse: positions encoded now, and with a cache per seat or per episode.
    RolloutOptions o;
    o.episodes = 16;
    o.group_size = 16;
    o.seed = 99;
    o.guided = w.run.guided_choices;
    const RolloutBatch b = rollout.Run(o, rng);
    auto common = [](const std::vector<int>& a, const std::vector<int>& b) {
      size_t n = 0;
      while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
      return n;
    };
    double now = 0, per_seat = 0, per_episode = 0;
    std::map<std::pair<int64_t, int>, std::vector<int>> last_of_seat;  // (episode, seat) -> prompt + response
    std::map<int64_t, std::vector<std::vector<int>>> seen_in_episode;
    for (const CallRecord& r : b.records) {
      std::vector<int> sequence = r.prompt;
      sequence.insert(sequence.end(), r.response.begin(), r.response.end());
      now += static_cast<double>(sequence.size());
      const std::vector<int>& mine = last_of_seat[{r.episode, r.seat}];
      per_seat += static_cast<double>(r.prompt.size() - std::min(r.prompt.size(), common(r.prompt, mine)) + r.response.size());
      size_t best = 0;
      for (const auto& earlier : seen_in_episode[r.episode]) best = std::max(best, common(r.prompt, earlier));
      per_episode += static_cast<double>(r.prompt.size() - std::min(r.prompt.size(), best) + r.response.size());
      last_of_seat[{r.episode, r.seat}] = sequence;
      seen_in_episode[r.episode].push_back(std::move(sequence));
    }
    const double parameters =
        static_cast<double>(ModelPool({ModelConfigOf(MakeHubSpec(w).models.at(0))}, 1).ParameterCount(0));
    const double episodes = o.episodes;
    std::printf("\nforward positions per episode (16 episodes, %zu calls; FLOPs ~ 2 x %.0f parameters x positions)\n",
                b.records.size(), parameters);
    std::printf("  each call from the start (today)   %10.0f  %8.2f GFLOP\n", now / episodes,
                2 * parameters * now / episodes / 1e9);
    std::printf("  a KV cache per seat                %10.0f  %8.2f GFLOP  (%.1fx fewer)\n", per_seat / episodes,
                2 * parameters * per_seat / episodes / 1e9, now / per_seat);
    std::printf("  a prefix cache per episode         %10.0f  %8.2f GFLOP  (%.1fx fewer)\n", per_episode / episodes,
                2 * parameters * per_episode / episodes / 1e9, now / per_episode);
    json += ",\"forward_positions_per_episode\":" + std::to_string(now / episodes) +
            ",\"forward_positions_per_episode_seat_cache\":" + std::to_string(per_seat / episodes) +
            ",\"forward_positions_per_episode_episode_cache\":" + std::to_string(per_episode / episodes) +
            ",\"parameters\":" + std::to_string(parameters);
    std::cout << json << "}\n";
  } catch (const std::exception& e) {
    std::cerr << "rollout_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
