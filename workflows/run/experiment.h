// Experiments (`troupe experiment FILE`): one workflow trained (or not) and
// evaluated in every cell of a grid of overrides, for several training seeds,
// on the same evaluation games in every cell. Each cell and seed is a folder
// of its own (a run folder, eval.json, eval.episodes.jsonl); a cell and seed
// whose eval.json exists is kept, so a stopped experiment goes on where it
// stopped. The results: results.jsonl, results.md (means with 95% bootstrap
// intervals over games, and over training seeds where several; paired
// differences against a baseline cell) and plots/ (experiment_table.h).
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "workflows/config/config_loader.h"

namespace troupe {

struct ExperimentCell {
  std::string name;                 // "axis=label,axis=label" ("all" without axes)
  std::string folder;               // its folder under cells/
  std::vector<std::string> labels;  // one per axis
  std::vector<std::string> sets;    // the experiment's overrides, then each of its values'
};

struct CompiledExperiment {
  std::string file;           // the experiment file
  std::string name;           // its name (or the file's stem)
  std::string workflow_file;  // the workflow, as a path from here
  config::ExperimentSpec spec;  // defaults applied
  std::vector<std::string> axes;
  std::vector<ExperimentCell> cells;
  std::vector<std::string> metrics;  // the table's
  // Per cell, the cell it is compared with: the one with the baseline's labels on the axes the baseline
  // names and the cell's own on the others (itself for a baseline cell); empty: no baseline.
  std::vector<int> baseline_of;
  int plot_x = -1, plot_lines = -1;  // axes, or -1
};

// Refuses, at the field's position, what cannot run: another section beside
// experiment { }, a missing workflow, empty or repeated axes and labels, a
// cell whose workflow does not compile with its overrides, an unknown
// baseline cell or plot axis. Without `compile_cells` the cells' workflows
// are not compiled (a --jobs child, which runs one cell the parent checked);
// the metrics are then only those the file names.
CompiledExperiment CompileExperiment(const LoadedWorkflow& file, bool compile_cells = true);

struct ExperimentOptions {
  std::string out_dir;
  int jobs = 1;             // cells and seeds run side by side, each in a process of its own
  bool progress = true;     // a line per cell and seed started and done
  std::string self;         // the troupe binary to run cells with (for jobs > 1): "/proc/self/exe"
  int only_cell = -1, only_seed = -1;  // run just this one, in this process (what a job runs)
  const std::atomic<bool>* stop = nullptr;  // set: no new cell starts; a training stops at its next checkpoint
};

struct ExperimentResult {
  int ran = 0, kept = 0, failed = 0;  // cells x seeds
  bool finished = false;              // every cell and seed has its evaluation
  std::string table;                  // results.md (when finished)
};

ExperimentResult RunExperiment(const CompiledExperiment& experiment, const ExperimentOptions& options,
                               std::ostream& out);

// The evaluation seed of training seed k: the same in every cell, so cells are compared game by game.
uint64_t ExperimentEvalSeed(int k);

}  // namespace troupe
