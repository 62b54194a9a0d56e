// What a rollout reads (workflows/rollout: Rollout, CallReward, and the
// prompts of hybrid distillation): the game or pipeline, who plays each seat,
// the roles, the vocabulary, each model's prompt codec and the reward terms.
// No models, trainer or runtime. A compiled workflow holds one
// (CompiledWorkflow::rollout).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "core/game.h"
#include "core/pipeline_task.h"
#include "core/vocab.h"
#include "workflows/config/output_parser.h"
#include "workflows/config/pipeline_expr.h"
#include "workflows/config/prompt_codec.h"

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
  bool frozen = false;   // its model is frozen: it plays, and is never trained
  bool trained() const { return model >= 0; }  // played by a model (frozen or not), not a scripted strategy
  bool learns() const { return trained() && !frozen; }
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
  PromptTemplate prompt;                       // ROLE_NODE; empty: the question and `inputs`
  std::shared_ptr<const OutputParser> parser;  // ROLE_NODE
  std::optional<NodeRef> input;                // TOOL_NODE: its inputs' items; none: `inputs`' raw texts
  bool input_question = false;                 // TOOL_NODE: its input is the query's question
  int retries = 0;                             // TOOL_NODE
  bool fail_open = true;                       // TOOL_NODE
  bool oracle = false;                         // ROLE_NODE: the oracle answers it (pipeline.oracle)
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

// What a rollout reads (Rollout, CallReward, and the prompts of hybrid
// distillation): the game or pipeline, who plays each seat, the roles, the
// vocabulary and the reward terms. No models, trainer or runtime.
struct RolloutSpec {
  std::unique_ptr<Game> game;                  // seat-driven workflows
  std::unique_ptr<CompiledPipeline> pipeline;  // node-driven workflows
  std::vector<std::string> seat_names;
  std::vector<int> seat_role;  // seat -> role index (the roles without a draw: who plays a seat no draw took)
  // Roles that take `count` of `seats` per episode group (RoleSpec.draw), drawn in this order.
  struct SeatDraw {
    int role = -1, count = 0;
    std::vector<int> seats;
  };
  std::vector<SeatDraw> seat_draws;
  // Matchups (Workflow.matchup): each episode group draws one, by weight, and
  // its own seat_role and draws apply; empty: the ones above, always. With
  // matchups, seat_role and seat_draws above are the first matchup's.
  struct Matchup {
    std::string name;
    double weight = 1.0;
    std::vector<int> seat_role;
    std::vector<SeatDraw> seat_draws;
  };
  std::vector<Matchup> matchups;
  // The matchup an episode group whose game seed is `seed` plays; -1 without matchups.
  int MatchupOf(uint64_t seed) const;
  // Who plays each seat in an episode whose group's game seed is `seed`: its
  // matchup's seat_role (or seat_role) with the draws applied.
  std::vector<int> SeatRoles(uint64_t seed) const;
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

}  // namespace troupe
