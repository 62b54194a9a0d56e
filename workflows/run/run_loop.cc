// The run loop: resume, iterate, stop, checkpoint, sink, show progress.
#include "workflows/run/run_loop.h"

#include <ostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "workflows/report/metrics_sink.h"
#include "workflows/report/run_clock.h"

namespace troupe {

RunLoop::RunLoop(RunLoopSpec spec, RunObjective& objective, std::ostream& out)
    : spec_(std::move(spec)), objective_(objective), out_(out) {}

RunState RunLoop::Resume(std::string* checkpoint) {
  std::vector<std::string> skipped;
  const auto found = FindCheckpoint(spec_.dir, &skipped);
  // A damaged newest checkpoint is passed over, never loaded: say so.
  for (const std::string& s : skipped) out_ << "resume: skipping the damaged checkpoint " << s << "\n";
  if (!found) {
    throw CheckpointError("--resume: no complete checkpoint in " + spec_.dir +
                          (skipped.empty() ? "" : " (" + std::to_string(skipped.size()) + " damaged)"));
  }
  RunState state = LoadCheckpoint(*found, spec_.load_models);
  start_ = std::stoi(state["iteration"]);  // checked by LoadCheckpoint
  lines_ = objective_.LinesAfter(start_);
  if (state.count("metrics_lines")) {
    try {
      lines_ = std::stoll(state["metrics_lines"]);
    } catch (const std::logic_error&) {
      throw CheckpointError(*found + "/state/metrics_lines is not a count: '" + state["metrics_lines"] + "'");
    }
  }
  elapsed_before_ = std::atof(state["elapsed_s"].c_str());
  objective_.Load(state);
  *checkpoint = *found;
  return state;
}

double RunLoop::Elapsed() const { return elapsed_before_ + MonotonicSeconds() - t0_; }

RunLoopEnd RunLoop::Run() {
  t0_ = MonotonicSeconds();
  MetricsSink metrics(spec_.dir, spec_.events, spec_.resume, lines_);
  const int total = objective_.iterations(), every = objective_.checkpoint_every();
  const char* newline = spec_.tty ? "\n" : "";
  RunLoopEnd end;
  int it = start_;
  for (; it < total; ++it) {
    if (spec_.max_minutes > 0 && Elapsed() > spec_.max_minutes * 60) {
      out_ << newline << "stopping at the time limit of " << spec_.max_minutes << " min, at " << objective_.unit()
           << " " << it << "\n";
      end.time_limit = true;
      break;
    }
    if ((spec_.stop != nullptr && *spec_.stop) || (spec_.stop_at > 0 && it >= spec_.stop_at)) {
      out_ << newline << "interrupted: saving a checkpoint at " << objective_.unit() << " " << it
           << " (continue with --resume)\n";
      end.interrupted = true;
      break;
    }
    IterationReport report = objective_.Iterate(it);
    if (report.has_line) {
      report.line.Add("time/elapsed_s", Elapsed());
      metrics.Write(it + 1, report.line, report.episodes_per_s, report.forward_calls_per_turn);
      ++lines_;
      if (spec_.progress) Progress(it, report.progress);
    }
    if ((it + 1) % every == 0 || it + 1 == total) Save(it + 1);
  }
  if (it > start_ && it % every != 0 && it != total) Save(it);
  // Stopped before the first iteration (a warm start alone, or Ctrl-C right
  // after one): the warm-started models are kept, not trained again on --resume.
  if (it == 0 && !HasCheckpoint(spec_.dir)) Save(0);
  if (spec_.tty && spec_.progress) out_ << "\n";
  end.iterations = it;
  end.seconds = Elapsed();
  return end;
}

void RunLoop::Progress(int it, const std::string& figures) {
  const int total = objective_.iterations();
  const double per_it = (MonotonicSeconds() - t0_) / (it + 1 - start_);
  std::ostringstream p;
  p << "[" << (objective_.unit() == "iteration" ? "it" : objective_.unit()) << " " << it + 1 << "/" << total << "] "
    << figures << "  ETA " << FormatDuration(per_it * (total - it - 1));
  if (spec_.tty) out_ << "\r" << p.str() << "\x1b[K" << std::flush;
  else out_ << p.str() << std::endl;
}

void RunLoop::Save(int iteration) {
  RunState state = spec_.checkpoint_state;
  objective_.Save(&state);
  std::ostringstream e;
  e.precision(17);
  e << Elapsed();
  state["elapsed_s"] = e.str();
  state["metrics_lines"] = std::to_string(lines_);
  SaveCheckpoint(spec_.dir, iteration, state, spec_.save_models);
}

}  // namespace troupe
