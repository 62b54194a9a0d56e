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
// next-token loss on where some heads look, `head` of each guided head's layer
// (Llama models only). What each kind of head is led to, at which positions:
enum class GuidedHeadKind {
  kPrevious,   // the previous position, everywhere
  kInduction,  // the position just after the latest earlier occurrence of the current token (an induction
               // head's place); tokens equal to `unmatched_token` (the document separator) are never matched
  kLookup,     // at each position that ends the answers' cue ("Answer:" in reading documents; needs an
               // AnswerLoss), where the answer's first tokens stand earlier in the row: the fact asked for
  kLineStart,  // the first token of the position's line (after the latest of `line_breaks` or
               // `unmatched_token`; none on a row's first line, whose start the row does not hold)
  kSubject,    // whose fact a line states: in a line that holds an answer found by the lookup, at each
               // position after its title's first word, that word's last token ("ia" of "Zorvia - ...");
               // at the cue, where that same token stands latest in the question (" Zorvia?"). A lookup
               // head after it can then match the question's subject to the line's.
};
// Its name in metrics and messages: "previous", "induction", "lookup", "line_start", "subject".
const char* GuidedHeadName(GuidedHeadKind kind);

struct GuidedHead {
  GuidedHeadKind kind = GuidedHeadKind::kPrevious;
  int layer = 0;
  double weight = 1.0;  // its loss's weight beside the next-token loss
  // The steps it is guided at, [from_step, until_step): the caller picks the
  // heads of a step with GuidedAttention::At.
  int from_step = 0;
  int until_step = std::numeric_limits<int>::max();
  // Lookup and subject only: the weight of a loss that the head's output
  // names what it finds (PolicyModelImpl::kept_writes at its target, read as
  // logits by direct_logits, led to the token there); 0: none.
  double copy_weight = 0.0;
  // The layer whose output, at the position that looks, scales that read as
  // a norm would scale the whole stream there: the last layer for the lookup
  // (what it adds to the logits), the head's own for a subject whose write
  // must be loud where it lands; -1: the write's own scale (what it carries).
  int copy_scale_layer = -1;
  // The copy loss trains what the layers below put into the stream the head
  // reads its values from too, not only the head's own projections.
  bool copy_reaches_stream = false;
};

struct GuidedAttention {
  // The guided heads, each on a layer of its own.
  std::vector<GuidedHead> heads = {{GuidedHeadKind::kPrevious, 0, 1.0}, {GuidedHeadKind::kInduction, 1, 1.0}};
  int head = 0;  // which head of each guided layer
  int unmatched_token = -1;
  bool induction_only_where_right = false;  // the induction head guided only where the next token is the one it finds
  std::vector<int> line_breaks;  // line_start, subject: the tokens that end a line (holding a newline), ascending
  std::vector<int> word_starts;  // subject: the tokens that begin a word (their text starts with a space), ascending
  // The guided head of `kind` (nullptr: none).
  const GuidedHead* Find(GuidedHeadKind kind) const;
  // Whether `other` guides the same heads (which attention weights a model must keep).
  bool SameHeads(const GuidedAttention& other) const;
  // The layers whose `head` is guided, each once.
  std::vector<int> Layers() const;
  // The heads guided at `step` (their indices in `heads`), and this guide with only them.
  std::vector<size_t> HeadsAt(int step) const;
  GuidedAttention At(int step) const;
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
  // With guided attention, per head of `GuidedAttention::heads`: its mean -log
  // weight on its guided positions (NaN: the batch gave it none).
  std::vector<double> attention;
  // With an AnswerLoss: the mean next-token loss on the batch's answer tokens (NaN: the batch held none).
  double answer_loss = std::numeric_limits<double>::quiet_NaN();
  // Per head of `GuidedAttention::heads`, with its copy_weight: the mean
  // cross-entropy of its output's logits at its targets against the tokens
  // there (NaN: no copy loss, or none this step).
  std::vector<double> copy;
  // Per head of `GuidedAttention::heads`, with its copy_weight: the mean norm
  // of what it writes from its targets, as a share of the norm of its layer's
  // output at the positions that look (NaN as `copy`). A write too faint
  // beside the stream is one the layers after it hardly read.
  std::vector<double> write_share;
};

// Per position of the first `length` tokens of each row of `tokens` (rows of
// `stride` tokens; 0: of `length`), the targets of `guide`'s heads (see
// GuidedHeadKind), -1 where a head has none: the previous position (-1 at the
// first); the induction target (-1 at a token's first occurrence and at
// `guide.unmatched_token`; with `induction_only_where_right`, kept only where
// the token at it is the row's next token, so copying what the head finds is
// right; the next token of a row's last input is the row's `length`-th token
// when `stride` leaves one); with `answers`, the lookup targets (at a position
// that ends `answers->cue`, the latest earlier position before the cue where
// the answer's first tokens, those after the cue up to `answers->end` or
// `answers->separator`, 4 at most, stand in the same order) and the subject
// targets; and the line-start targets. Rows of `length` targets each, row
// after row; a head's list is empty where it is not guided (lookup and
// subject: or without `answers`).
struct AttentionTargets {
  std::vector<int64_t> previous, induction, lookup, line_start, subject;
  const std::vector<int64_t>& Of(GuidedHeadKind kind) const;
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
  // (its lookup and subject heads' only with `answers`); with `answers`, the
  // answer loss is reported (and added, times its weight).
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
