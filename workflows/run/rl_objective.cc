// Rollout -> credit -> update, and the figures of each iteration.
#include "workflows/run/rl_objective.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "workflows/run/evaluate.h"
#include "workflows/run/snapshot_pools.h"
#include "workflows/rollout/rollout.h"
#include "workflows/report/run_clock.h"
#include "workflows/report/session_events.h"

namespace troupe {

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The per-iteration figures of metrics.jsonl (all but the wall-clock time/ ones),
// and " role=reward" pairs for the progress line.
JsonLine IterationLine(const CompiledWorkflow& w, int iteration, const RolloutBatch& batch, const CreditStats& cs,
                       const std::vector<ModelTrainStats>& ts, const std::map<std::string, double>& game_metrics,
                       std::string* progress_roles) {
  JsonLine line;
  line.Add("iteration", iteration);
  line.Add("episodes", static_cast<double>(batch.episodes.size()));
  line.Add("episodes_dropped", static_cast<double>(batch.dropped));
  const std::vector<session::RoleCredit> by_role =
      CreditByRole(batch.records, static_cast<int>(w.rollout.roles.size()));
  for (size_t r = 0; r < w.rollout.roles.size(); ++r) {
    if (!w.rollout.roles[r].trained()) continue;
    const session::RoleCredit& rc = by_role[r];
    const std::string& name = w.rollout.roles[r].name;
    line.Add("reward/" + name, rc.reward_mean());
    line.Add("advantage_mean/" + name, rc.advantage_mean());
    line.Add("advantage_std/" + name, rc.advantage_std());
    line.Add("invalid_rate/" + name, rc.invalid_fraction());
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s=%.3f", name.c_str(), rc.reward_mean());
    *progress_roles += buf;
  }
  for (size_t m = 0; m < ts.size(); ++m) {
    const std::string& name = w.models[m].name;
    line.Add("loss/" + name, ts[m].loss);
    line.Add("policy_loss/" + name, ts[m].policy_loss);
    if (w.trainer.estimator == Estimator::kPpo) line.Add("value_loss/" + name, ts[m].value_loss);
    line.Add("entropy/" + name, ts[m].entropy);
    line.Add("kl/" + name, ts[m].kl);
    line.Add("grad_norm/" + name, ts[m].grad_norm);
    line.Add("clip_fraction/" + name, ts[m].clip_fraction);
    line.Add("learners/" + name, ts[m].learners);  // data-parallel learners that took the update
  }
  line.Add("credit/advantage_mean", cs.advantage_mean);
  line.Add("credit/advantage_std", cs.advantage_std);
  for (const auto& [k, v] : game_metrics) line.Add("game/" + k, v);
  line.Add("forward_calls_per_turn", batch.turns > 0 ? static_cast<double>(batch.forward_calls) / batch.turns : 0);
  const double episodes = static_cast<double>(std::max<size_t>(1, batch.episodes.size()));
  line.Add("encoded_positions_per_episode", static_cast<double>(batch.encoded_positions) / episodes);
  int64_t update_positions = 0;  // summed over models (and their data-parallel learners)
  for (const ModelTrainStats& s : ts) update_positions += s.positions;
  line.Add("update_positions_per_episode", static_cast<double>(update_positions) / episodes);
  return line;
}

class ReinforcementObjective : public TrainingObjective {
 public:
  ReinforcementObjective(const CompiledWorkflow& w, PolicyService& policy, SessionEvents& events,
                         const std::string& run_dir)
      : w_(w),
        policy_(policy),
        events_(events),
        credit_(w.credit),
        rollout_(w.rollout, policy),
        rng_(Rng::Mix(w.seed, 1)),
        pools_(w, run_dir),
        pool_rng_(Rng::Mix(w.seed, 0x9001)) {}

  int iterations() const override { return w_.run.iterations; }
  int checkpoint_every() const override { return w_.run.checkpoint_every; }
  int LinesAfter(int iterations) const override { return iterations; }
  std::string unit() const override { return "iteration"; }
  bool greedy_evaluation() const override { return false; }

