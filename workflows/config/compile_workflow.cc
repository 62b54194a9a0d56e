// Whole-workflow validation: roles, seats, models, sharing, rewards, credit and
// trainer settings; defaults filled in. Graph properties are checked in
// validate_graph.cc. Every error names its position or the offending name.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>

#include "core/base/errors.h"
#include "core/device_support.h"
#include "core/models/architecture_spec.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/compile_model_init.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/defaults.h"
#include "workflows/config/model_options.h"
#include "workflows/specs/enums.h"
#include "workflows/specs/model_spec.h"
#include "workflows/config/prompt_codec.h"
#include "workflows/config/validate_graph.h"

namespace troupe {

int CompiledWorkflow::RoleIndex(const std::string& name) const {
  for (size_t i = 0; i < rollout.roles.size(); ++i) {
    if (rollout.roles[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

bool CompiledWorkflow::LatentMessages() const {
  for (const auto& r : rollout.roles) {
    if (r.message_mode != config::TEXT) return true;
  }
  return false;
}

std::map<int, std::string> CompiledWorkflow::ScriptedSeats() const {
  std::map<int, std::string> m;
  for (const auto& r : rollout.roles) {
    if (!r.trained()) {
      for (int s : r.seats) m[s] = r.scripted;
    }
  }
  return m;
}

namespace {

ParamValue ToParamValue(const config::Param& p) {
  switch (p.value_case()) {
    case config::Param::kInt: return p.int_();
    case config::Param::kReal: return p.real();
    case config::Param::kFlag: return p.flag();
    case config::Param::kText: return p.text();
    default: break;
  }
  throw GameError("parameter '" + p.name() + "' has no value (write int:, real:, flag: or text:)");
}

bool SeatMatches(const std::string& pattern, const std::string& seat) {
  if (!pattern.empty() && pattern.back() == '*') return seat.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0;
  return pattern == seat;
}

void CompileGame(const LoadedWorkflow& w, CompiledWorkflow& c) {
  const config::GameSpec& spec = w.proto.game();
  const std::vector<ParamSpec>* specs = GameParamRegistry::Get().Find(spec.name());
  if (specs == nullptr) {
    w.Fail({{"game"}, {"name"}},
           "unknown game '" + spec.name() + "' (registered: " + JoinNames(GameFactory::Get().Names()) + ")");
  }
  Params params = ResolveParams(w, *specs, spec.param(), {{"game"}});
  try {
    c.rollout.game = GameFactory::Get().Create(spec.name(), params);
  } catch (const GameError& e) {
    // At the parameter the error names when the workflow sets it; else at the game.
    for (int i = 0; i < spec.param_size(); ++i) {
      if (!e.param().empty() && spec.param(i).name() == e.param()) {
        w.Fail({{"game"}, {"param", i}}, std::string("game '") + spec.name() + "': " + e.what());
      }
    }
    w.Fail({{"game"}}, std::string("game '") + spec.name() + "': " + e.what());
  }
  c.rollout.seat_names = c.rollout.game->SeatNames();
  c.rollout.seat_role.assign(c.rollout.seat_names.size(), -1);
}

void CompilePipelineTask(const LoadedWorkflow& w, CompiledWorkflow& c) {
  const config::PipelineSpec& spec = w.proto.pipeline();
  const std::vector<ParamSpec>* specs = PipelineTaskParamRegistry::Get().Find(spec.task());
  if (specs == nullptr) {
    w.Fail({{"pipeline"}, {"task"}}, "unknown pipeline task '" + spec.task() +
                                         "' (registered: " + JoinNames(PipelineTaskFactory::Get().Names()) + ")");
  }
  Params params = ResolveParams(w, *specs, spec.param(), {{"pipeline"}});
  c.rollout.pipeline = std::make_unique<CompiledPipeline>();
  try {
    c.rollout.pipeline->task = PipelineTaskFactory::Get().Create(spec.task(), params);
  } catch (const GameError& e) {
    w.Fail({{"pipeline"}}, std::string("task '") + spec.task() + "': " + e.what());
  }
}

// What a missing model folder's error adds: the command that makes troupe's own.
constexpr char kMakeBaseModel[] =
    " (troupe's base model is made by `troupe pretrain workflows/shipped/base_model.textproto --out "
    "runs/base_model`, into runs/base_model/model)";

// Whether the workflow file sets `field` of the model's architecture options.
bool WritesOption(const config::ModelSpec& model, const char* field) {
  if (model.architecture_case() == config::ModelSpec::ARCHITECTURE_NOT_SET) return false;
  const google::protobuf::Message& options = ArchitectureOptions(model);
  const google::protobuf::FieldDescriptor* f = options.GetDescriptor()->FindFieldByName(field);
  return f != nullptr && options.GetReflection()->HasField(options, f);
}


void CompileModels(const LoadedWorkflow& w, CompiledWorkflow& c) {
  std::set<std::string> names;
  for (int i = 0; i < w.proto.model_size(); ++i) {
    const config::ModelSpec& m = w.proto.model(i);
    if (m.name().empty()) w.Fail({{"model", i}}, "model needs a name");
    if (!names.insert(m.name()).second) w.Fail({{"model", i}, {"name"}}, "model '" + m.name() + "' is defined twice");
    CheckModelDevice(w, i);
    if (m.has_hf_dir() && m.architecture_case() != config::ModelSpec::ARCHITECTURE_NOT_SET) {
      w.Fail({{"model", i}, {"hf_dir"}}, "model '" + m.name() +
                                             "' names an architecture and an hf_dir; the folder's config.json "
                                             "names its architecture, so give one of them");
    }
    ModelConfig mc;
    try {
      mc = ModelConfigOf(c.proto.model(i));  // with its defaults
    } catch (const CheckpointError& e) {
      const bool missing = !std::filesystem::exists(m.hf_dir() + "/config.json");
      w.Fail({{"model", i}, {"hf_dir"}}, "model '" + m.name() + "': " + e.what() + (missing ? kMakeBaseModel : ""));
    }
    mc.index = static_cast<int>(c.models.size());
    CheckModelOptions(w, i, mc);
    if (mc.grad_clip < 0) w.Fail({{"model", i}, {"optimizer"}, {"grad_clip"}}, "grad_clip must be 0 (off) or positive");
    c.models.push_back(mc);
  }
}

// Who plays each seat when `members` play (every role, or a matchup's): the
// roles without a draw each take the seats they match, no seat twice, and
// the roles with one draw theirs per episode group from seats that a role
// without a draw plays otherwise. `matchup`: where the members come from
// (-1: the roles themselves), named in errors.
void AssignSeats(const LoadedWorkflow& w, const CompiledWorkflow& c, const std::vector<int>& members,
                 const std::vector<int>& draw_counts, const std::vector<std::vector<int>>& seat_patterns, int matchup,
                 std::vector<int>* seat_role, std::vector<RolloutSpec::SeatDraw>* seat_draws) {
  const std::string in = matchup < 0 ? "" : " in matchup '" + w.proto.matchup(matchup).name() + "'";
  seat_role->assign(c.rollout.seat_names.size(), -1);
  seat_draws->clear();
  for (int i : members) {
    const RoleInfo& info = c.rollout.roles[i];
    const config::RoleSpec& r = w.proto.role(i);
    if (draw_counts[i] < 0) {
      for (size_t k = 0; k < info.seats.size(); ++k) {
        const int s = info.seats[k];
        if ((*seat_role)[s] >= 0) {
          w.Fail({{"role", i}, {"seats", seat_patterns[i][k]}}, "seat '" + c.rollout.seat_names[s] +
                                                                    "' is already played by role '" +
                                                                    c.rollout.roles[(*seat_role)[s]].name + "'" + in);
        }
        (*seat_role)[s] = i;
      }
      continue;
    }
    const char* field = r.has_draw() ? "draw" : "draw_share";
    const int count = draw_counts[i];
    // Seats earlier draws may take first.
    int free = static_cast<int>(info.seats.size());
    for (const auto& d : *seat_draws) {
      for (int s : info.seats) {
        if (std::find(d.seats.begin(), d.seats.end(), s) != d.seats.end()) {
          free -= d.count;
          break;
        }
      }
    }
    if (count > free) {
      w.Fail({{"role", i}, {field}}, "role '" + r.name() + "': draw " + std::to_string(count) +
                                         " may find fewer seats left than that after the draws before it" + in);
    }
    seat_draws->push_back({i, count, info.seats});
  }
  for (size_t s = 0; s < c.rollout.seat_names.size(); ++s) {
    if ((*seat_role)[s] >= 0) continue;
    for (const auto& d : *seat_draws) {
      if (std::find(d.seats.begin(), d.seats.end(), static_cast<int>(s)) != d.seats.end()) {
        w.Fail({{"role", d.role}, {"draw"}}, "seat '" + c.rollout.seat_names[s] + "' is played by no role when role '" +
                                                 c.rollout.roles[d.role].name +
                                                 "' does not draw it: give it a role without a draw too" + in);
      }
    }
    if (matchup >= 0) {
      w.Fail({{"matchup", matchup}}, "seat '" + c.rollout.seat_names[s] + "' is played by no role of matchup '" +
                                         w.proto.matchup(matchup).name() + "'");
    }
    w.Fail({{"game"}, {"name"}}, "seat '" + c.rollout.seat_names[s] + "' is played by no role");
  }
}

// Who plays each seat: every role at once, or, with matchups, the roles of the matchup each episode group draws.
void CompileMatchups(const LoadedWorkflow& w, CompiledWorkflow& c, const std::vector<int>& draw_counts,
                     const std::vector<std::vector<int>>& seat_patterns) {
  if (w.proto.matchup_size() == 0) {
    std::vector<int> all(c.rollout.roles.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    AssignSeats(w, c, all, draw_counts, seat_patterns, -1, &c.rollout.seat_role, &c.rollout.seat_draws);
    return;
  }
  std::set<std::string> names;
  std::vector<bool> plays(c.rollout.roles.size(), false);
  for (int k = 0; k < w.proto.matchup_size(); ++k) {
    const config::MatchupSpec& spec = c.proto.matchup(k);  // with its defaults
    if (spec.name().empty()) w.Fail({{"matchup", k}}, "matchup needs a name");
    if (!names.insert(spec.name()).second) w.Fail({{"matchup", k}, {"name"}}, "matchup '" + spec.name() + "' is defined twice");
    if (!(spec.weight() > 0.0)) w.Fail({{"matchup", k}, {"weight"}}, "matchup '" + spec.name() + "': weight must be positive");
    RolloutSpec::Matchup m;
    m.name = spec.name();
    m.weight = spec.weight();
    std::vector<int> members;
    for (int j = 0; j < spec.roles_size(); ++j) {
      const int role = c.RoleIndex(spec.roles(j));
      if (role < 0) w.Fail({{"matchup", k}, {"roles", j}}, "matchup '" + spec.name() + "' names '" + spec.roles(j) + "', which is no role");
      if (std::find(members.begin(), members.end(), role) != members.end()) {
        w.Fail({{"matchup", k}, {"roles", j}}, "matchup '" + spec.name() + "' names '" + spec.roles(j) + "' twice");
      }
      members.push_back(role);
      plays[role] = true;
    }
    if (members.empty()) w.Fail({{"matchup", k}}, "matchup '" + spec.name() + "' names no role");
    AssignSeats(w, c, members, draw_counts, seat_patterns, k, &m.seat_role, &m.seat_draws);
    c.rollout.matchups.push_back(std::move(m));
  }
  for (size_t i = 0; i < plays.size(); ++i) {
    if (!plays[i]) w.Fail({{"role", static_cast<int>(i)}}, "role '" + c.rollout.roles[i].name + "' is in no matchup");
  }
  // The first matchup's seats stand for the workflow's (descriptions, the viewer's default).
  c.rollout.seat_role = c.rollout.matchups.front().seat_role;
  c.rollout.seat_draws = c.rollout.matchups.front().seat_draws;
}

void CompileRoles(const LoadedWorkflow& w, CompiledWorkflow& c) {
  std::set<std::string> names;
  std::vector<std::vector<int>> roles_of_model(c.models.size());
  std::vector<int> draw_counts(w.proto.role_size(), -1);            // per role: the seats it draws, -1: no draw
  std::vector<std::vector<int>> seat_patterns(w.proto.role_size());  // per role: the `seats` entry of each seat
  for (int i = 0; i < w.proto.role_size(); ++i) {
    const config::RoleSpec& r = w.proto.role(i);
    if (r.name().empty()) w.Fail({{"role", i}}, "role needs a name");
    if (!names.insert(r.name()).second) w.Fail({{"role", i}, {"name"}}, "role '" + r.name() + "' is defined twice");
    RoleInfo info;
    info.name = r.name();
    info.adapter = r.adapter();
    if (!r.model().empty() && !r.scripted().empty()) {
      w.Fail({{"role", i}, {"scripted"}}, "role '" + r.name() + "' names both a model and a scripted strategy");
    }
    if (r.model().empty() && r.scripted().empty()) {
      w.Fail({{"role", i}}, "role '" + r.name() + "' needs a model or a scripted strategy");
    }
    if (!r.model().empty()) {
      for (size_t m = 0; m < c.models.size(); ++m) {
        if (c.models[m].name == r.model()) info.model = static_cast<int>(m);
      }
      if (info.model < 0) {
        w.Fail({{"role", i}, {"model"}}, "role '" + r.name() + "' maps to undefined model '" + r.model() + "'");
      }
      info.slot = static_cast<int>(roles_of_model[info.model].size());
      info.frozen = c.models[info.model].frozen;
      roles_of_model[info.model].push_back(i);
    } else {
      if (!StrategyFactory::Get().Has(r.scripted())) {
        w.Fail({{"role", i}, {"scripted"}}, "role '" + r.name() + "': unknown scripted strategy '" + r.scripted() +
                                                "' (registered: " + JoinNames(StrategyFactory::Get().Names()) + ")");
      }
      if (c.rollout.game && StrategyFactory::Get().Create(r.scripted())->GameName() != c.rollout.game->Name()) {
        w.Fail({{"role", i}, {"scripted"}}, "role '" + r.name() + "': strategy '" + r.scripted() + "' plays " +
                                                StrategyFactory::Get().Create(r.scripted())->GameName() + ", not " +
                                                c.rollout.game->Name());
      }
      info.scripted = r.scripted();
      if (r.adapter() != config::ADAPTER_NONE) {
        w.Fail({{"role", i}, {"adapter"}}, "role '" + r.name() + "' is scripted; adapters belong to model roles");
      }
    }
    // Seats (game workflows only): every seat the role matches; who plays which is settled below.
    std::vector<int> patterns;  // per matched seat: the `seats` entry that matched it
    if (c.rollout.game) {
      if (r.seats_size() == 0) w.Fail({{"role", i}}, "role '" + r.name() + "' plays no seat");
      for (int j = 0; j < r.seats_size(); ++j) {
        bool matched = false;
        for (size_t s = 0; s < c.rollout.seat_names.size(); ++s) {
          if (!SeatMatches(r.seats(j), c.rollout.seat_names[s])) continue;
          matched = true;
          if (std::find(info.seats.begin(), info.seats.end(), static_cast<int>(s)) != info.seats.end()) continue;
          info.seats.push_back(static_cast<int>(s));
          patterns.push_back(j);
        }
        if (!matched) {
          w.Fail({{"role", i}, {"seats", j}}, "role '" + r.name() + "': seat '" + r.seats(j) + "' matches no seat of " +
                                                  c.rollout.game->Name() + " (seats " + c.rollout.seat_names.front() +
                                                  ".." + c.rollout.seat_names.back() + ")");
        }
      }
    } else if (r.seats_size() > 0) {
      w.Fail({{"role", i}, {"seats", 0}},
             "role '" + r.name() + "': seats belong to game workflows; pipelines use nodes");
    }
    if (r.has_draw_share() && !(r.draw_share() >= 0.0 && r.draw_share() <= 1.0)) {
      w.Fail({{"role", i}, {"draw_share"}}, "role '" + r.name() + "': draw_share " + std::to_string(r.draw_share()) +
                                                " must be a share between 0 and 1 of the seats it matches");
    }
    if (r.has_draw() || r.has_draw_share()) {
      const char* field = r.has_draw() ? "draw" : "draw_share";
      // A share is rounded to the nearest seat.
      const int count = r.has_draw() ? r.draw()
                                     : static_cast<int>(std::lround(r.draw_share() * static_cast<double>(info.seats.size())));
      if (!c.rollout.game) w.Fail({{"role", i}, {field}}, "role '" + r.name() + "': draw picks seats of a game");
      if (count < 0 || count > static_cast<int>(info.seats.size())) {
        w.Fail({{"role", i}, {field}}, "role '" + r.name() + "': draw " + std::to_string(count) +
                                           " must be between 0 and the " + std::to_string(info.seats.size()) +
                                           " seats it matches");
      }
      draw_counts[i] = count;
    }
    seat_patterns[i] = std::move(patterns);
    c.rollout.roles.push_back(info);
  }
  if (c.rollout.game) CompileMatchups(w, c, draw_counts, seat_patterns);
  // Sharing modes follow from the mapping and the adapters.
  int trained_roles = 0;
  for (const auto& r : c.rollout.roles) trained_roles += r.trained();
  for (size_t m = 0; m < c.models.size(); ++m) {
    const auto& members = roles_of_model[m];
    const int mi = static_cast<int>(m);
    if (members.empty()) w.Fail({{"model", mi}, {"name"}}, "model '" + c.models[m].name + "' is used by no role");
    std::set<int> adapters;
    for (int ri : members) adapters.insert(c.rollout.roles[ri].adapter);
    if (adapters.size() > 1) {
      w.Fail({{"role", members.back()}, {"adapter"}},
             "roles on model '" + c.models[m].name + "' mix adapter kinds; use one kind per model");
    }
    const int adapter = *adapters.begin();
    if (adapter != config::ADAPTER_NONE && members.size() < 2) {
      w.Fail({{"role", members.front()}, {"adapter"}},
             "role '" + c.rollout.roles[members.front()].name + "' has an adapter, but model '" + c.models[m].name +
                 "' serves no other role; adapters tell apart roles that share a model");
    }
    ModelConfig& mc = c.models[m];
    mc.num_roles = static_cast<int>(members.size());
    const int rank = c.proto.model(mi).lora_rank();
    if (rank <= 0) w.Fail({{"model", mi}, {"lora_rank"}}, "lora_rank must be positive");
    if (adapter == config::LORA) mc.lora_rank = rank;
    if (adapter == config::HEAD) mc.role_heads = true;
    if (adapter == config::HEAD && !ArchitectureSpecOf(mc.spec).per_role_heads()) {
      w.Fail({{"role", members.front()}, {"adapter"}}, "model '" + mc.name + "' is a " +
                                                           ArchitectureSpecOf(mc.spec).name() +
                                                           " model: its roles share it with LORA adapters, not HEAD");
    }
    std::string mode;
    if (members.size() == 1) {
      mode = trained_roles > 1 ? "separate" : "single role";
    } else if (adapter == config::LORA) {
      mode = "partial (shared trunk, per-role LoRA r=" + std::to_string(rank) + ")";
    } else if (adapter == config::HEAD) {
      mode = "partial (shared trunk, per-role heads)";
    } else {
      mode = "shared (" + std::to_string(members.size()) + " roles, told apart by role tokens)";
    }
    c.sharing.push_back(mode);
  }
}

void CompileRewards(const LoadedWorkflow& w, CompiledWorkflow& c) {
  // A workflow that trains nothing (scripted seats, or a world that runs by its own rules) needs no reward.
  const bool trains =
      std::any_of(c.rollout.roles.begin(), c.rollout.roles.end(), [](const RoleInfo& r) { return r.learns(); });
  if (w.proto.reward_size() == 0 && trains) {
    w.Fail({}, "no reward: add at least one reward { level: ... signal: ... }");
  }
  std::vector<std::string> trajectory, turn;
  if (c.rollout.game) {
    trajectory = c.rollout.game->SignalNames();
    turn = c.rollout.game->TurnSignalNames();
  } else {
    trajectory = {"score"};
  }
  for (int i = 0; i < w.proto.reward_size(); ++i) {
    const config::RewardSpec& r = w.proto.reward(i);
    RewardTerm term;
    term.level = r.level();
    term.signal = r.signal();
    term.weight = c.proto.reward(i).weight();
    term.to_go = r.to_go();
    term.split = r.split();
    if (r.to_go() && r.level() != config::TURN) {
      w.Fail({{"reward", i}, {"to_go"}}, "to_go applies to TURN rewards only");
    }
    if (r.split() && (r.level() != config::TRAJECTORY || !c.rollout.pipeline)) {
      w.Fail({{"reward", i}, {"split"}}, "split shares a pipeline's TRAJECTORY outcome among its calls");
    }
    const std::vector<std::string> role_signals =
        c.rollout.pipeline ? std::vector<std::string>{"format", "answer_gain"} : std::vector<std::string>{"format"};
    const std::vector<std::string> allowed = r.level() == config::TRAJECTORY ? trajectory
                                             : r.level() == config::TURN     ? turn
                                                                             : role_signals;
    if (std::find(allowed.begin(), allowed.end(), r.signal()) == allowed.end()) {
      w.Fail({{"reward", i}, {"signal"}}, "unknown " + config::RewardLevel_Name(r.level()) + " reward signal '" +
                                              r.signal() +
                                              "' (available: " + (allowed.empty() ? "none" : JoinNames(allowed)) + ")");
    }
    for (int j = 0; j < r.roles_size(); ++j) {
      const int ri = c.RoleIndex(r.roles(j));
      if (ri < 0 || !c.rollout.roles[ri].trained()) {
        w.Fail({{"reward", i}, {"roles", j}}, "reward names '" + r.roles(j) + "', which is not a trained role");
      }
      if (c.rollout.roles[ri].frozen) {
        w.Fail({{"reward", i}, {"roles", j}}, "reward names '" + r.roles(j) + "', which plays on frozen model '" +
                                                  c.models[c.rollout.roles[ri].model].name +
                                                  "': its reward would train nothing");
      }
      term.roles.push_back(ri);
    }
    c.rollout.rewards.push_back(term);
  }
}

Estimator ToEstimator(const LoadedWorkflow& w, config::Estimator e) {
  if (auto known = EstimatorOf(e)) return *known;
  w.Fail({{"credit"}, {"estimator"}}, "unknown estimator " + std::to_string(static_cast<int>(e)));
}

GroupKey ToGroupKey(const LoadedWorkflow& w, int key, int index) {
  if (auto known = GroupKeyOf(key)) return *known;
  w.Fail({{"credit"}, {"group_by", index}}, "unknown group key " + std::to_string(key));
}

void CompileTraining(const LoadedWorkflow& w, CompiledWorkflow& c) {
  const config::TrainerSpec& t = c.proto.trainer();  // with its defaults
  const config::CreditSpec& k = c.proto.credit();
  // A warm start alone (supervised, no reinforcement learning after it) may have no iterations.
  const bool warm_start = t.sft().episodes() > 0 || !t.sft().jsonl().empty() || !t.sft().session().empty();
  if (t.iterations() < 0 || (t.iterations() == 0 && !warm_start)) {
    w.Fail({{"trainer"}, {"iterations"}}, "iterations must be positive (or 0 after a warm start, trainer.sft)");
  }
  const std::pair<const char*, double> trainer_positive[] = {{"episodes_per_iteration", t.episodes_per_iteration()},
                                                             {"epochs", t.epochs()},
                                                             {"minibatch", t.minibatch()},
                                                             {"clip", t.clip()},
                                                             {"temperature", t.temperature()},
                                                             {"checkpoint_every", t.checkpoint_every()},
                                                             {"eval_episodes", t.eval_episodes()},
                                                             {"threads", t.threads()}};
  const std::pair<const char*, double> credit_positive[] = {{"group_size", k.group_size()},
                                                            {"gamma", k.gamma()},
                                                            {"lambda", k.lambda()},
                                                            {"baseline_decay", k.baseline_decay()}};
  for (const auto& [field, value] : trainer_positive) {
    if (value <= 0) w.Fail({{"trainer"}, {field}}, std::string(field) + " must be positive");
  }
  for (const auto& [field, value] : credit_positive) {
    if (value <= 0) w.Fail({{"credit"}, {field}}, std::string(field) + " must be positive");
  }
  RunSettings& run = c.run;
  run.iterations = t.iterations();
  run.episodes_per_iteration = t.episodes_per_iteration();
  run.group_size = k.group_size();
  run.eval_episodes = t.eval_episodes();
  run.max_minutes = t.max_minutes();
  run.checkpoint_every = t.checkpoint_every();
  run.threads = t.threads();
  run.correlated_team_sampling = t.correlated_team_sampling();
  run.overlap_environment = t.overlap_environment();
  run.guided_choices = t.guided_choices();
  run.greedy_eval = t.greedy_eval();
  run.sft_episodes = t.sft().episodes();
  run.sft_steps = t.has_sft() ? t.sft().steps() : 0;
  run.sft_teacher = t.sft().teacher();
  if (run.episodes_per_iteration % run.group_size != 0) {
    w.Fail({{"trainer"}, {"episodes_per_iteration"}},
           "episodes_per_iteration " + std::to_string(run.episodes_per_iteration) +
               " is not a multiple of credit.group_size " + std::to_string(run.group_size));
  }
  if (run.sft_episodes > 0 && c.rollout.pipeline && run.sft_teacher != "oracle") {
    w.Fail({{"trainer"}, {"sft"}, {"teacher"}},
           "a pipeline's sft teacher is \"oracle\" (the task's oracle sub-questions and gold answer), got '" +
               run.sft_teacher + "'");
  }
  if (run.sft_episodes > 0 && !c.rollout.pipeline && !StrategyFactory::Get().Has(run.sft_teacher)) {
    w.Fail({{"trainer"}, {"sft"}, {"teacher"}}, "sft teacher '" + run.sft_teacher + "' is not a scripted strategy");
  }

  c.credit.estimator = ToEstimator(w, k.estimator());
  if (k.group_by_size() > 0) {
    c.credit.group_by.clear();
    for (int i = 0; i < k.group_by_size(); ++i) c.credit.group_by.push_back(ToGroupKey(w, k.group_by(i), i));
  }
  // The default grouping is CreditConfig's (core/credit.h); the resolved workflow states it.
  auto* resolved_credit = c.proto.mutable_credit();
  resolved_credit->clear_group_by();
  for (GroupKey g : c.credit.group_by) resolved_credit->add_group_by(ToProto(g));
  c.credit.baseline_decay = k.baseline_decay();
  c.credit.baseline_inert = !k.keep_inert_outcome();

  if (t.update_records() < 0) w.Fail({{"trainer"}, {"update_records"}}, "update_records must be 0 (all) or positive");
  if (t.tree_row_positions() < 0 || t.tree_row_positions() > 65536) {
    w.Fail({{"trainer"}, {"tree_row_positions"}}, "tree_row_positions must be 0 (score each call on its own) to 65536");
  }
  if (t.pass_positions() < 0) {
    w.Fail({{"trainer"}, {"pass_positions"}}, "pass_positions must be 0 (one pass a minibatch) or positive");
  }
  c.trainer = TrainerConfigOf(t, k);  // the same settings a model worker gets
}

// How each model reads prompts (workflows/config/prompt_codec.h): the game's
// words through the workflow's vocabulary, or its text through the model's
// tokenizer. Fixes each model's vocabulary size and end token.
void CompilePrompts(const LoadedWorkflow& w, CompiledWorkflow& c) {
  std::vector<std::string> words =
      c.rollout.game ? c.rollout.game->Vocabulary() : c.rollout.pipeline->task->Vocabulary();
  if (c.rollout.pipeline) words.push_back("|");  // separates a node's inputs in its prompt
  if (c.hybrid() || c.LatentMessages()) {
    words.push_back("<bot>");
    words.push_back("<eot>");
  }
  std::vector<std::string> role_names;
  for (const auto& r : c.rollout.roles) role_names.push_back(r.name);
  c.rollout.vocab = Vocab(words, role_names);
  const std::shared_ptr<const PromptCodec> word_codec = MakeWordCodec(c.rollout.vocab);
  for (size_t i = 0; i < c.models.size(); ++i) {
    ModelConfig& m = c.models[i];
    const int mi = static_cast<int>(i);
    const config::ModelSpec& spec = w.proto.model(mi);
    const std::vector<PathStep> where{{"model", mi}, {spec.has_tokenizer() ? "tokenizer" : "hf_dir"}};
    if (m.tokenizer_json.empty()) {
      if (!m.hf_dir.empty() && m.vocab_size != c.rollout.vocab.size()) {
        w.Fail({{"model", mi}, {"hf_dir"}},
               "model '" + m.name + "': " + m.hf_dir + " holds a model of " + std::to_string(m.vocab_size) +
                   " tokens and no tokenizer.json, so it reads this workflow's word vocabulary of " +
                   std::to_string(c.rollout.vocab.size()) + " words, which it was not made for");
      }
      m.vocab_size = c.rollout.vocab.size();
      m.eos_token = Vocab::kEos;
      c.rollout.codecs.push_back(word_codec);
      continue;
    }
    // Text prompts: every part of the workflow this model serves must have a text form.
    if (c.rollout.game && !c.rollout.game->RendersText()) {
      w.Fail(where, "model '" + m.name + "' reads text (" + m.tokenizer_json + "), but game " + c.rollout.game->Name() +
                        " renders no text view of its observations");
    }
    if (c.hybrid() || (c.rollout.game && c.LatentMessages())) {
      w.Fail(where, "model '" + m.name + "' reads text (" + m.tokenizer_json +
                        "); latent and hybrid messages in games need word-vocabulary models so far");
    }
    std::shared_ptr<const PromptCodec> codec;
    try {
      codec = MakeTextCodec(m.tokenizer_json, role_names);
      if (c.LatentMessages()) codec->MessageMarkers();  // a pipeline's latent channels: <bot> and <eot>
    } catch (const Error& e) {
      w.Fail(where, "model '" + m.name + "': " + e.what());
    }
    if (!m.hf_dir.empty() && m.vocab_size < codec->vocab_size()) {
      w.Fail(where, "model '" + m.name + "': " + m.hf_dir + " holds a model of " + std::to_string(m.vocab_size) +
                        " tokens, fewer than its tokenizer's " + std::to_string(codec->vocab_size()));
    }
    if (m.hf_dir.empty()) m.vocab_size = codec->vocab_size();
    m.eos_token = codec->eos();
    c.rollout.codecs.push_back(std::move(codec));
  }
}

// Every prompt the game can produce must fit the model that reads it: the
// longest decision of each phase (Game::LongestDecisions) as the rollout
// encodes it (<bos>, role token, observation, a latent speaker's <bot> K <eot>;
// or the text view as a chat, through the model's tokenizer) plus its answer. Refused at the model's max_len, naming the prompt.
void ValidatePromptLengths(const LoadedWorkflow& w, const CompiledWorkflow& c) {
  if (!c.rollout.game) return;
  int message_words = 0;  // a latent message in a reader's view: <bot> K vectors <eot> and its words
  for (const auto& r : c.rollout.roles) {
    if (r.message_mode != config::TEXT) message_words = std::max(message_words, 2 + r.latent_vectors + r.text_words);
  }
  const std::vector<Decision> longest = c.rollout.game->LongestDecisions(message_words);
  for (size_t mi = 0; mi < c.models.size(); ++mi) {
    // The longest prompt and answer of any role on this model: the figure that fixes the config.
    const RoleInfo* role = nullptr;
    const Decision* worst = nullptr;
    int prompt = 0, answer = 0;
    for (const auto& r : c.rollout.roles) {
      if (r.model != static_cast<int>(mi)) continue;
      const PromptCodec& codec = *c.rollout.codecs[mi];
      for (const Decision& d : longest) {
        const bool latent = d.message && r.message_mode != config::TEXT;
        int p = 2 + static_cast<int>(d.observation.size()) + (latent ? 1 : 0);
        int a = latent ? r.latent_vectors + 1 + std::min(d.max_words, std::max(1, r.text_words)) : d.max_words;
        if (codec.reads_text()) {
          p = static_cast<int>(codec.TextPrompt(static_cast<int>(&r - c.rollout.roles.data()), d.text).size());
          a = codec.MaxNewTokens(d.max_words);
        }
        if (worst == nullptr || p + a > prompt + answer) role = &r, worst = &d, prompt = p, answer = a;
      }
    }
    const ModelConfig& m = c.models[mi];
    const int64_t max_len = m.sizes().max_len;
    if (worst == nullptr || prompt + answer <= max_len) continue;
    const int i = static_cast<int>(mi);
    const config::ModelSpec& spec = w.proto.model(i);
    const bool written = spec.has_hf_dir() || WritesOption(spec, "max_len");
    w.Fail(
        written ? ModelOptionsPath(w, i, ArchitectureSpecOf(m.spec).name(), "max_len") : std::vector<PathStep>{{"model", i}},
        "model '" + m.name + "': max_len " + std::to_string(max_len) + (written ? "" : " (the default)") +
            " is too short for role '" + role->name + "': the longest '" + worst->phase + "' prompt " +
            c.rollout.game->Name() + " can give it is " + std::to_string(prompt) + " tokens, and its answer " +
            std::to_string(answer) + "; set max_len to at least " + std::to_string(prompt + answer));
  }
}

}  // namespace

// Resolves a plug-in's typed params, failing at the offending param's position.
Params ResolveParams(const LoadedWorkflow& w, const std::vector<ParamSpec>& specs,
                     const google::protobuf::RepeatedPtrField<config::Param>& given, std::vector<PathStep> owner) {
  Params params(specs);
  for (int i = 0; i < given.size(); ++i) {
    try {
      params.Set(given[i].name(), ToParamValue(given[i]));
    } catch (const GameError& e) {
      std::vector<PathStep> at = owner;
      at.push_back({"param", i});
      w.Fail(at, e.what());
    }
  }
  return params;
}


CompiledWorkflow CompileWorkflow(const LoadedWorkflow& w) {
  CompiledWorkflow c;
  c.file = w.file;
  c.proto = w.proto;
  ApplyDefaults(&c.proto);  // compilation reads values from c.proto, positions from w
  c.seed = w.proto.seed();
  if (w.proto.has_pretrain()) w.Fail({{"pretrain"}}, "a pretraining workflow: run it with `troupe pretrain`");
  if (w.proto.has_experiment()) w.Fail({{"experiment"}}, "an experiment: run it with `troupe experiment`");
  const bool has_game = w.proto.has_game();
  const bool has_pipeline = w.proto.has_pipeline();
  if (has_game == has_pipeline) {
    w.Fail({}, has_game ? "a workflow has a game or a pipeline, not both"
                        : "a workflow needs a game { } or a pipeline { }");
  }
  if (has_game) CompileGame(w, c);
  else CompilePipelineTask(w, c);
  CompileModels(w, c);
  CompileRoles(w, c);
  for (auto& r : c.rollout.roles) {
    if (r.trained()) r.latent_width = static_cast<int>(c.models[r.model].sizes().width);
  }
  if (has_pipeline) ValidatePipelineGraph(w, c);
  ValidateChannels(w, c);
  CompileChannels(w, c);
  CompileRewards(w, c);
  CompilePools(w, c);
  CompileTraining(w, c);
  CompileRuntime(w, c);
  CompilePrompts(w, c);
  ValidatePromptLengths(w, c);
  CompileModelInits(w, c);
  if (c.hybrid() && !c.rollout.matchups.empty()) {
    w.Fail({{"matchup", 0}}, "matchups are not supported with trainer.hybrid yet");
  }
  if (c.hybrid() && !c.rollout.seat_draws.empty()) {
    w.Fail({{"role", c.rollout.seat_draws.front().role}, {"draw"}},
           "seats drawn per episode are not supported with trainer.hybrid yet");
  }
  for (const auto& m : c.models) c.rollout.max_len.push_back(static_cast<int>(m.sizes().max_len));
  if (c.rollout.pipeline) {
    // A pipeline's prompts are cut to fit (their length depends on the outputs); its answers are not.
    for (size_t i = 0; i < c.rollout.pipeline->nodes.size(); ++i) {
      const PipelineNode& n = c.rollout.pipeline->nodes[i];
      if (n.kind != config::ROLE_NODE) continue;
      const ModelConfig& m = c.models[c.rollout.roles[n.role].model];
      if (n.max_tokens + 16 > m.sizes().max_len) {
        w.Fail({{"pipeline"}, {"node", static_cast<int>(i)}, {"max_tokens"}},
               "node '" + n.name + "': max_tokens " + std::to_string(n.max_tokens) + " leaves model '" + m.name +
                   "' (max_len " + std::to_string(m.sizes().max_len) + ") too little room for a prompt");
      }
    }
    c.headline_metrics = c.rollout.pipeline->task->HeadlineMetrics();
    if (c.LatentMessages()) c.headline_metrics.push_back("latent_vectors");
  } else {
    for (const auto& r : c.rollout.roles) {
      if (r.trained() && !r.seats.empty()) {
        c.headline_metrics = c.rollout.game->HeadlineMetrics(r.seats.front());
        break;
      }
    }
    // What messages trained by distillation cost, beside what they achieve.
    if (c.hybrid())
      c.headline_metrics.insert(c.headline_metrics.end(), {"text_tokens", "latent_vectors", "wire_bytes"});
  }

  c.run.sft_demonstrations = LoadDemonstrations(w, c);
  return c;
}

std::string DescribeWorkflow(const CompiledWorkflow& c) {
  std::ostringstream out;
  out << (c.proto.name().empty() ? c.file : c.proto.name()) << ": ";
  if (c.rollout.game) out << "game " << c.rollout.game->Name() << " (" << c.rollout.seat_names.size() << " seats)";
  else out << "pipeline " << c.proto.pipeline().task() << " (" << c.rollout.pipeline->nodes.size() << " nodes)";
  if (c.models.empty()) out << ", simulation only (no model: troupe run)\n";
  else out << ", estimator " << EstimatorName(c.credit.estimator) << "\n";
  for (const auto& r : c.rollout.roles) {
    out << "  role " << r.name << " -> ";
    if (r.trained()) out << "model " << c.models[r.model].name;
    else out << "scripted " << r.scripted;
    if (!r.seats.empty())
      out << "  seats " << c.rollout.seat_names[r.seats.front()] << ".." << c.rollout.seat_names[r.seats.back()];
    out << "\n";
  }
  for (size_t m = 0; m < c.models.size(); ++m) {
    const auto& mc = c.models[m];
    const ArchitectureSpec& arch = ArchitectureSpecOf(mc.spec);
    const ModelSizes sizes = arch.Sizes(mc.spec);
    out << "  model " << mc.name << ": " << arch.name() << " d=" << sizes.width << " layers=" << sizes.layers
        << " heads=" << sizes.heads;
    if (!arch.Details(mc.spec).empty()) out << " " << arch.Details(mc.spec);
    if (!mc.hf_dir.empty()) out << " from " << mc.hf_dir;
    if (mc.init) out << " from checkpoint " << mc.init->checkpoint;
    out << " on " << mc.device << ", " << c.sharing[m] << (mc.frozen ? ", frozen" : "");
    if (c.rollout.codecs[m]->reads_text())
      out << ", text prompts (" << mc.tokenizer_json << ", " << mc.vocab_size << " tokens)";
    out << "\n";
  }
  if (!c.models.empty()) out << "  word vocabulary " << c.rollout.vocab.size() << " tokens";
  return out.str();
}

}  // namespace troupe
