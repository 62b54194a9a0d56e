// Evaluation: run episodes with the current models and average what the game
// (or pipeline task) reports, plus the reward signal of every trained role.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workflows/config/compiled_workflow.h"
#include "workflows/rollout/rollout.h"
#include "workflows/report/spread.h"

namespace troupe {

struct EvalResult {
  int episodes = 0;
  int questions = 0;  // pipelines with an evaluation set: the distinct questions played
  std::map<std::string, double> metrics;  // means over episodes
  std::map<std::string, double> ci95;     // half-widths of their 95% intervals over episodes (Student's t)
  std::map<std::string, Interval> bootstrap;  // their 95% percentile-bootstrap intervals over episodes
  // Every episode that was not dropped, in order: its index and metrics. A
  // pipeline task's evaluation set is played in order, so two evaluations of
  // one set pair up question by question (paired differences between stages).
  std::vector<std::pair<int, std::map<std::string, double>>> per_episode;
  double forward_calls_per_turn = 0.0;
  std::vector<std::string> shown;  // the first episodes' final states, when asked for
};

// `observer`, when given, sees the episodes (session events of in-training evaluations).
// `persuasion`: probe persuasion too (RolloutOptions::persuasion).
EvalResult Evaluate(const CompiledWorkflow& workflow, PolicyService& policy, int episodes, uint64_t seed, bool greedy,
                    double temperature, int show = 0, RolloutObserver* observer = nullptr, bool persuasion = false);

// Means of every episode metric in a rollout batch.
std::map<std::string, double> MeanMetrics(const RolloutBatch& batch);

// The best value of the workflow's main trajectory signal for the first trained
// role, when the game can compute it (e.g. Red-Black against a scripted team).
struct BestScore {
  std::string signal;
  std::string metric;  // the episode metric that reports it, if known
  double value = 0.0;
};
std::optional<BestScore> BestAchievable(const CompiledWorkflow& workflow);

// One JSON object of an evaluation (for `troupe eval --json`): the means,
// `ci95/<metric>` (Student's t half-widths) and `ci95_lo/<metric>`,
// `ci95_hi/<metric>` (the bootstrap interval's ends).
std::string EvalJson(const EvalResult& result);

// One JSON line per evaluated episode: {"episode": i, <metric>: value, ...}.
std::string EvalEpisodesJsonl(const EvalResult& result);

}  // namespace troupe
