// Snapshot pools: models' snapshot schedules and roles' pools (ModelSpec.snapshots, RoleSpec.pool).
#include <algorithm>
#include <string>

#include "core/base/registry.h"
#include "core/game.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/validate_graph.h"

namespace troupe {

namespace {

bool Share(double x) { return x >= 0.0 && x <= 1.0; }

}  // namespace

void CompilePools(const LoadedWorkflow& w, CompiledWorkflow& c) {
  c.snapshots.assign(c.models.size(), {});
  for (int m = 0; m < c.proto.model_size(); ++m) {
    const config::ModelSpec& spec = c.proto.model(m);  // with its defaults
    if (!spec.has_snapshots()) continue;
    const config::SnapshotSpec& s = spec.snapshots();
    const std::string name = "model '" + spec.name() + "'";
    if (s.every() < 1) w.Fail({{"model", m}, {"snapshots"}, {"every"}}, name + ": snapshots.every is the iterations between snapshots, at least 1");
    if (s.keep() < 1) w.Fail({{"model", m}, {"snapshots"}, {"keep"}}, name + ": snapshots.keep must be at least 1");
    if (c.models[m].frozen) {
      w.Fail({{"model", m}, {"snapshots"}}, name + " is frozen: it never changes, so its snapshots would all be the same");
    }
    if (c.hybrid()) w.Fail({{"model", m}, {"snapshots"}}, "snapshots are not supported with trainer.hybrid yet");
    c.snapshots[m] = {s.every(), s.keep()};
  }
  for (int i = 0; i < c.proto.role_size(); ++i) {
    const config::RoleSpec& r = c.proto.role(i);
    if (!r.has_pool()) continue;
    const config::PoolSpec& p = r.pool();  // with its defaults
    const std::string name = "role '" + r.name() + "'";
    if (!c.rollout.game) w.Fail({{"role", i}, {"pool"}}, name + ": pools play seats of a game, not pipeline nodes");
    if (c.hybrid()) w.Fail({{"role", i}, {"pool"}}, "pools are not supported with trainer.hybrid yet");
    PoolPlan plan;
    plan.role = i;
    if (!Share(p.share())) w.Fail({{"role", i}, {"pool"}, {"share"}}, name + ": pool.share is a share of episode groups, 0 to 1");
    if (!(p.seat_share() > 0.0 && p.seat_share() <= 1.0)) {
      w.Fail({{"role", i}, {"pool"}, {"seat_share"}}, name + ": pool.seat_share is a share of the role's seats, above 0 and at most 1");
    }
    if (!(p.recency() > 0.0 && p.recency() <= 1.0)) w.Fail({{"role", i}, {"pool"}, {"recency"}}, name + ": pool.recency must be above 0 and at most 1");
    if (p.priority_power() < 0.0) w.Fail({{"role", i}, {"pool"}, {"priority_power"}}, name + ": pool.priority_power must be 0 or more");
    plan.share = p.share();
    plan.seat_share = p.seat_share();
    plan.sampling = p.sampling();
    plan.recency = p.recency();
    plan.priority_power = p.priority_power();
    // Where the snapshots come from: learning roles on models that take them.
    std::vector<std::string> from(p.from().begin(), p.from().end());
    if (from.empty()) from.push_back(r.name());
    for (size_t j = 0; j < from.size(); ++j) {
      const std::vector<PathStep> at = p.from().empty() ? std::vector<PathStep>{{"role", i}, {"pool"}}
                                                          : std::vector<PathStep>{{"role", i}, {"pool"}, {"from", static_cast<int>(j)}};
      const int source = c.RoleIndex(from[j]);
      if (source < 0) w.Fail(at, name + ": pool.from names '" + from[j] + "', which is no role");
      const RoleInfo& role = c.rollout.roles[source];
      if (!role.learns()) {
        w.Fail(at, name + ": its pool draws snapshots of role '" + from[j] + "', which " +
                       (role.trained() ? "plays on a frozen model" : "is scripted") + ": only a learning model takes snapshots");
      }
      if (c.snapshots[role.model].every == 0) {
        w.Fail(at, name + ": its pool draws snapshots of model '" + c.models[role.model].name +
                       "', which takes none: give that model snapshots { every: N }");
      }
      if (std::find(plan.from.begin(), plan.from.end(), source) != plan.from.end()) {
        w.Fail(at, name + ": pool.from names '" + from[j] + "' twice");
      }
      plan.from.push_back(source);
    }
    const std::vector<std::string> signals = c.rollout.game->SignalNames();
    plan.signal = p.has_signal() ? p.signal() : (signals.empty() ? "" : signals.front());
    if (std::find(signals.begin(), signals.end(), plan.signal) == signals.end()) {
      w.Fail({{"role", i}, {"pool"}, {"signal"}}, name + ": '" + plan.signal + "' is not a trajectory signal of " +
                                                      c.rollout.game->Name() + " (" + JoinNames(signals) + ")");
    }
    if (!c.pools.empty() && c.pools.front().signal != plan.signal) {
      w.Fail({{"role", i}, {"pool"}, {"signal"}}, name + ": its pool compares '" + plan.signal + "', role '" +
                                                      c.rollout.roles[c.pools.front().role].name + "''s '" +
                                                      c.pools.front().signal + "': the pools of a workflow compare one signal");
    }
    c.pools.push_back(plan);
  }
}

}  // namespace troupe
