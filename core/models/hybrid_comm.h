// Hybrid latent-text messages on a ModelPool (the HyLaT protocol, see the
// README): a sender reads its prompt up to <bot>, then feeds z = Prj(h) back as
// its next input K times (the KV cache kept), then writes <eot> and a short
// text; a receiver splices the sender's K vectors into its own prompt as soft
// input embeddings. Training: stage 1 distils each sender's reasoning text into
// its latents (single agent); stage 2 co-trains a receiver reading a sender's
// latents, with a teacher pass of the receiver's model that sees the whole
// message as text. Loss = CE(student answer) + w * SmoothL1(student hidden,
// teacher hidden at the position before the answer, every layer, divided by
// the teacher's std) + CE(teacher answer) (+ CE of any text the sender writes).
// Torch-free header; token ids in, token ids and floats out.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/models/model_pool.h"

namespace troupe {

// Set from a workflow's trainer.hybrid (its defaults: workflows/config/defaults.cc).
struct HybridSettings {
  int latent_vectors = 0;       // K (0: a text-only channel)
  bool differentiable = false;  // stage 2: gradients flow from the receiver's loss into the sender
  double distill_weight = 0.0;
  int bot = 0, eot = 0;  // token ids of <bot> and <eot>
};

// One sender: its prompt ends with <bot>; after its latents and <eot> it writes `text_tokens` tokens.
struct SendQuery {
  int model = 0;
  int role_slot = 0;
  std::vector<int> prompt;
  int text_tokens = 0;
  std::vector<int> text_options;  // allowed text tokens (empty: any)
};

struct SentMessage {
  std::vector<float> latents;  // K x d, row-major (empty for text-only)
  int width = 0;               // d of the sender's model
  std::vector<int> text;
};

// One receiver: prompt ends with <bot>; the sender's latents (if any) and <eot> follow; then `answer_tokens`.
struct AnswerQuery {
  int model = 0;
  int role_slot = 0;
  std::vector<int> prompt;
  const SentMessage* heard = nullptr;  // another width: the model's latent_in adapter maps it
  int answer_tokens = 1;
  std::vector<int> options;
};

// Stage 1: one agent; the student encodes `reasoning` in its own latents, the teacher reads it as text.
struct SelfDistillExample {
  int model = 0, role_slot = 0;
  std::vector<int> prompt;     // ends with <bot>
  std::vector<int> reasoning;  // teacher: prompt + reasoning + <eot>
  std::vector<int> answer;
};

// Stage 2: a sender and a receiver.
struct CoTrainExample {
  int sender_model = 0, sender_slot = 0;
  std::vector<int> sender_prompt;  // ends with <bot>
  std::vector<int> sender_text;    // text after the sender's <eot> (teacher-forced); may be empty
  int receiver_model = 0, receiver_slot = 0;
  std::vector<int> receiver_prompt;  // ends with <bot>: the student reads the latents here
  std::vector<int> teacher_prompt;   // the receiver's prompt with the whole message in text, ends with <bot>
  std::vector<int> answer;
};

struct HybridStepStats {
  double loss = 0, answer_ce = 0, teacher_ce = 0, distill = 0, text_ce = 0;
};

class HybridCommTrainer {
 public:
  HybridCommTrainer(ModelPool& pool, HybridSettings settings);
  ~HybridCommTrainer();
  // The weight of the hidden-state loss from now on (warm-up schedules).
  void SetDistillWeight(double weight);

  std::vector<SentMessage> Send(const std::vector<SendQuery>& queries);           // greedy, no gradients
  std::vector<std::vector<int>> Answer(const std::vector<AnswerQuery>& queries);  // greedy, no gradients
  HybridStepStats SelfDistill(const std::vector<SelfDistillExample>& batch);      // one optimiser step
  HybridStepStats CoTrain(const std::vector<CoTrainExample>& batch);              // one optimiser step
  int64_t ParameterCount() const;
  // Optimiser states and LibTorch's generator (dropout masks), for exact resume;
  // the models are the pool's to save.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
