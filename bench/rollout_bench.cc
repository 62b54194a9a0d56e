// Rollout throughput of the default workflow's game on one model: Red-Black
// episodes per second at 1, 16 and 256 concurrent episodes, with speed-ups
// reported against the single-episode run measured in the same process, and
// the number of model forward calls per game round (it must not grow with the
// number of episodes: every pending decision of every episode is one batch).
// Pass `--direct` to call the model in this thread (LocalPolicy) instead of
// through a model worker over inproc:// (the production path): the difference
// is what the runtime's messaging costs.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/model_spec.h"
#include "workflows/run/rollout.h"
#include "workflows/runtime/model_server.h"
#include "workflows/runtime/worker_hub.h"

using namespace troupe;

int main(int argc, char** argv) {
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
    std::cout << json << "}\n";
  } catch (const std::exception& e) {
    std::cerr << "rollout_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
