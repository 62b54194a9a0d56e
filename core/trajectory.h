// GraphTrajectory records: one per LLM call. The rollout writes them, credit
// assignment fills rewards and advantages, the trainer reads them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct CallRecord {
  int64_t episode = 0;  // index within the iteration's batch of episodes
  int group = 0;        // episodes sharing a start form a group (GRPO "query")
  int role = 0;         // index of the logical role in the workflow
  int model = 0;        // index of the physical model
  int role_slot = 0;    // the role's slot inside its model (role token, adapter)
  int seat = 0;
  int turn = 0;
  int step = 0;       // pipelines: the tick the call ran in
  std::string phase;  // kind of decision ("vote", "speak", node name...)
  std::vector<int> prompt;
  std::vector<int> response;       // sampled tokens, <eos> included when emitted
  std::vector<float> logprobs;     // behaviour log-probabilities of `response`
  std::vector<int> first_options;  // guided decoding: the allowed first tokens (empty: any)
  bool valid = true;               // the game or parser could read the output
  double format = 0.0;             // the ROLE "format" signal: 0 valid, -1 not (or a parser's rewards)
  double answer_gain = 0.0;        // pipelines: the ROLE "answer_gain" signal (workflows/rollout/pipeline_credit.h)
  bool inert = false;              // the output provably could not change the outcome (State::Inert)
  double reward = 0.0;             // all reward terms (filled after the episode)
  double role_reward = 0.0;        // the ROLE-level part of `reward` (e.g. format)
  double advantage = 0.0;          // filled by credit assignment (non-PPO estimators)
  // Hybrid messages: the prompt's Vocab::kSoft slots hold vectors. The first
  // ones are other agents' latent vectors read as data (`soft_inputs`, rows of
  // `soft_width`, detached); with latent_steps K the last K slots (between
  // <bot> and <eot> at the prompt's end) are this call's own vectors, which the
  // trainer recomputes so the text's loss reaches the projection that made them.
  std::vector<float> soft_inputs;
  int soft_width = 0;
  int latent_steps = 0;
  std::vector<float> latents;  // the vectors this call sent (events, readers); not shipped to trainers
  // Evaluations' persuasion probes (State::Persuasion), for observers: what the
  // messages the seat heard recommended, and its answer with none heard.
  std::string recommended;
  std::vector<std::string> unheard;
  // Snapshot play: >= 0 when a frozen snapshot made this call (its index in
  // RolloutOptions::snapshots); `model` and `role_slot` are then the
  // snapshot's. Such calls are played, not trained on.
  int snapshot = -1;
};

}  // namespace troupe
