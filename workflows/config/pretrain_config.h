// A pretraining workflow (`pretrain { ... }` and one Llama-family model),
// checked whole with file:line:col errors and resolved with its defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comms/proto/workflow.pb.h"
#include "core/models/model_pool.h"
#include "core/models/pretrainer.h"

namespace troupe {

class LoadedWorkflow;

struct CompiledPretrain {
  std::string file;
  config::Workflow proto;  // with its defaults
  uint64_t seed = 0;
  ModelConfig model;  // vocab_size is the tokenizer's, set when the run starts
  std::vector<std::string> corpora;
  int heldout_every = 0;
  std::string tokenizer;  // empty: learn one
  int vocab_size = 0;
  int seq_len = 0;
  int batch = 0;
  double epochs = 0.0;
  int64_t max_tokens = 0;
  int warmup_steps = 0;
  double min_lr_ratio = 0.0;
  int eval_every = 0;
  int64_t eval_tokens = 0;
  int checkpoint_every = 0;
  int threads = 0;
  int replicas = 1;  // copies of the model sharing each batch (threads split among them)
  double max_minutes = 0.0;
  std::vector<std::string> sample_prompts;
  std::vector<std::string> unseen_questions;  // question files whose supporting Factbook pages are left out
  double reading_share = 0.0;                 // of the training tokens, from reading documents
  double induction_share = 0.0;               // of the training tokens, random sequences repeated
  double renamed_share = 0.0;                 // of the training tokens, corpus prose with invented names
  double renamed_echo = 0.0;                  // of those windows, followed by one of their sentences again
  double repeated_text_share = 0.0;           // of the training tokens, spans of the corpora said twice
  double answer_weight = 0.0;                 // of the loss on reading documents' answers (0: reported only)
  double reading_fact_share = 0.0;            // of the reading documents, fact lists
  int reading_countries = 3;                  // per passage document
  bool reading_short_passages = false;        // each passage its title and its answer's clause
  int first_lesson_steps = 0;                 // first steps on easiest-form reading documents (0: none)
  double first_lesson_reading_share = 0.9;    // of the first lesson's tokens
  // Guided attention's heads, each with its steps (none: off), layers and weight (unmatched_token set at the start).
  GuidedAttention guided_attention;
};

CompiledPretrain CompilePretrain(const LoadedWorkflow& workflow);

}  // namespace troupe
