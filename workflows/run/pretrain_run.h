// `troupe pretrain`: a base language model from real text, in a run folder like
// training's (resolved workflow, metrics.jsonl, TensorBoard events, atomic
// checkpoints, --resume), ending with the model as a Hugging Face folder
// (run/model: config.json, model.safetensors, tokenizer.json), its held-out
// perplexity beside unigram and bigram baselines, and greedy continuations.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/text/corpora.h"
#include "workflows/config/pretrain_config.h"

namespace troupe {

struct PretrainOptions {
  std::string out_dir;
  bool resume = false;
  bool progress = true;
  const std::atomic<bool>* stop = nullptr;  // set (Ctrl-C): checkpoint and stop
  int stop_at = 0;                          // > 0: checkpoint and stop before this step (tests)
  // The Factbook pages (codes) that support the workflow's unseen_questions,
  // left out of the corpus: resolved by the caller (qa::UnseenFactbookPages),
  // required when the workflow names unseen questions.
  std::optional<std::set<std::string>> unseen_factbook_pages;
  // Reading document `index` (the same index, the same text), required when
  // the workflow mixes them in (pretrain.reading_share): made by the caller
  // (qa::FactbookReadingDocuments), as the run layer reads no game data.
  std::function<std::string(uint64_t)> reading_document;
  // The first lesson's reading documents (pretrain.first_lesson), required when it has steps.
  std::function<std::string(uint64_t)> first_lesson_document;
};

struct PretrainResult {
  std::string run_dir;
  std::string model_dir;  // the Hugging Face folder (when the run finished)
  int steps = 0;
  int total_steps = 0;
  double seconds = 0.0;
  int64_t parameters = 0;
  int64_t train_tokens = 0;   // tokens in the training split (after max_tokens)
  int64_t heldout_tokens = 0;
  double heldout_perplexity = 0.0;  // of the final model, on every held-out target
  double unigram_perplexity = 0.0;  // add-one unigram counts of the training tokens
  double bigram_perplexity = 0.0;   // bigram interpolated with the unigram (weight best on held-out)
  std::map<std::string, double> probes;  // reading probe -> score (none when the model is too short for them)
  bool finished = false;
};

// The workflow's corpora, read once, split into training and held-out
// documents, less the Factbook pages in `unseen` (codes, as "region/code" ends).
struct PretrainDocuments {
  std::vector<Document> train, heldout;
};
PretrainDocuments ReadPretrainDocuments(const CompiledPretrain& workflow, const std::set<std::string>& unseen,
                                        std::ostream& out);

// The corpora's token stream with the reading documents spread evenly through
// it, each (shorter than `length`, with `eot` after it) inside one training sequence: sequences start
// every `length` tokens, so corpus text fills the rest of a sequence a
// document would otherwise cross the end of (<|endoftext|> once the corpus is used up).
std::vector<int> MixWithinSequences(const std::vector<int>& corpus, const std::vector<std::vector<int>>& reading,
                                    int length, int eot);

// Spans of `corpus` (a token stream whose documents end with `eot`), 8 to 64
// tokens long and never across a document's end, each followed by itself,
// drawn by `seed` until `budget` tokens: the induction lesson in ordinary text
// (pretrain.repeated_text_share). Error when no document is long enough.
std::vector<std::vector<int>> RepeatedTextSpans(const std::vector<int>& corpus, int eot, int seq_len, uint64_t seed,
                                                int64_t budget);

PretrainResult Pretrain(const CompiledPretrain& workflow, const PretrainOptions& options, std::ostream& out);

}  // namespace troupe
