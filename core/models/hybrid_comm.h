// The two-stage distillation of hybrid latent-text messages (the HyLaT
// protocol, see docs/hybrid_messages.md), as a training step on a ModelPool. A sender reads
// its prompt up to <bot>, then feeds z = Prj(h) back as its next input K times
// (the KV cache kept), then reads <eot> and writes its text; a reader's prompt
// holds the vectors at its Vocab::kSoft slots. Generating messages is the
// pool's (ModelPool::Generate with latent_steps and soft inputs); this file
// only trains them.
//
// Stage 1 distils each sender's reasoning text into its own latents. Stage 2
// co-trains readers of the senders' latents against a teacher pass of the
// reader's model that sees the whole message as text. Loss = CE(student
// answer) + w * SmoothL1(student hidden, teacher hidden at the position before
// the answer, every layer, divided by the teacher's spread) + CE(teacher
// answer) (+ CE of any text a sender writes). Torch-free header.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/models/model_pool.h"

namespace troupe {

// One step's settings, from a workflow's trainer.hybrid (its defaults: workflows/config/defaults.cc).
struct HybridSettings {
  int latent_vectors = 0;       // K (0: text-only channels)
  bool differentiable = false;  // readers' losses reach the latents of senders named by from_senders
  double distill_weight = 0.0;  // w, after its warm-up
  int eot = 0;                  // token id of <eot>
};

// Stage 1: one agent; the student encodes `reasoning` in its own latents, the teacher reads it as text.
struct SelfDistillExample {
  int model = 0, role_slot = 0;
  std::vector<int> prompt;     // ends with <bot>
  std::vector<int> reasoning;  // teacher: prompt + reasoning + <eot>
  std::vector<int> answer;
};

// Stage 2, a sender: its K latents after `prompt` (which ends with <bot>), then
// <eot> and `text`, teacher-forced (K = 0: the text follows the prompt).
struct SenderExample {
  int model = 0, role_slot = 0;
  std::vector<int> prompt;
  std::vector<int> text;  // may be empty (LATENT): the latents are then only for readers in this batch
};

// Stage 2, a reader. The student's prompt holds vectors at its Vocab::kSoft
// slots: `soft` as data [slots, soft_width] (an adapter maps another width), or
// the latents of the senders `from_senders` names (indices into the batch's
// senders, K slots each, in order; senders on the same model). The teacher's
// prompt holds the same messages as text. Both are followed by `answer`.
struct ReceiverExample {
  int model = 0, role_slot = 0;
  std::vector<int> prompt;
  std::vector<float> soft;
  int soft_width = 0;
  std::vector<int> from_senders;
  std::vector<int> teacher_prompt;
  std::vector<int> answer;
};

// One step's examples: stage 1 has `self`, stage 2 `senders` and `receivers`.
struct HybridBatch {
  std::vector<SelfDistillExample> self;
  std::vector<SenderExample> senders;
  std::vector<ReceiverExample> receivers;
  bool empty() const { return self.empty() && senders.empty() && receivers.empty(); }
};

// The examples of `batch` that name `model`, renumbered as model `as` (a model
// worker's pool holds one model); from_senders follow their senders.
HybridBatch ExamplesOfModel(const HybridBatch& batch, int model, int as);

// A step's figures by name: loss, answer_ce (student), teacher_ce, distill
// (hidden-state loss) and text_ce (senders' text), each present when the step had it.
using HybridStepStats = std::map<std::string, double>;

class HybridCommTrainer {
 public:
  // One AdamW per model, with that model's learning rate and weight decay.
  explicit HybridCommTrainer(ModelPool& pool);
  ~HybridCommTrainer();

  // One optimiser step for each model the batch names.
  HybridStepStats Step(const HybridBatch& batch, const HybridSettings& settings);
  // Optimiser states and the projections' dropout generators, for exact
  // resume; the models are the pool's to save.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
