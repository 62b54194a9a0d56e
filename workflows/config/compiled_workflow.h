// A workflow after validation: names resolved to indices, defaults applied
// (from the one table in workflows/config/defaults.cc: the structs below hold
// no defaults of their own),
// the game (or pipeline task) built, the vocabulary and model configs fixed.
// Everything the runtime needs; nothing in it can still be wrong.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "core/credit.h"
#include "core/game.h"
#include "core/models/model_pool.h"
#include "core/models/trainer.h"
#include "core/pipeline_task.h"
#include "workflows/config/output_parser.h"
#include "workflows/config/pipeline_expr.h"
#include "core/vocab.h"
#include "workflows/config/prompt_codec.h"
#include "workflows/specs/runtime_settings.h"
#include "workflows/config/sft_data.h"

namespace troupe {

struct RoleInfo {
  std::string name;
  std::vector<int> seats;  // game seats this role plays
  int model = -1;          // physical model, or -1 for a scripted role
  int slot = 0;            // the role's index among the roles of its model
  std::string scripted;    // strategy name for scripted roles
  config::Adapter adapter = config::ADAPTER_NONE;
  // How this role's messages (a game's message phases) travel, from its
  // channels, in reinforcement-learning runs: TEXT, or K latent vectors
  // (LATENT) followed by `text_words` words of its text (HYBRID).
  config::ChannelMode message_mode = config::TEXT;
  int latent_vectors = 0;
  int text_words = 0;
  int latent_width = 0;  // width of the vectors its messages carry (its model's d_model)
  bool trained() const { return model >= 0; }
};

struct RewardTerm {
  config::RewardLevel level = config::TRAJECTORY;
  std::string signal;
  double weight = 0.0;
  bool to_go = false;      // TURN: return-to-go from the call's turn
  bool split = false;      // TRAJECTORY: shared out among the calls that receive it
  std::vector<int> roles;  // empty: every trained role
};

struct PipelineNode {
  std::string name;
  config::NodeKind kind = config::ROLE_NODE;
  int role = -1;
  std::string tool;
  std::vector<int> inputs;  // without a prompt template: what the prompt shows after the question
  int max_tokens = 0;
  PromptTemplate prompt;                         // ROLE_NODE; empty: the question and `inputs`
  std::shared_ptr<const OutputParser> parser;    // ROLE_NODE
  std::optional<NodeRef> input;                  // TOOL_NODE: its inputs' items; none: `inputs`' raw texts
  bool input_question = false;                   // TOOL_NODE: its input is the query's question
  int retries = 0;                               // TOOL_NODE
  bool fail_open = true;                         // TOOL_NODE
  bool oracle = false;                           // ROLE_NODE: the oracle answers it (pipeline.oracle)
};

struct PipelineEdge {
  int from = 0;
  int to = 0;
  std::shared_ptr<const Condition> when;  // null: always
};

struct CompiledPipeline {
  std::unique_ptr<PipelineTask> task;
  std::vector<std::unique_ptr<PipelineTool>> tools;  // per node (null for non-tool nodes)
  std::vector<PipelineNode> nodes;
  std::vector<PipelineEdge> edges;
  std::vector<int> start;
  int max_steps = 0;
  int answer = -1;
  bool has_cycle = false;
};

struct RunSettings {
  int iterations = 0;
  int episodes_per_iteration = 0;
  int group_size = 0;
  int eval_episodes = 0;
  double max_minutes = 0.0;
  int checkpoint_every = 0;
  int threads = 0;
  bool correlated_team_sampling = false;
  bool overlap_environment = false;
  bool guided_choices = false;
  bool greedy_eval = false;  // the run's evaluations decode greedily
  int sft_episodes = 0;
  int sft_steps = 0;
  std::string sft_teacher;
  std::vector<Demonstration> sft_demonstrations;  // from trainer.sft.jsonl and .session
};

// What a rollout reads (Rollout, CallReward, and the prompts of hybrid
// distillation): the game or pipeline, who plays each seat, the roles, the
// vocabulary and the reward terms. No models, trainer or runtime.
struct RolloutSpec {
  std::unique_ptr<Game> game;                  // seat-driven workflows
  std::unique_ptr<CompiledPipeline> pipeline;  // node-driven workflows
  std::vector<std::string> seat_names;
  std::vector<int> seat_role;  // seat -> role index
  std::vector<RoleInfo> roles;
  Vocab vocab;
  // Per physical model: how it reads prompts and writes answers (the game's
  // words through `vocab`, or its text through the model's tokenizer).
  std::vector<std::shared_ptr<const PromptCodec>> codecs;
  std::vector<int> max_len;  // per physical model: the tokens a prompt and its answer may take
  std::vector<RewardTerm> rewards;

  // The codec of a trained role's model.
  const PromptCodec& Codec(int role) const { return *codecs.at(roles.at(role).model); }
};

// The whole compiled workflow: the rollout's spec and everything else. Its
// consumers take the narrow piece they need: Rollout a RolloutSpec, WorkerHub a
// HubSpec and each model worker a ModelServeSpec (workflows/specs/, made by serve_specs.h);
// the run loops (workflows/run) and the session's description take it whole.
struct CompiledWorkflow : RolloutSpec {
  std::string file;
  config::Workflow proto;  // with defaults filled in: the resolved config
  uint64_t seed = 0;

  std::vector<ModelConfig> models;
  std::vector<std::string> sharing;  // per model: "shared", "separate", "partial (LoRA r=4)"...
  CreditConfig credit;
  TrainerConfig trainer;
  RunSettings run;
  RuntimeSettings runtime;
  // trainer.hybrid (messages trained by distillation, workflows/run/distill_objective.cc):
  // its settings are proto.trainer().hybrid(), resolved; the one derived value
  // is the mode every channel shares.
  bool hybrid() const { return proto.trainer().has_hybrid(); }
  config::ChannelMode hybrid_mode = config::TEXT;

  // The episode metrics the run is judged by (Game::HeadlineMetrics from the
  // first trained seat's side, or the pipeline task's); empty: show them all.
  std::vector<std::string> headline_metrics;

  int RoleIndex(const std::string& name) const;
  // Some role sends LATENT or HYBRID messages through the reinforcement-learning runtime.
  bool LatentMessages() const;
  // Seat -> strategy for every scripted seat (for best-response search).
  std::map<int, std::string> ScriptedSeats() const;
};

class LoadedWorkflow;

// Validates the whole workflow and builds what the runtime needs.
// Throws ConfigError with file:line:col (or the offending role/seat/model).
CompiledWorkflow CompileWorkflow(const LoadedWorkflow& workflow);

// A one-paragraph human summary: game, roles -> models, sharing modes, estimator.
std::string DescribeWorkflow(const CompiledWorkflow& workflow);

}  // namespace troupe
