// Experiments: compiling the grid, running its cells (experiment.h).
#include "workflows/run/experiment.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comms/proto/fill_unset.h"
#include "core/base/errors.h"
#include "core/base/file_io.h"
#include "core/checkpoint.h"
#include "core/rng.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/defaults.h"
#include "workflows/config/serve_specs.h"
#include "workflows/run/evaluate.h"
#include "workflows/run/experiment_results.h"
#include "workflows/report/run_clock.h"
#include "workflows/run/train_run.h"
#include "workflows/runtime/worker_hub.h"

extern char** environ;

namespace troupe {

namespace fs = std::filesystem;

namespace {

// A folder name for a cell: its labels, characters other than letters, digits, '.', '-' made '_'.
std::string FolderOf(const std::vector<std::string>& axes, const std::vector<std::string>& labels) {
  if (axes.empty()) return "all";
  std::string f;
  for (size_t a = 0; a < axes.size(); ++a) {
    f += (a ? "__" : "") + axes[a] + "-" + labels[a];
  }
  for (char& c : f) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return f;
}

// An override for training seed `seed`: each "{seed}" in it stands for the seed's index.
std::string ForSeed(std::string set, int seed) {
  static const std::string mark = "{seed}";
  for (size_t at = set.find(mark); at != std::string::npos; at = set.find(mark, at)) {
    set.replace(at, mark.size(), std::to_string(seed));
  }
  return set;
}

bool NamesSeed(const ExperimentCell& cell) {
  for (const std::string& s : cell.sets) {
    if (s.find("{seed}") != std::string::npos) return true;
  }
  return false;
}

// The cell's workflow: the file, the cell's overrides, the training seed.
CompiledWorkflow CellWorkflow(const CompiledExperiment& x, const ExperimentCell& cell, int seed) {
  LoadedWorkflow w = LoadWorkflowFile(x.workflow_file);
  for (const std::string& s : cell.sets) ApplyOverride(w, ForSeed(s, seed));
  w.proto.set_seed(w.proto.seed() + static_cast<uint64_t>(seed));
  return CompileWorkflow(w);
}

fs::path SeedFolder(const CompiledExperiment& x, const ExperimentOptions& o, int cell, int seed) {
  return fs::path(o.out_dir) / "cells" / x.cells[cell].folder / ("seed-" + std::to_string(seed));
}

bool Done(const fs::path& folder) { return fs::exists(folder / "eval.json"); }

// Trains (unless the experiment says not to; resuming a run it finds) and evaluates one cell and seed.
// False when stopped before its evaluation.
bool RunOne(const CompiledExperiment& x, const ExperimentOptions& o, int cell, int seed) {
  const fs::path dir = SeedFolder(x, o, cell, seed);
  fs::create_directories(dir);
  const CompiledWorkflow w = CellWorkflow(x, x.cells[cell], seed);
  SetTorchThreads(w.run.threads);
  std::ofstream log(dir / "log.txt", std::ios::app);
  log << DescribeWorkflow(w) << std::endl;
  const fs::path run = dir / "run";
  if (x.spec.train()) {
    TrainOptions t;
    t.out_dir = run.string();
    t.resume = HasCheckpoint(run.string());
    t.progress = true;  // a line an iteration in log.txt, to follow with tail -f
    t.final_eval = false;
    t.stop = o.stop;
    Train(w, t, log);
    if (o.stop && o.stop->load()) return false;
  }
  WorkerHub hub(MakeHubSpec(w));
  if (x.spec.train()) {
    const auto checkpoint = FindCheckpoint(run.string());
    if (!checkpoint) throw CheckpointError("the training in " + run.string() + " left no checkpoint");
    LoadCheckpoint(*checkpoint, [&](const std::string& d) { hub.Load(d, false); });
  }
  log << "evaluating on " << x.spec.eval_episodes() << " games" << std::endl;
  const EvalResult r = Evaluate(w, hub, x.spec.eval_episodes(), ExperimentEvalSeed(seed), x.spec.greedy(),
                                w.trainer.temperature, 0, nullptr, x.spec.persuasion());
  log << "evaluated" << std::endl;
  WriteFileAtomically((dir / "eval.episodes.jsonl").string(), EvalEpisodesJsonl(r));
  WriteFileAtomically((dir / "eval.json").string(), EvalJson(r) + "\n");  // last: the cell and seed are done
  return true;
}

// One line of a finished cell and seed's headline figures.
std::string Figures(const CompiledExperiment& x, const fs::path& dir) {
  std::ifstream in(dir / "eval.json");
  std::ostringstream line;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    for (const std::string& m : x.metrics) {
      if (j.contains(m)) line << " " << m << " " << j.at(m).get<double>();
    }
  } catch (const nlohmann::json::exception&) {
  }
  return line.str();
}

struct Job {
  int cell, seed;
};

// Runs `jobs` in child processes (`troupe experiment FILE --out DIR --only C:S`), `width` at a time.
int RunInProcesses(const CompiledExperiment& x, const ExperimentOptions& o, const std::vector<Job>& jobs,
                   int width, std::ostream& out) {
  std::map<pid_t, Job> running;
  size_t next = 0;
  int failed = 0, finished = 0;
  auto start = [&](const Job& j) {
    const std::string only = std::to_string(j.cell) + ":" + std::to_string(j.seed);
    std::vector<std::string> args = {o.self, "experiment", x.file, "--out", o.out_dir, "--only", only, "--quiet"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, o.self.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      throw Error("cannot start " + o.self + " for cell " + x.cells[j.cell].name);
    }
    running[pid] = j;
    if (o.progress) out << "started " << x.cells[j.cell].name << " seed " << j.seed << "\n" << std::flush;
  };
  while (next < jobs.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(width) && next < jobs.size() && !(o.stop && o.stop->load())) {
      start(jobs[next++]);
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) continue;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const Job j = it->second;
    running.erase(it);
    const fs::path dir = SeedFolder(x, o, j.cell, j.seed);
    ++finished;
    if (!Done(dir)) {
      ++failed;
      out << "cell " << x.cells[j.cell].name << " seed " << j.seed << " failed (exit "
          << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << "); see " << (dir / "log.txt").string() << "\n";
    } else if (o.progress) {
      out << "[" << finished << "/" << jobs.size() << "] " << x.cells[j.cell].name << " seed " << j.seed << ":"
          << Figures(x, dir) << "\n" << std::flush;
    }
    if (o.stop && o.stop->load()) next = jobs.size();
  }
  return failed;
}

}  // namespace

