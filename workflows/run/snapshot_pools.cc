// Snapshot pools: taking snapshots, drawing who plays, and each snapshot's record.
#include "workflows/run/snapshot_pools.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/base/errors.h"
#include "core/checkpoint.h"

namespace troupe {

namespace fs = std::filesystem;

std::vector<double> PoolWeights(const PoolPlan& pool, const std::vector<const PoolSnapshot*>& candidates) {
  std::vector<double> weights;
  for (const PoolSnapshot* s : candidates) {
    switch (pool.sampling) {
      case config::RECENT: {
        int newer = 0;
        for (const PoolSnapshot* o : candidates) newer += o->model == s->model && o->iteration > s->iteration;
        weights.push_back(std::pow(pool.recency, newer));
        break;
      }
      case config::PRIORITIZED:
        weights.push_back(std::pow((s->wins + 1.0) / (s->games + 2.0), pool.priority_power));
        break;
      default: weights.push_back(1.0); break;
    }
  }
  return weights;
}

namespace {

int Pick(const std::vector<double>& weights, Rng& rng) {
  double total = 0.0;
  for (double x : weights) total += x;
  double u = rng.Uniform() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (u < weights[i]) return static_cast<int>(i);
    u -= weights[i];
  }
  return static_cast<int>(weights.size()) - 1;
}

// The snapshot folders under `root` (complete ones: their state/iteration written), by iteration.
std::map<int, fs::path> SnapshotFolders(const fs::path& root) {
  std::map<int, fs::path> found;
  if (!fs::exists(root)) return found;
  for (const auto& entry : fs::directory_iterator(root)) {
    const int it = CheckpointFolderIteration(entry.path().filename().string());
    if (entry.is_directory() && it >= 0 && fs::exists(entry.path() / "state" / "iteration")) found[it] = entry.path();
  }
  return found;
}

}  // namespace

SnapshotPools::SnapshotPools(const CompiledWorkflow& workflow, std::string run_dir)
    : w_(workflow), run_dir_(std::move(run_dir)), pools_(workflow.models.size()) {
  enabled_ = !w_.pools.empty() || std::any_of(w_.snapshots.begin(), w_.snapshots.end(),
                                               [](const SnapshotSchedule& s) { return s.every > 0; });
}

std::string SnapshotPools::Root(int model) const {
  return (fs::path(run_dir_) / "snapshots" / w_.models.at(model).name).string();
}

void SnapshotPools::Rescan(int model, int upto) {
  std::map<int, PoolSnapshot> known;
  for (const PoolSnapshot& s : pools_[model]) known[s.iteration] = s;
  std::vector<int> found;  // in order
  for (const auto& [it, path] : SnapshotFolders(Root(model))) {
    if (it <= upto) found.push_back(it);
  }
  const size_t keep = static_cast<size_t>(w_.snapshots[model].keep);
  if (found.size() > keep) found.erase(found.begin(), found.end() - static_cast<std::ptrdiff_t>(keep));
  pools_[model].clear();
  for (int it : found) {
    PoolSnapshot s = known.count(it) ? known[it] : PoolSnapshot{};
    s.model = model;
    s.iteration = it;
    s.dir = (fs::path(Root(model)) / CheckpointFolderName(it)).string();
    pools_[model].push_back(s);
  }
}

void SnapshotPools::TakeDue(int iteration, PolicyService& policy) {
  for (size_t m = 0; m < pools_.size(); ++m) {
    const SnapshotSchedule& s = w_.snapshots[m];
    if (s.every <= 0 || iteration % s.every != 0) continue;
    if (!pools_[m].empty() && pools_[m].back().iteration == iteration) continue;  // taken before a resume
    // On disk, beyond `keep`, the snapshots a resume from the last checkpoint may still need.
    const int on_disk = s.keep + std::max(1, w_.run.checkpoint_every) / s.every + 1;
    SaveCheckpointIn(Root(static_cast<int>(m)), iteration, {},
                     [&](const std::string& dir) { policy.SaveSnapshot(static_cast<int>(m), dir); }, on_disk);
    Rescan(static_cast<int>(m), iteration);
  }
}

void SnapshotPools::Draw(RolloutOptions* options, Rng& rng) const {
  if (w_.pools.empty()) return;
  options->seat_signal = w_.pools.front().signal;
  const int group_size = std::max(1, options->group_size);
  const int groups = (options->episodes + group_size - 1) / group_size;
  for (int g = 0; g < groups; ++g) {
    const std::vector<int> seat_roles = w_.rollout.SeatRoles(GroupGameSeed(options->seed, g));
    std::vector<int> row(seat_roles.size(), -1);
    bool any = false;
    for (const PoolPlan& plan : w_.pools) {
      // Drawn in a fixed order whatever the pool holds, so one pool's draws do not shift another's.
      const double u = rng.Uniform();
      const uint64_t pick = rng.Next(), seats_draw = rng.Next();
      std::vector<std::pair<int, const PoolSnapshot*>> candidates;  // (role it plays as, snapshot)
      for (int role : plan.from) {
        for (const PoolSnapshot& s : pools_[w_.rollout.roles[role].model]) candidates.emplace_back(role, &s);
      }
      if (u >= plan.share || candidates.empty()) continue;
      std::vector<const PoolSnapshot*> snaps;
      for (const auto& c : candidates) snaps.push_back(c.second);
      Rng pick_rng(pick);
      const auto& [as_role, snap] = candidates[Pick(PoolWeights(plan, snaps), pick_rng)];
      std::vector<int> seats;
      for (size_t s = 0; s < seat_roles.size(); ++s) {
        if (seat_roles[s] == plan.role && row[s] < 0) seats.push_back(static_cast<int>(s));
      }
      if (seats.empty()) continue;
      const int n = std::clamp(static_cast<int>(std::lround(plan.seat_share * static_cast<double>(seats.size()))), 1,
                               static_cast<int>(seats.size()));
      Rng seat_rng(seats_draw);
      for (int k = 0; k < n; ++k) std::swap(seats[k], seats[k + seat_rng.Below(static_cast<int>(seats.size()) - k)]);
      const std::string label = w_.models[snap->model].name + "@" + CheckpointFolderName(snap->iteration);
      int player = -1;
      for (size_t p = 0; p < options->snapshots.size(); ++p) {
        if (options->snapshots[p].dir == snap->dir && options->snapshots[p].role == as_role) player = static_cast<int>(p);
      }
      if (player < 0) {
        player = static_cast<int>(options->snapshots.size());
        options->snapshots.push_back({as_role, snap->dir, label});
      }
      for (int k = 0; k < n; ++k) row[seats[k]] = player;
      any = true;
    }
    options->seat_snapshots.push_back(any ? row : std::vector<int>{});
  }
}

