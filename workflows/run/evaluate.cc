// Evaluation runs and the best-achievable reference.
#include "workflows/run/evaluate.h"

#include <cstdint>

#include "workflows/report/metrics_log.h"
#include "workflows/report/spread.h"

namespace troupe {

std::map<std::string, double> MeanMetrics(const RolloutBatch& batch) {
  // Each metric's mean over the episodes that report it.
  std::map<std::string, double> mean;
  std::map<std::string, int> count;
  for (const auto& e : batch.episodes) {
    if (e.dropped) continue;
    for (const auto& [k, v] : e.metrics) {
      mean[k] += v;
      ++count[k];
    }
  }
  for (auto& [k, v] : mean) v /= count[k];
  return mean;
}

namespace {

// An observer of one chunk of an evaluation: its episodes numbered from `offset`, as in the whole evaluation.
class ChunkObserver : public RolloutObserver {
 public:
  ChunkObserver(RolloutObserver* base, int offset) : base_(base), offset_(offset) {}
  bool Detailed(int episode) const override { return base_->Detailed(episode + offset_); }
  void EpisodeStarted(int episode, int group, const std::vector<int>& seat_roles) override {
    base_->EpisodeStarted(episode + offset_, group + offset_, seat_roles);
  }
  void SnapshotsPlaying(int episode, const std::vector<std::string>& seat_snapshot) override {
    base_->SnapshotsPlaying(episode + offset_, seat_snapshot);
  }
  void Acted(int episode, const CallRecord& call, const std::vector<std::string>& words, bool scripted) override {
    CallRecord shifted = call;
    shifted.episode += offset_;
    base_->Acted(episode + offset_, shifted, words, scripted);
  }
  void ToolRan(int episode, const std::string& node, int step, const std::vector<std::string>& inputs,
               const std::map<std::string, std::vector<std::string>>& outputs, bool ok) override {
    base_->ToolRan(episode + offset_, node, step, inputs, outputs, ok);
  }
  void StateChanged(int episode, const State& state) override { base_->StateChanged(episode + offset_, state); }
  void EpisodeEnded(int episode, const EpisodeSummary& summary) override {
    base_->EpisodeEnded(episode + offset_, summary);
  }

 private:
  RolloutObserver* base_;
  int offset_;
};

}  // namespace

EvalResult Evaluate(const CompiledWorkflow& workflow, PolicyService& policy, int episodes, uint64_t seed, bool greedy,
                    double temperature, int show, RolloutObserver* observer, bool persuasion) {
  Rollout rollout(workflow.rollout, policy);
  Rng rng(Rng::Mix(seed, 0xE7A1));
  EvalResult result;
  int64_t forward = 0, turns = 0;
  const int chunk = 64;
  for (int done = 0; done < episodes; done += chunk) {
    RolloutOptions o;
    o.episodes = std::min(chunk, episodes - done);
    o.group_size = 1;
    o.seed = Rng::Mix(seed, 0xE7A1, static_cast<uint64_t>(done + 1));
    o.greedy = greedy;
    o.temperature = temperature;
    o.guided = workflow.run.guided_choices;
    o.persuasion = persuasion;
    o.eval_first = done;  // a pipeline task's evaluation set, in order
    ChunkObserver chunk(observer, done);
    o.observer = observer != nullptr ? &chunk : nullptr;
    RolloutBatch b = rollout.Run(o, rng);
    for (size_t i = 0; i < b.episodes.size(); ++i) {
      const EpisodeSummary& e = b.episodes[i];
      if (e.dropped) continue;
      result.per_episode.emplace_back(done + static_cast<int>(i), e.metrics);
      if (static_cast<int>(result.shown.size()) < show) result.shown.push_back(e.final_state);
    }
    forward += b.forward_calls;
    turns += b.turns;
  }
  result.episodes = episodes;
  if (workflow.rollout.pipeline && workflow.rollout.pipeline->task->EvalQueryCount() > 0) {
    result.questions = std::min(episodes, workflow.rollout.pipeline->task->EvalQueryCount());
  }
  // A metric's mean over the episodes that report it (per-type metrics: those of the type).
  std::map<std::string, std::vector<double>> values;
  for (const auto& [episode, metrics] : result.per_episode) {
    for (const auto& [k, v] : metrics) values[k].push_back(v);
  }
  for (const auto& [k, v] : values) {
    const Spread s = SpreadOf(v);
    result.metrics[k] = s.mean;
    result.ci95[k] = s.half_width;
    result.bootstrap[k] = BootstrapInterval(v);
  }
  result.forward_calls_per_turn = turns > 0 ? static_cast<double>(forward) / turns : 0.0;
  return result;
}

std::optional<BestScore> BestAchievable(const CompiledWorkflow& workflow) {
  if (!workflow.rollout.game) return std::nullopt;
  const RoleInfo* trained = nullptr;
  for (const auto& r : workflow.rollout.roles) {
    if (r.trained()) {
      trained = &r;
      break;
    }
  }
  if (trained == nullptr || trained->seats.empty()) return std::nullopt;
  for (const auto& term : workflow.rollout.rewards) {
    // An episode signal, or a per-turn one summed to the end (return-to-go).
    if (term.level != config::TRAJECTORY && !(term.level == config::TURN && term.to_go)) continue;
    auto best = workflow.rollout.game->BestAchievable(term.signal, trained->seats.front(), workflow.ScriptedSeats());
    if (!best) continue;
    BestScore b;
    b.signal = term.signal;
    b.value = *best;
    b.metric = workflow.rollout.game->MetricOfSignal(term.signal, trained->seats.front());
    return b;
  }
  return std::nullopt;
}

std::string EvalJson(const EvalResult& result) {
  JsonLine j;
  j.Add("episodes", result.episodes);
  if (result.questions > 0) j.Add("questions", result.questions);
  for (const auto& [k, v] : result.metrics) j.Add(k, v);
  for (const auto& [k, v] : result.ci95) j.Add("ci95/" + k, v);
  for (const auto& [k, v] : result.bootstrap) {
    j.Add("ci95_lo/" + k, v.lo);
    j.Add("ci95_hi/" + k, v.hi);
  }
  j.Add("forward_calls_per_turn", result.forward_calls_per_turn);
  return j.Str();
}

std::string EvalEpisodesJsonl(const EvalResult& result) {
  std::string out;
  for (const auto& [episode, metrics] : result.per_episode) {
    JsonLine j;
    j.Add("episode", episode);
    for (const auto& [k, v] : metrics) j.Add(k, v);
    out += j.Str() + "\n";
  }
  return out;
}

}  // namespace troupe