uint64_t ExperimentEvalSeed(int k) { return Rng::Mix(0xE7A15EED, static_cast<uint64_t>(k)); }

CompiledExperiment CompileExperiment(const LoadedWorkflow& file, bool compile_cells) {
  const config::Workflow& p = file.proto;
  if (!p.has_experiment()) file.Fail({}, "not an experiment: it has no experiment { } section");
  const google::protobuf::Reflection* r = p.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> set;
  r->ListFields(p, &set);
  for (const auto* f : set) {
    if (f->name() != "experiment" && f->name() != "name" && f->name() != "description") {
      file.Fail({{f->name().c_str(), 0}}, "an experiment file holds experiment { } (and a name), not " + f->name() +
                                              ": those belong to the workflow it names");
    }
  }
  CompiledExperiment x;
  x.file = file.file;
  x.name = p.name().empty() ? fs::path(file.file).stem().string() : p.name();
  x.spec = p.experiment();
  FillUnset(WorkflowDefaults().experiment(), &x.spec);
  const config::ExperimentSpec& s = x.spec;
  if (s.workflow().empty()) file.Fail({{"experiment"}}, "experiment needs a workflow file");
  const fs::path workflow = fs::path(s.workflow()).is_absolute()
                                ? fs::path(s.workflow())
                                : fs::path(file.file).parent_path() / s.workflow();
  if (!fs::exists(workflow)) file.Fail({{"experiment"}, {"workflow"}}, "no workflow file " + workflow.string());
  x.workflow_file = workflow.lexically_normal().string();
  if (s.seeds() < 1) file.Fail({{"experiment"}, {"seeds"}}, "seeds must be at least 1");
  if (s.eval_episodes() < 1) file.Fail({{"experiment"}, {"eval_episodes"}}, "eval_episodes must be at least 1");
  std::set<std::string> names;
  for (int a = 0; a < s.axis_size(); ++a) {
    const config::ExperimentAxis& axis = s.axis(a);
    if (axis.name().empty()) file.Fail({{"experiment"}, {"axis", a}}, "an axis needs a name");
    if (!names.insert(axis.name()).second)
      file.Fail({{"experiment"}, {"axis", a}, {"name"}}, "axis '" + axis.name() + "' is defined twice");
    if (axis.value_size() == 0) file.Fail({{"experiment"}, {"axis", a}}, "axis '" + axis.name() + "' has no value");
    std::set<std::string> labels;
    for (int v = 0; v < axis.value_size(); ++v) {
      if (axis.value(v).label().empty() || !labels.insert(axis.value(v).label()).second) {
        file.Fail({{"experiment"}, {"axis", a}, {"value", v}},
                  "axis '" + axis.name() + "': each value needs a label of its own");
      }
    }
    x.axes.push_back(axis.name());
  }
  // Every combination, the first axis outermost.
  std::vector<int> at(x.axes.size(), 0);
  while (true) {
    ExperimentCell cell;
    cell.sets.assign(s.set().begin(), s.set().end());
    for (size_t a = 0; a < at.size(); ++a) {
      const config::ExperimentValue& v = s.axis(static_cast<int>(a)).value(at[a]);
      cell.labels.push_back(v.label());
      cell.name += (a ? "," : "") + x.axes[a] + "=" + v.label();
      cell.sets.insert(cell.sets.end(), v.set().begin(), v.set().end());
    }
    if (cell.name.empty()) cell.name = "all";
    cell.folder = FolderOf(x.axes, cell.labels);
    // The cell's workflow must compile with its overrides; an error points at the value that made the cell.
    bool has_models = true;
    if (compile_cells) {
      try {
        const CompiledWorkflow w = CellWorkflow(x, cell, 0);
        // Overrides that name the seed (e.g. each seed's own trained models) compile for every seed.
        for (int k = 1; k < s.seeds() && NamesSeed(cell); ++k) CellWorkflow(x, cell, k);
        if (x.metrics.empty()) {
          x.metrics.assign(s.metric().begin(), s.metric().end());
          if (x.metrics.empty()) x.metrics = w.headline_metrics;
        }
        has_models = !w.models.empty();
      } catch (const ConfigError& e) {
        std::vector<PathStep> where{{"experiment"}, {"workflow"}};
        if (!at.empty()) where = {{"experiment"}, {"axis", static_cast<int>(at.size()) - 1}, {"value", at.back()}};
        file.Fail(where, "cell " + cell.name + ": " + e.what());
      }
    }
    if (s.train() && !has_models) {
      file.Fail({{"experiment"}, {"train"}}, "cell " + cell.name + " has no model to train: set train: false");
    }
    x.cells.push_back(std::move(cell));
    int a = static_cast<int>(at.size()) - 1;
    while (a >= 0 && ++at[a] == s.axis(a).value_size()) at[a--] = 0;
    if (a < 0) break;
  }
  if (x.metrics.empty()) x.metrics.assign(s.metric().begin(), s.metric().end());
  if (compile_cells && x.metrics.empty())
    file.Fail({{"experiment"}}, "no metric to tabulate: name them with metric: \"...\"");
  if (!s.baseline().empty()) {
    // "axis=label,..." on some axes.
    std::map<int, std::string> fixed;
    std::stringstream items(s.baseline());
    std::string item;
    while (std::getline(items, item, ',')) {
      const size_t eq = item.find('=');
      int a = -1;
      for (size_t k = 0; eq != std::string::npos && k < x.axes.size(); ++k) {
        if (x.axes[k] == item.substr(0, eq)) a = static_cast<int>(k);
      }
      bool known = false;
      for (int v = 0; a >= 0 && v < s.axis(a).value_size(); ++v) known = known || s.axis(a).value(v).label() == item.substr(eq + 1);
      if (!known) {
        std::string all;
        for (size_t k = 0; k < x.axes.size(); ++k) {
          all += (k ? "; " : "") + x.axes[k] + ":";
          for (const auto& v : s.axis(static_cast<int>(k)).value()) all += " " + v.label();
        }
        file.Fail({{"experiment"}, {"baseline"}}, "baseline '" + s.baseline() + "': '" + item +
                                                      "' is no axis=label of this grid (" + all + ")");
      }
      fixed[a] = item.substr(eq + 1);
    }
    for (const ExperimentCell& cell : x.cells) {
      std::vector<std::string> want = cell.labels;
      for (const auto& [a, label] : fixed) want[a] = label;
      int found = -1;
      for (size_t c = 0; c < x.cells.size(); ++c) {
        if (x.cells[c].labels == want) found = static_cast<int>(c);
      }
      x.baseline_of.push_back(found);
    }
  }
  auto axis_index = [&](const std::string& name, const char* field) {
    for (size_t a = 0; a < x.axes.size(); ++a) {
      if (x.axes[a] == name) return static_cast<int>(a);
    }
    file.Fail({{"experiment"}, {field}}, std::string(field) + " '" + name + "' is no axis");
  };
  x.plot_x = !s.plot_x().empty() ? axis_index(s.plot_x(), "plot_x") : x.axes.empty() ? -1 : 0;
  if (!s.plot_lines().empty()) {
    x.plot_lines = axis_index(s.plot_lines(), "plot_lines");
  } else if (x.axes.size() >= 2) {
    x.plot_lines = x.plot_x == 0 ? 1 : 0;
  }
  if (x.plot_lines >= 0 && x.plot_lines == x.plot_x) {
    file.Fail({{"experiment"}, {"plot_lines"}}, "plot_lines and plot_x name the same axis");
  }
  if (s.has_crossplay()) {
    if (x.axes.size() != 2) {
      file.Fail({{"experiment"}, {"crossplay"}}, "cross-play needs two axes, the row players and the column players; this experiment has " + std::to_string(x.axes.size()));
    }
    if (s.crossplay().row_metric().empty() || s.crossplay().column_metric().empty()) {
      file.Fail({{"experiment"}, {"crossplay"}}, "cross-play needs row_metric and column_metric: each side's payoff in a game");
    }
  }
  return x;
}