void SnapshotPools::Tally(const RolloutOptions& options, RolloutBatch* batch, std::map<std::string, double>* figures) {
  if (w_.pools.empty()) return;
  const int group_size = std::max(1, options.group_size);
  int with_snapshot = 0, scored = 0;
  double snapshot_wins = 0.0;
  std::vector<int> seat_roles;  // of the episode's group (the same for every episode of it)
  size_t roles_of_group = SIZE_MAX;
  for (size_t e = 0; e < batch->episodes.size(); ++e) {
    const EpisodeSummary& ep = batch->episodes[e];
    const size_t g = e / static_cast<size_t>(group_size);
    if (g >= options.seat_snapshots.size() || options.seat_snapshots[g].empty()) continue;
    ++with_snapshot;
    if (ep.dropped || ep.seat_signal.empty()) continue;
    const std::vector<int>& row = options.seat_snapshots[g];
    if (roles_of_group != g) {
      seat_roles = w_.rollout.SeatRoles(GroupGameSeed(options.seed, static_cast<int>(g)));
      roles_of_group = g;
    }
    // The current model's side: the learning seats no snapshot plays.
    double current = 0.0;
    int current_seats = 0;
    for (size_t s = 0; s < row.size(); ++s) {
      if (row[s] < 0 && w_.rollout.roles[seat_roles[s]].learns()) current += ep.seat_signal[s], ++current_seats;
    }
    if (current_seats == 0) continue;
    current /= current_seats;
    for (size_t p = 0; p < options.snapshots.size(); ++p) {
      double mine = 0.0;
      int seats = 0;
      for (size_t s = 0; s < row.size(); ++s) {
        if (row[s] == static_cast<int>(p)) mine += ep.seat_signal[s], ++seats;
      }
      if (seats == 0) continue;
      mine /= seats;
      const double win = mine > current ? 1.0 : (mine == current ? 0.5 : 0.0);
      for (auto& pool : pools_) {
        for (PoolSnapshot& snap : pool) {
          if (snap.dir != options.snapshots[p].dir) continue;
          snap.wins += win;
          ++snap.games;
        }
      }
      snapshot_wins += win;
      ++scored;
    }
  }
  // The snapshots' calls were played to give the learners an opponent; they teach nothing.
  const size_t before = batch->records.size();
  batch->records.erase(std::remove_if(batch->records.begin(), batch->records.end(),
                                      [](const CallRecord& r) { return r.snapshot >= 0; }),
                       batch->records.end());
  const double episodes = static_cast<double>(std::max<size_t>(1, batch->episodes.size()));
  (*figures)["pool/episodes_share"] = with_snapshot / episodes;
  (*figures)["pool/snapshot_calls"] = static_cast<double>(before - batch->records.size());
  if (scored > 0) (*figures)["pool/snapshot_win_rate"] = snapshot_wins / scored;
  for (size_t m = 0; m < pools_.size(); ++m) {
    if (w_.snapshots[m].every > 0) (*figures)["pool/size/" + w_.models[m].name] = static_cast<double>(pools_[m].size());
  }
}

std::string SnapshotPools::SaveState() const {
  std::ostringstream out;
  out.precision(17);
  for (const auto& pool : pools_) {
    for (const PoolSnapshot& s : pool) out << s.model << ' ' << s.iteration << ' ' << s.wins << ' ' << s.games << '\n';
  }
  return out.str();
}

void SnapshotPools::LoadState(const std::string& text, int iteration) {
  for (auto& pool : pools_) pool.clear();
  std::istringstream in(text);
  PoolSnapshot s;
  while (in >> s.model >> s.iteration >> s.wins >> s.games) {
    if (s.model < 0 || s.model >= static_cast<int>(pools_.size())) {
      throw CheckpointError("the checkpoint's snapshot pools name model " + std::to_string(s.model) + " of " +
                            std::to_string(pools_.size()));
    }
    pools_[s.model].push_back(s);
  }
  for (size_t m = 0; m < pools_.size(); ++m) {
    if (w_.snapshots[m].every <= 0) continue;
    // Snapshots taken after the checkpoint (a run stopped between the two) are taken again, so go.
    for (const auto& [it, path] : SnapshotFolders(Root(static_cast<int>(m)))) {
      if (it > iteration) fs::remove_all(path);
    }
    Rescan(static_cast<int>(m), iteration);
  }
}

}  // namespace troupe
