// Rollout throughput of the default workflow's game on one model: Red-Black
// episodes per second at 1, 16 and 256 concurrent episodes, and
// the number of model forward calls per game round (it must not grow with the
// number of episodes: every pending decision of every episode is one batch).
// Pass `--direct` to call the model in this thread (LocalPolicy) instead of
// through a model worker over inproc:// (the production path): the difference
// is what the runtime's messaging costs.
//
// Each size runs twice, interleaved: with prefix reuse (each episode's
// agents share the keys and values of the prompt positions an earlier call
// of the episode encoded; the default) and without (every call encodes its
// prompt from the start). Reported per episode: the token positions the
// model's forward passes encoded, as the model pool counts them, with
// forward FLOPs ~ 2 x parameters per position.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "core/base/heap_tuning.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/serve_specs.h"
#include "workflows/specs/model_spec.h"
#include "workflows/rollout/rollout.h"
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
    Rollout rollout(w.rollout, *pool);
    std::printf("%-10s %9s %13s %13s %8s %11s %14s %14s %13s\n", "concurrent", "episodes", "episodes/s", "no reuse",
                "ratio", "fwd/round", "positions/ep", "no reuse", "overlapped");
    double positions = 0.0, positions_plain = 0.0, calls_per_episode = 0.0;
    int64_t last_calls = 0;
    std::string json = "{";
    for (int concurrent : {1, 16, 256}) {
      const int repeats = concurrent == 1 ? 8 : concurrent == 16 ? 2 : 1;
      // Index 1: prefix reuse (the default), 0: without, 2: reuse with games stepped during generation.
      double seconds[3] = {0, 0, 0}, encoded[3] = {0, 0, 0};
      int64_t forward = 0, rounds = 0;
      int episodes = 0;
      for (int r = 0; r < repeats; ++r) {
        for (int variant : {1, 0, 2}) {
          const int reuse = variant == 0 ? 0 : 1;
          RolloutOptions o;
          o.episodes = concurrent;
          o.group_size = concurrent;
          o.seed = static_cast<uint64_t>(r + 1);
          o.guided = w.run.guided_choices;  // decode as the workflow trains
          o.prefix_cache = reuse == 1;
          o.overlap_environment = variant == 2;
          Rng rng(static_cast<uint64_t>(r + 1));
          const auto t0 = std::chrono::steady_clock::now();
          RolloutBatch b = rollout.Run(o, rng);
          seconds[variant] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          encoded[variant] += static_cast<double>(b.encoded_positions);
          if (variant == 1) {
            episodes += concurrent;
            forward += b.forward_calls;
            rounds += b.turns;
            last_calls = static_cast<int64_t>(b.records.size()) / concurrent;
          }
        }
      }
      const double eps = episodes / seconds[1], eps_plain = episodes / seconds[0],
                   eps_overlap = episodes / seconds[2];
      const double per_round = static_cast<double>(forward) / rounds;
      positions = encoded[1] / episodes;
      positions_plain = encoded[0] / episodes;
      calls_per_episode = static_cast<double>(last_calls);
      std::printf("%-10d %9d %13.2f %13.2f %7.2fx %11.1f %14.0f %14.0f %13.2f\n", concurrent, episodes, eps, eps_plain,
                  eps / eps_plain, per_round, positions, positions_plain, eps_overlap);
      const std::string n = std::to_string(concurrent);
      json += (json.size() > 1 ? "," : "") + std::string("\"episodes_per_s_") + n + "\":" + std::to_string(eps) +
              ",\"episodes_per_s_" + n + "_no_prefix_reuse\":" + std::to_string(eps_plain) +
              ",\"episodes_per_s_" + n + "_overlap_environment\":" + std::to_string(eps_overlap) +
              ",\"forward_calls_per_round_" + n + "\":" + std::to_string(per_round) +
              ",\"encoded_positions_per_episode_" + n + "\":" + std::to_string(positions) +
              ",\"encoded_positions_per_episode_" + n + "_no_prefix_reuse\":" + std::to_string(positions_plain);
    }
    const double parameters =
        static_cast<double>(ModelPool({ModelConfigOf(MakeHubSpec(w).models.at(0))}, 1).ParameterCount(0));
    std::printf(
        "\nforward work per episode (256 episodes, %.0f model calls each; FLOPs ~ 2 x %.0f parameters x positions)\n",
        calls_per_episode, parameters);
    std::printf("  every call from the start   %8.0f positions  %6.3f GFLOP\n", positions_plain,
                2 * parameters * positions_plain / 1e9);
    std::printf("  with prefix reuse           %8.0f positions  %6.3f GFLOP  (%.1fx fewer)\n", positions,
                2 * parameters * positions / 1e9, positions_plain / positions);
    json += ",\"parameters\":" + std::to_string(parameters) + "}";
    std::cout << json << "\n";
  } catch (const std::exception& e) {
    std::cerr << "rollout_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