ExperimentResult RunExperiment(const CompiledExperiment& x, const ExperimentOptions& o, std::ostream& out) {
  ExperimentResult result;
  fs::create_directories(o.out_dir);
  if (o.only_cell >= 0) {
    if (o.only_cell >= static_cast<int>(x.cells.size()) || o.only_seed < 0 || o.only_seed >= x.spec.seeds())
      throw Error("--only " + std::to_string(o.only_cell) + ":" + std::to_string(o.only_seed) + " is no cell and seed");
    result.ran = RunOne(x, o, o.only_cell, o.only_seed) ? 1 : 0;
    return result;
  }
  WriteFileAtomically((fs::path(o.out_dir) / "experiment.textproto").string(), ReadWholeFile(x.file));
  std::vector<Job> todo;
  for (int c = 0; c < static_cast<int>(x.cells.size()); ++c) {
    for (int k = 0; k < x.spec.seeds(); ++k) {
      if (Done(SeedFolder(x, o, c, k))) ++result.kept;
      else todo.push_back({c, k});
    }
  }
  const int total = static_cast<int>(x.cells.size()) * x.spec.seeds();
  if (o.progress) {
    out << "experiment " << x.name << ": " << x.cells.size() << " cells x " << x.spec.seeds() << " seeds of "
        << x.workflow_file << ", " << x.spec.eval_episodes() << " evaluation games each";
    if (result.kept > 0) out << "; " << result.kept << " of " << total << " done before, kept";
    out << "\n" << std::flush;
  }
  const auto started = std::chrono::steady_clock::now();
  if (o.jobs > 1 && todo.size() > 1) {
    result.failed = RunInProcesses(x, o, todo, o.jobs, out);
    result.ran = static_cast<int>(todo.size()) - result.failed;
  } else {
    for (size_t i = 0; i < todo.size(); ++i) {
      if (o.stop && o.stop->load()) break;
      const Job& j = todo[i];
      const fs::path dir = SeedFolder(x, o, j.cell, j.seed);
      if (o.progress) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        out << "[" << result.kept + static_cast<int>(i) + 1 << "/" << total << "] " << x.cells[j.cell].name
            << " seed " << j.seed << " (" << todo.size() - i - 1 << " after it; " << FormatDuration(s)
            << " so far; progress in " << (dir / "log.txt").string() << ")\n" << std::flush;
      }
      try {
        if (!RunOne(x, o, j.cell, j.seed)) break;
        ++result.ran;
        if (o.progress) out << "    " << Figures(x, dir) << "\n" << std::flush;
      } catch (const Error& e) {
        ++result.failed;
        out << "cell " << x.cells[j.cell].name << " seed " << j.seed << " failed: " << e.what() << "\n";
      }
    }
  }
  int done = 0;
  for (int c = 0; c < static_cast<int>(x.cells.size()); ++c) {
    for (int k = 0; k < x.spec.seeds(); ++k) done += Done(SeedFolder(x, o, c, k));
  }
  result.finished = done == total;
  if (result.finished) result.table = WriteExperimentResults(x, o.out_dir);
  return result;
}

}  // namespace troupe
