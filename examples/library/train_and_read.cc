// troupe as a library: load a workflow file, override a few fields, compile
// it, train, and read the run's metrics back, without the `troupe` command.
// usage: train_and_read WORKFLOW OUT_DIR [ITERATIONS]
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/run/train_run.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: train_and_read WORKFLOW OUT_DIR [ITERATIONS]\n";
    return 2;
  }
  const std::string iterations = argc > 3 ? argv[3] : "3";
  try {
    // 1. Load and override, as `troupe train --set` does; errors carry file:line:col.
    troupe::LoadedWorkflow loaded = troupe::LoadWorkflowFile(argv[1]);
    troupe::ApplyOverride(loaded, "trainer.iterations=" + iterations);
    // 2. Validate and compile the whole graph before anything runs.
    const troupe::CompiledWorkflow workflow = troupe::CompileWorkflow(loaded);
    // 3. Train into a run folder, quietly.
    troupe::TrainOptions options;
    options.out_dir = argv[2];
    options.progress = false;
    options.final_eval = false;
    std::ostringstream log;
    const troupe::TrainResult result = troupe::Train(workflow, options, log);
    // 4. Read metrics.jsonl: one JSON object per iteration.
    std::ifstream metrics(result.run_dir + "/metrics.jsonl");
    std::cout << "iteration  episodes  mean reward of each trained role\n";
    for (std::string line; std::getline(metrics, line);) {
      const nlohmann::json m = nlohmann::json::parse(line);
      std::cout << "iteration " << m.at("iteration").get<int>() << "  " << m.at("episodes").get<int>();
      for (const auto& [key, value] : m.items()) {
        if (key.rfind("reward/", 0) == 0) std::cout << "  " << key << "=" << value.get<double>();
      }
      std::cout << "\n";
    }
    std::cout << "trained " << result.iterations << " iterations in " << result.run_dir << "\n";
    return 0;
  } catch (const troupe::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const troupe::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  }
}