  // The supervised warm start, if asked for.
  bool WarmStart(std::ostream& out, bool progress) override {
    std::vector<CallRecord> records;
    std::string from;
    if (w_.run.sft_episodes > 0) {
      RolloutOptions demo;
      demo.episodes = w_.run.sft_episodes;
      demo.seed = Rng::Mix(w_.seed, 3);
      demo.scripted_for_trained = true;
      demo.teacher = w_.run.sft_teacher;
      Rng demo_rng(Rng::Mix(w_.seed, 4));
      records = rollout_.Run(demo, demo_rng).records;
      from = w_.run.sft_teacher;
    }
    // The calls of frozen models' seats are played, not demonstrated: they teach nothing.
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const CallRecord& r) { return !w_.rollout.roles.at(r.role).learns(); }),
                  records.end());
    for (const Demonstration& d : w_.run.sft_demonstrations) records.push_back(RecordOf(d));
    if (!w_.run.sft_demonstrations.empty()) {
      const config::SftSpec& sft = w_.proto.trainer().sft();
      for (const std::string& file : {sft.jsonl(), sft.session()}) {
        if (!file.empty()) from += (from.empty() ? "" : ", ") + file;
      }
    }
    if (records.empty()) return false;
    // In about 20 parts, each reported: a long warm start is not a silent one.
    const int steps = w_.run.sft_steps, part = std::max(10, (steps + 19) / 20);
    const double started = Now();
    std::vector<ModelTrainStats> st;
    for (int done = 0; done < steps;) {
      const int n = std::min(part, steps - done);
      st = policy_.Supervised(records, n);
      done += n;
      if (done >= steps || !progress) continue;
      const double per_step = (Now() - started) / done;
      out << "sft warm start: step " << done << "/" << steps << "  loss " << st.front().loss << "  ETA "
          << FormatDuration(per_step * (steps - done)) << std::endl;
    }
    out << "sft warm start: " << records.size() << " demonstrations from " << from << ", " << steps
        << " steps in " << FormatDuration(Now() - started) << ", final loss " << (st.empty() ? 0.0 : st.front().loss)
        << std::endl;
    return true;
  }

  // A demonstration as the call its role would have made.
  CallRecord RecordOf(const Demonstration& d) const {
    const RoleInfo& role = w_.rollout.roles.at(d.role);
    CallRecord r;
    r.role = d.role;
    r.model = role.model;
    r.role_slot = role.slot;
    r.phase = "sft";
    const PromptCodec& codec = w_.rollout.Codec(d.role);
    r.prompt = codec.reads_text() ? codec.TextPrompt(d.role, d.prompt_text) : rollout_.Prompt(d.role, d.prompt).tokens;
    r.response = codec.Answer(d.response, static_cast<int>(d.response.size()));
    if (r.response.back() != codec.eos()) r.response.push_back(codec.eos());
    r.logprobs.assign(r.response.size(), 0.0f);
    return r;
  }

  IterationReport Iterate(int it) override {
    const double ti = Now();
    RolloutOptions ro;
    ro.episodes = w_.run.episodes_per_iteration;
    ro.group_size = w_.run.group_size;
    ro.seed = Rng::Mix(w_.seed, 2, static_cast<uint64_t>(it));
    ro.temperature = w_.trainer.temperature;
    ro.correlated = w_.run.correlated_team_sampling;
    ro.overlap_environment = w_.run.overlap_environment;
    ro.guided = w_.run.guided_choices;
    ro.observer = events_.enabled() ? &events_ : nullptr;
    // Snapshot pools: the snapshots due, and who plays which seat (a stream of its own,
    // so a workflow without pools draws as before).
    pools_.TakeDue(it, policy_);
    pools_.Draw(&ro, pool_rng_);
    events_.BeginIteration(it + 1, false);
    RolloutBatch batch = rollout_.Run(ro, rng_);
    std::map<std::string, double> pool_figures;
    pools_.Tally(ro, &batch, &pool_figures);
    const double rollout_s = Now() - ti;
    CreditStats cs = credit_.Assign(batch.records);
    events_.Credit(it + 1, batch.records);
    const double credit_s = Now() - ti - rollout_s;
    std::vector<ModelTrainStats> ts = policy_.Update(batch.records);
    const double dt = Now() - ti;

    const auto game_metrics = MeanMetrics(batch);
    std::string roles;
    IterationReport r;
    r.has_line = true;
    r.line = IterationLine(w_, it + 1, batch, cs, ts, game_metrics, &roles);
    for (const auto& [k, v] : pool_figures) r.line.Add(k, v);
    r.episodes_per_s = batch.episodes.size() / std::max(1e-9, dt);
    r.forward_calls_per_turn = batch.turns > 0 ? static_cast<double>(batch.forward_calls) / batch.turns : 0;
    r.line.Add("time/iteration_s", dt);
    r.line.Add("time/rollout_s", rollout_s);
    r.line.Add("time/generate_s", batch.generate_seconds);             // the models' share of the rollout
    r.line.Add("time/environment_s", rollout_s - batch.generate_seconds);  // games, prompts and records
    r.line.Add("time/credit_s", credit_s);
    r.line.Add("time/update_s", dt - rollout_s - credit_s);
    r.line.Add("time/episodes_per_s", r.episodes_per_s);
    std::ostringstream p;
    p << std::fixed << std::setprecision(1) << r.episodes_per_s << " ep/s  reward" << roles;
    for (const std::string& key : w_.headline_metrics) {
      auto f = game_metrics.find(key);
      if (f != game_metrics.end()) p << "  " << key << "=" << std::setprecision(2) << f->second;
    }
    r.progress = p.str();
    return r;
  }

  void Save(RunState* state) const override {
    (*state)["rollout_rng"] = rng_.Save();
    (*state)["credit"] = credit_.SaveState();
    if (pools_.enabled()) {
      (*state)["snapshot_pools"] = pools_.SaveState();
      (*state)["pool_rng"] = pool_rng_.Save();
    }
  }
  void Load(RunState& state) override {
    rng_.Load(state["rollout_rng"]);
    credit_.LoadState(state["credit"]);
    if (pools_.enabled()) {
      pools_.LoadState(state["snapshot_pools"], std::atoi(state["iteration"].c_str()));
      if (!state["pool_rng"].empty()) pool_rng_.Load(state["pool_rng"]);
    }
  }

 private:
  const CompiledWorkflow& w_;
  PolicyService& policy_;
  SessionEvents& events_;
  CreditAssigner credit_;
  Rollout rollout_;
  Rng rng_;
  SnapshotPools pools_;
  Rng pool_rng_;
};

}  // namespace

std::unique_ptr<TrainingObjective> MakeReinforcementObjective(const CompiledWorkflow& workflow, PolicyService& policy,
                                                              SessionEvents& events, const std::string& run_dir) {
  return std::make_unique<ReinforcementObjective>(workflow, policy, events, run_dir);
}

}  // namespace troupe
