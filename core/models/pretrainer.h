// Next-token training of one language model (any architecture with a Hugging
// Face folder: llama, gpt2) on token sequences, behind a
// torch-free header: AdamW with gradient clipping, a learning rate per step,
// held-out loss, and checkpoints whose model part is a Hugging Face folder.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/models/model_pool.h"

namespace troupe {

// Guided attention (workflow.proto's GuidedAttentionSpec): a loss beside the
// next-token loss on where two heads look. `head` of `previous_layer` is led
// to the previous position, `head` of `induction_layer` to the position just
// after the latest earlier occurrence of the current token (an induction
// head's place). Tokens equal to `unmatched_token` (the document separator)
// are never matched. With `lookup_layer` >= 0 and an AnswerLoss beside it,
// `head` of that layer is led, at each position that ends the answers' cue
// ("Answer:" in reading documents), to where the answer's first tokens stand
// earlier in the row: where a reader finds the fact it is asked for; its loss
// counts `lookup_weight` times. With `line_start_layer` >= 0, `head` of that
// layer is led, at every position, to the first token of its line (the one
// after the latest of `line_breaks` or `unmatched_token`; none on a row's
// first line, whose start the row does not hold): in a passage, the title
// that says whose fact the line states. Llama models only.
struct GuidedAttention {
  double weight = 1.0;
  int previous_layer = 0, induction_layer = 1, head = 0;
  int unmatched_token = -1;
  int lookup_layer = -1;
  double lookup_weight = 1.0;
  bool induction_only_where_right = false;  // the induction head guided only where the next token is the one it finds
  int line_start_layer = -1;
  std::vector<int> line_breaks;  // the tokens that end a line (those holding a newline), in ascending order
  // Whether `other` guides the same heads (which attention weights a model must keep).
  bool SameHeads(const GuidedAttention& other) const {
    return previous_layer == other.previous_layer && induction_layer == other.induction_layer &&
           head == other.head && lookup_layer == other.lookup_layer && line_start_layer == other.line_start_layer;
  }
  // The layers whose `head` is guided, each once.
  std::vector<int> Layers() const;
};

// An extra loss on answers (workflow.proto's pretrain.answer_weight): the mean
// next-token loss on the tokens after each `cue` up to `end` or `separator`
// (the reading documents' answers after "Answer:"), times `weight`; with
// weight 0 it is measured, not trained on.
struct AnswerLoss {
  std::vector<int> cue;
  int end = -1, separator = -1;
  double weight = 0.0;
};

struct PretrainStep {
  double loss = 0.0;       // mean cross-entropy per target token (nats)
  double grad_norm = 0.0;  // before clipping
  // With guided attention: the two heads' mean -log weight on their guided positions.
  double previous_attention = std::numeric_limits<double>::quiet_NaN();
  double induction_attention = std::numeric_limits<double>::quiet_NaN();
  double lookup_attention = std::numeric_limits<double>::quiet_NaN();      // with a lookup head
  double line_start_attention = std::numeric_limits<double>::quiet_NaN();  // with a line-start head
  // With an AnswerLoss: the mean next-token loss on the batch's answer tokens (NaN: the batch held none).
  double answer_loss = std::numeric_limits<double>::quiet_NaN();
};

// Per position of the first `length` tokens of each row of `tokens` (rows of
// `stride` tokens; 0: of `length`), the targets of `guide`'s heads: the
// previous position, and the position after the latest earlier occurrence of
// the same token; -1 where there is none (the first position; a token's first
// occurrence, or `guide.unmatched_token`). With a lookup head (`lookup_layer`
// >= 0) and `answers`, also the lookup targets: at a position that ends
// `answers->cue`, the latest earlier position (before the cue) where the
// answer's first tokens (those after the cue up to `answers->end` or
// `answers->separator`, 4 at most) stand in the same order; -1 everywhere
// else. With `induction_only_where_right`, an induction target is kept only
// where the token at it is the row's next token (so copying what the head
// finds is right; the next token of a row's last input is the row's
// `length`-th token when `stride` leaves one). With a line-start head
// (`line_start_layer` >= 0), the line-start targets: the position after the
// latest line break (a `guide.line_breaks` or `guide.unmatched_token` token)
// before each position, which is the position itself on a line's first
// token; -1 up to the row's first break. Rows of `length` targets each, row
// after row.
struct AttentionTargets {
  std::vector<int64_t> previous, induction, lookup, line_start;
};
AttentionTargets GuidedAttentionTargets(const std::vector<int>& tokens, int length, int stride,
                                        const GuidedAttention& guide, const AnswerLoss* answers = nullptr);

// The positions (row * `length` + i, rows of `stride` tokens as above) of the
// inputs whose next token is one of an answer's: after a position that ends
// `answers.cue`, each token up to `answers.end` or `answers.separator`.
std::vector<int64_t> AnswerPositions(const std::vector<int>& tokens, int length, int stride,
                                     const AnswerLoss& answers);

class Pretrainer {
 public:
  // A fresh model of `config` (an architecture with a Hugging Face folder;
  // vocab_size set), seeded. With `replicas` > 1, each step's batch is cut
  // into that many shares, run side by side on copies of the model, each on
  // threads / replicas intra-op threads, and their gradients summed before
  // the one update: small models keep two cores busier this way than with
  // two intra-op threads on one (bench/pretrain_replicas_bench.cc).
  Pretrainer(const ModelConfig& config, uint64_t seed, int threads, int replicas = 1);
  ~Pretrainer();

  // One update on `batch` sequences of `length` + 1 tokens each (row-major):
  // inputs are the first `length`, targets the last `length`.
  // With `guide`, guided attention's loss is added (and reported) for this step
  // (its lookup head's only with `answers`); with `answers`, the answer loss is
  // reported (and added, times its weight).
  PretrainStep Step(const std::vector<int>& tokens, int batch, int length, double lr,
                    const GuidedAttention* guide = nullptr, const AnswerLoss* answers = nullptr);
  // Mean cross-entropy of the targets of such sequences, without updating.
  double Loss(const std::vector<int>& tokens, int batch, int length);

  int64_t parameter_count() const;  // the field's parameters (no value head)
  // The model as a Hugging Face folder (config.json, model.safetensors).
  void WriteModel(const std::string& dir) const;
  // A checkpoint folder: the model folder and the optimiser's state.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe
