// Pretraining: tokenizer and data, next-token steps as the run loop's
// objective (run_loop.h: resume, checkpoints, sinks, progress), then the final
// model folder and its baselines.
#include "workflows/run/pretrain_run.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include <google/protobuf/text_format.h>
#include <nlohmann/json.hpp>

#include "core/base/errors.h"
#include "core/checkpoint.h"
#include "core/models/language_model.h"
#include "core/models/pretrainer.h"
#include "core/rng.h"
#include "core/text/bpe_trainer.h"
#include "core/text/corpora.h"
#include "core/text/renamed_prose.h"
#include "core/text/tokenizer_folder.h"
#include "workflows/report/metrics_log.h"
#include "workflows/report/run_clock.h"
#include "workflows/run/reading_probes.h"
#include "workflows/run/run_loop.h"

namespace troupe {

namespace fs = std::filesystem;

namespace {

// The split's token stream: each document's ids, then <|endoftext|>.
struct Splits {
  std::vector<int> train, heldout;
  std::vector<int> corpus_train;  // the corpora's training tokens before documents were mixed in (else empty)
  size_t train_documents = 0, heldout_documents = 0;
};

// A Factbook document is named "region/code".
bool IsUnseenPage(const Document& d, const std::set<std::string>& pages) {
  if (d.corpus != "factbook" || pages.empty()) return false;
  const size_t slash = d.name.rfind('/');
  return pages.count(slash == std::string::npos ? d.name : d.name.substr(slash + 1)) > 0;
}

}  // namespace

PretrainDocuments ReadPretrainDocuments(const CompiledPretrain& w, const std::set<std::string>& unseen,
                                        std::ostream& out) {
  PretrainDocuments docs;
  int left_out = 0;
  for (const std::string& name : w.corpora) {
    for (Document& d : ReadCorpus(name)) {
      if (IsUnseenPage(d, unseen)) {
        ++left_out;
        continue;
      }
      (IsHeldOut(d, w.heldout_every) ? docs.heldout : docs.train).push_back(std::move(d));
    }
  }
  if (!w.unseen_questions.empty()) {
    out << "data: left out " << left_out << " Factbook pages that support the unseen questions (" << unseen.size()
        << " pages named)\n";
  }
  return docs;
}

std::vector<int> MixWithinSequences(const std::vector<int>& corpus, const std::vector<std::vector<int>>& reading,
                                    int length, int eot) {
  std::vector<int> out;
  out.reserve(corpus.size() + reading.size() * 160);
  size_t from = 0;  // the corpus tokens used so far
  auto take = [&](size_t n) {
    n = std::min(n, corpus.size() - from);
    out.insert(out.end(), corpus.begin() + from, corpus.begin() + from + n);
    from += n;
  };
  for (size_t k = 0; k < reading.size(); ++k) {
    const size_t due = corpus.size() * k / reading.size();  // the corpus's share before document k
    if (due > from) take(due - from);
    const size_t used = out.size() % length, size = reading[k].size() + 1;
    if (used + size > static_cast<size_t>(length)) take(length - used);
    if (out.size() % length + size > static_cast<size_t>(length))
      out.resize(out.size() + length - out.size() % length, eot);
    out.insert(out.end(), reading[k].begin(), reading[k].end());
    out.push_back(eot);
  }
  take(corpus.size() - from);
  return out;
}

namespace {

// Short documents' token ids from `next`, one after another, until `budget`
// tokens (each counted with its separator). One as long as a training
// sequence is left out (a question would be cut off from its passages, a
// name's later occurrences from its first) and counted in `left_out`; when
// most are, the run is refused, as its share would silently be made of the
// few short ones.
std::vector<std::vector<int>> ShortDocuments(const std::function<std::vector<int>()>& next, int64_t budget, int seq_len,
                                             const std::string& share, int64_t* left_out) {
  std::vector<std::vector<int>> docs;
  *left_out = 0;
  for (int64_t tokens = 0; tokens < budget;) {
    std::vector<int> ids = next();
    if (static_cast<int>(ids.size()) >= seq_len) {
      if (++*left_out > 100 && *left_out > static_cast<int64_t>(docs.size())) {
        throw Error("pretrain." + share + ": most of its documents (" + std::to_string(*left_out) + " of " +
                    std::to_string(*left_out + static_cast<int64_t>(docs.size())) + ") are longer than seq_len " +
                    std::to_string(seq_len) + " tokens; raise seq_len or the vocabulary size");
      }
      continue;
    }
    tokens += static_cast<int64_t>(ids.size()) + 1;
    docs.push_back(std::move(ids));
  }
  return docs;
}

// `ids` followed by itself.
std::vector<int> Twice(std::vector<int> ids) {
  const size_t n = ids.size();
  ids.resize(2 * n);
  std::copy_n(ids.begin(), n, ids.begin() + static_cast<std::ptrdiff_t>(n));
  return ids;
}

// Random sequences of ordinary tokens (8-64 of them, never added tokens nor,
// in a vocabulary of more than 512, bare bytes), each followed by itself, until
// `budget` tokens: the plainest lesson in predicting from the context.
std::vector<std::vector<int>> RepeatedSequences(const CompiledPretrain& w, const Tokenizer& tokenizer, int64_t budget) {
  std::set<int> added;
  for (const AddedToken& t : tokenizer.model().added) added.insert(t.id);
  std::vector<int> ordinary;
  for (int id = tokenizer.vocab_size() > 512 ? 256 : 0; id < tokenizer.vocab_size(); ++id) {
    if (!added.count(id)) ordinary.push_back(id);
  }
  Rng rng(Rng::Mix(w.seed, 43));
  const int longest = std::min(64, (w.seq_len - 1) / 2);
  std::vector<std::vector<int>> docs;
  for (int64_t tokens = 0; tokens < budget;) {
    std::vector<int> ids;
    for (int i = 0, n = std::min(8, longest) + rng.Below(std::max(1, longest - 7)); i < n; ++i) {
      ids.push_back(ordinary[rng.Below(static_cast<int>(ordinary.size()))]);
    }
    ids = Twice(std::move(ids));
    tokens += static_cast<int64_t>(ids.size()) + 1;
    docs.push_back(std::move(ids));
  }
  return docs;
}

}  // namespace

std::vector<std::vector<int>> RepeatedTextSpans(const std::vector<int>& corpus, int eot, int seq_len, uint64_t seed,
                                                int64_t budget) {
  const int longest = std::min(64, (seq_len - 1) / 2), shortest = std::min(8, longest);
  Rng rng(seed);
  std::vector<std::vector<int>> docs;
  int misses = 0;
  for (int64_t tokens = 0; tokens < budget;) {
    const int n = shortest + rng.Below(longest - shortest + 1);
    if (static_cast<int64_t>(corpus.size()) <= n)
      throw Error("pretrain.repeated_text_share: the corpora are too short");
    const auto start = corpus.begin() + rng.Below(static_cast<int>(corpus.size()) - n);
    if (std::find(start, start + n, eot) != start + n) {  // across a document's end: draw again
      if (++misses > 1000 && misses > 10 * static_cast<int>(docs.size())) {
        throw Error("pretrain.repeated_text_share: the corpora's documents are shorter than its spans");
      }
      continue;
    }
    std::vector<int> ids = Twice(std::vector<int>(start, start + n));
    tokens += static_cast<int64_t>(ids.size()) + 1;
    docs.push_back(std::move(ids));
  }
  return docs;
}

namespace {

Splits TokenizeCorpora(const CompiledPretrain& w, PretrainDocuments docs, const Tokenizer& tokenizer,
                       const std::function<std::string(uint64_t)>& reading_document, std::ostream& out) {
  const auto eot = tokenizer.TokenId("<|endoftext|>");
  if (!eot) throw TokenizerError("the tokenizer has no <|endoftext|> token to separate documents");
  std::vector<Document>& train = docs.train;
  // The training documents in an order fixed by the seed, so every corpus is spread over the run.
  Rng rng(Rng::Mix(w.seed, 31));
  for (size_t i = train.size(); i > 1; --i) std::swap(train[i - 1], train[rng.Below(static_cast<int>(i))]);
  // With reading documents, repeated sequences and renamed prose, the corpora fill their share of max_tokens and
  // those the rest.
  const double short_share = w.reading_share + w.induction_share + w.renamed_share + w.repeated_text_share;
  const int64_t corpus_budget =
      w.max_tokens > 0 ? static_cast<int64_t>(std::llround(w.max_tokens * (1.0 - short_share))) : 0;
  Splits s;
  int64_t corpus_tokens = 0, corpus_chars = 0;
  for (const Document& d : train) {
    if (corpus_budget > 0 && corpus_tokens >= corpus_budget) break;
    const std::vector<int> ids = tokenizer.Encode(d.text, false);
    corpus_chars += static_cast<int64_t>(d.text.size());
    s.train.insert(s.train.end(), ids.begin(), ids.end());
    s.train.push_back(*eot);
    corpus_tokens += static_cast<int64_t>(ids.size()) + 1;
    ++s.train_documents;
  }
  if (short_share > 0) {
    // Each share's tokens: of max_tokens, or in proportion to the corpora's tokens when there is no max_tokens.
    auto budget = [&](double share) {
      return static_cast<int64_t>(w.max_tokens > 0 ? w.max_tokens * share
                                                   : corpus_tokens * share / (1.0 - short_share));
    };
    std::vector<std::vector<int>> short_docs;
    int64_t left_out = 0;
    if (w.reading_share > 0) {
      uint64_t i = 0;
      short_docs = ShortDocuments([&] { return tokenizer.Encode(reading_document(i++), false); },
                                  budget(w.reading_share), w.seq_len, "reading_share", &left_out);
      out << "data: " << short_docs.size() << " reading documents";
      if (left_out > 0) out << " (" << left_out << " longer than seq_len left out)";
    }
    if (w.induction_share > 0) {
      std::vector<std::vector<int>> repeated = RepeatedSequences(w, tokenizer, budget(w.induction_share));
      out << (short_docs.empty() ? "data: " : ", ") << repeated.size() << " repeated random sequences";
      for (auto& r : repeated) short_docs.push_back(std::move(r));
    }
    if (w.renamed_share > 0) {
      // Windows of at most 700 characters and 60% of a sequence (45% when an echo may add a third), by the
      // corpora's characters per token.
      RenamedProseOptions options;
      options.echo = w.renamed_echo;
      const double chars_per_token = double(corpus_chars) / double(std::max<int64_t>(1, corpus_tokens));
      options.window_chars = std::min<size_t>(
          options.window_chars, static_cast<size_t>((w.renamed_echo > 0 ? 0.45 : 0.6) * w.seq_len * chars_per_token));
      RenamedProseWindows windows(train, Rng::Mix(w.seed, 47), options);
      std::vector<std::vector<int>> renamed =
          ShortDocuments([&] { return tokenizer.Encode(windows.Next(), false); }, budget(w.renamed_share), w.seq_len,
                         "renamed_share", &left_out);
      out << (short_docs.empty() ? "data: " : ", ") << renamed.size() << " windows of renamed prose";
      if (left_out > 0) out << " (" << left_out << " longer than seq_len left out)";
      for (auto& r : renamed) short_docs.push_back(std::move(r));
    }
    if (w.repeated_text_share > 0) {
      std::vector<std::vector<int>> spans =
          RepeatedTextSpans(s.train, *eot, w.seq_len, Rng::Mix(w.seed, 53), budget(w.repeated_text_share));
      out << (short_docs.empty() ? "data: " : ", ") << spans.size() << " repeated spans of the corpora";
      for (auto& r : spans) short_docs.push_back(std::move(r));
    }
    out << " mixed in, each within one training sequence\n";
    Rng mix(Rng::Mix(w.seed, 37));
    for (size_t i = short_docs.size(); i > 1; --i)
      std::swap(short_docs[i - 1], short_docs[mix.Below(static_cast<int>(i))]);
    s.train_documents += short_docs.size();
    s.corpus_train = std::move(s.train);
    s.train = MixWithinSequences(s.corpus_train, short_docs, w.seq_len, *eot);
  }
  if (w.max_tokens > 0 && static_cast<int64_t>(s.train.size()) > w.max_tokens) s.train.resize(w.max_tokens);
  for (const Document& d : docs.heldout) {
    const std::vector<int> ids = tokenizer.Encode(d.text, false);
    s.heldout.insert(s.heldout.end(), ids.begin(), ids.end());
    s.heldout.push_back(*eot);
    ++s.heldout_documents;
  }
  out << "data: " << s.train.size() << " training tokens (" << s.train_documents << " documents), " << s.heldout.size()
      << " held-out tokens (" << s.heldout_documents << " documents)\n";
  return s;
}

// The first lesson's stream (pretrain.first_lesson): its steps' chunks of the
// easiest-form reading documents at their share and corpus text in another
// order than the mix's (so it is mostly other text), the other lessons off.
Splits FirstLessonSplits(const CompiledPretrain& w, const PretrainDocuments& docs, const Tokenizer& tokenizer,
                         const std::function<std::string(uint64_t)>& reading_document, std::ostream& out) {
  CompiledPretrain lesson = w;
  lesson.seed = Rng::Mix(w.seed, 59);
  lesson.reading_share = w.first_lesson_reading_share;
  lesson.induction_share = lesson.renamed_share = lesson.repeated_text_share = 0.0;
  lesson.max_tokens = static_cast<int64_t>(w.first_lesson_steps) * w.batch * w.seq_len + w.seq_len + 1;
  PretrainDocuments train_only;
  train_only.train = docs.train;
  std::ostringstream said;
  Splits s = TokenizeCorpora(lesson, std::move(train_only), tokenizer, reading_document, said);
  std::istringstream lines(said.str());
  for (std::string line; std::getline(lines, line);) {
    out << "first lesson " << (line.rfind("data: ", 0) == 0 ? line.substr(6) : line) << "\n";
  }
  return s;
}

// Sequences of length+1 tokens starting every `length` tokens.
int64_t Chunks(const std::vector<int>& ids, int length) {
  return ids.size() > static_cast<size_t>(length) ? static_cast<int64_t>((ids.size() - 1) / length) : 0;
}

void AppendChunk(const std::vector<int>& ids, int64_t chunk, int length, std::vector<int>* out) {
  out->insert(out->end(), ids.begin() + chunk * length, ids.begin() + chunk * length + length + 1);
}

// The training order: each epoch a permutation of the chunks, fixed by the seed.
class ChunkOrder {
 public:
  ChunkOrder(int64_t chunks, uint64_t seed) : chunks_(chunks), seed_(seed) {}
  int64_t At(int64_t flat) {
    const int64_t epoch = flat / chunks_;
    if (epoch != epoch_) {
      order_.resize(chunks_);
      std::iota(order_.begin(), order_.end(), 0);
      Rng rng(Rng::Mix(seed_, 41, static_cast<uint64_t>(epoch)));
      for (int64_t i = chunks_; i > 1; --i) std::swap(order_[i - 1], order_[rng.Next() % static_cast<uint64_t>(i)]);
      epoch_ = epoch;
    }
    return order_[flat % chunks_];
  }

 private:
  int64_t chunks_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
};

double LearningRate(const CompiledPretrain& w, int step, int total) {
  const double peak = w.model.lr;
  if (step < w.warmup_steps) return peak * (step + 1) / w.warmup_steps;
  const double progress = total > w.warmup_steps ? double(step - w.warmup_steps) / (total - w.warmup_steps) : 1.0;
  const double floor = peak * w.min_lr_ratio;
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
}

// Mean held-out loss over `limit` tokens' chunks spread over the held-out text (0: all), in batches.
double HeldOutLoss(Pretrainer& model, const std::vector<int>& ids, int length, int batch, int64_t limit) {
  const int64_t all = Chunks(ids, length);
  const int64_t chunks = limit > 0 ? std::min<int64_t>(all, std::max<int64_t>(1, limit / length)) : all;
  double sum = 0.0;
  int64_t counted = 0;
  for (int64_t c = 0; c < chunks; c += batch) {
    const int n = static_cast<int>(std::min<int64_t>(batch, chunks - c));
    std::vector<int> tokens;
    // Evenly spaced over the held-out text, so a limited evaluation samples every corpus, not the first one.
    for (int i = 0; i < n; ++i) AppendChunk(ids, (c + i) * all / chunks, length, &tokens);
    sum += model.Loss(tokens, n, length) * n;
    counted += n;
  }
  return counted > 0 ? sum / counted : std::nan("");
}

// Perplexities of add-one unigram and interpolated bigram models of the
// training tokens on the held-out chunks' targets (the model's own targets).
std::pair<double, double> Baselines(const std::vector<int>& train, const std::vector<int>& heldout, int length,
                                    int vocab) {
  std::vector<double> unigram(vocab, 1.0);
  std::unordered_map<uint64_t, double> bigram;
  std::vector<double> context(vocab, 0.0);
  for (size_t i = 0; i < train.size(); ++i) {
    unigram[train[i]] += 1.0;
    if (i > 0) {
      bigram[(static_cast<uint64_t>(train[i - 1]) << 32) | static_cast<uint32_t>(train[i])] += 1.0;
      context[train[i - 1]] += 1.0;
    }
  }
  const double total = static_cast<double>(train.size()) + vocab;
  std::vector<std::pair<int, int>> targets;  // (previous, target)
  for (int64_t c = 0; c < Chunks(heldout, length); ++c) {
    for (int t = 1; t <= length; ++t) targets.emplace_back(heldout[c * length + t - 1], heldout[c * length + t]);
  }
  if (targets.empty()) return {std::nan(""), std::nan("")};
  double uni = 0.0;
  for (const auto& [prev, w] : targets) uni -= std::log(unigram[w] / total);
  double best = std::numeric_limits<double>::infinity();
  for (double lambda : {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95}) {
    double nll = 0.0;
    for (const auto& [prev, w] : targets) {
      const double pu = unigram[w] / total;
      const auto it = bigram.find((static_cast<uint64_t>(prev) << 32) | static_cast<uint32_t>(w));
      const double pb = context[prev] > 0 && it != bigram.end() ? it->second / context[prev] : 0.0;
      nll -= std::log(context[prev] > 0 ? lambda * pb + (1 - lambda) * pu : pu);
    }
    best = std::min(best, nll);
  }
  return {std::exp(uni / targets.size()), std::exp(best / targets.size())};
}

// A mean of the values added since the last reset (NaN before any).
struct RunningMean {
  double sum = 0.0;
  int count = 0;
  void Add(double value) { sum += value, ++count; }
  bool any() const { return count > 0; }
  double mean() const { return count > 0 ? sum / count : std::nan(""); }
};

// Next-token steps as the run loop's objective: a batch of chunks in the
// seed's order, the learning rate's schedule, and a line (with the held-out
// loss at evaluation steps) every 10 steps.
class PretrainObjective : public RunObjective {
 public:
  PretrainObjective(const CompiledPretrain& w, Pretrainer& model, const Splits& data, const Splits& lesson,
                    int total, const Tokenizer& tokenizer)
      : w_(w),
        model_(model),
        data_(data),
        lesson_(lesson),
        order_(Chunks(data.train, w.seq_len), w.seed),
        lesson_order_(std::max<int64_t>(1, Chunks(lesson.train, w.seq_len)), Rng::Mix(w.seed, 61)),
        total_(total),
        guide_(w.guided_attention) {
    guide_.unmatched_token = *tokenizer.TokenId("<|endoftext|>");
    if (guide_.Find(GuidedHeadKind::kLineStart) != nullptr || guide_.Find(GuidedHeadKind::kSubject) != nullptr) {
      for (int id = 0; id < tokenizer.vocab_size(); ++id) {  // ascending, as the targets' search needs
        const std::string text = tokenizer.Decode({id});
        if (text.find('\n') != std::string::npos) guide_.line_breaks.push_back(id);
        if (!text.empty() && text[0] == ' ') guide_.word_starts.push_back(id);
      }
    }
    head_means_.resize(guide_.heads.size());
    if (w.reading_share > 0) {
      // The reading documents' cue as it stands after a line's end, and the line's end that closes an answer.
      const std::vector<int> line_end = tokenizer.Encode("\n", false);
      answers_.cue = tokenizer.Encode("\nAnswer:", false);
      if (std::equal(line_end.begin(), line_end.end(), answers_.cue.begin()) &&
          answers_.cue.size() > line_end.size()) {
        answers_.cue.erase(answers_.cue.begin(), answers_.cue.begin() + line_end.size());
      }
      answers_.end = line_end.size() == 1 ? line_end[0] : -1;
      answers_.separator = guide_.unmatched_token;
      answers_.weight = w.answer_weight;
    }
  }

  int iterations() const override { return total_; }
  int checkpoint_every() const override { return w_.checkpoint_every; }
  std::string unit() const override { return "step"; }
  void Save(RunState*) const override {}
  void Load(RunState&) override {}

  IterationReport Iterate(int step) override {
    if (first_step_ < 0) first_step_ = step, t0_ = MonotonicSeconds();
    const int L = w_.seq_len, B = w_.batch;
    std::vector<int> tokens;
    tokens.reserve(static_cast<size_t>(B) * (L + 1));
    // The first lesson's steps read its stream, the rest the mix from its start.
    const bool in_lesson = step < w_.first_lesson_steps;
    const std::vector<int>& stream = in_lesson ? lesson_.train : data_.train;
    ChunkOrder& order = in_lesson ? lesson_order_ : order_;
    const int64_t first = static_cast<int64_t>(in_lesson ? step : step - w_.first_lesson_steps) * B;
    for (int i = 0; i < B; ++i) AppendChunk(stream, order.At(first + i), L, &tokens);
    const double lr = LearningRate(w_, step, total_);
    const PretrainStep s =
        model_.Step(tokens, B, L, lr, GuideAt(step), answers_.cue.empty() ? nullptr : &answers_);
    if (!std::isfinite(s.loss))
      throw ModelError("the training loss is " + std::to_string(s.loss) + " at step " + std::to_string(step + 1) +
                       "; lower the learning rate");
    loss_.Add(s.loss), norm_.Add(s.grad_norm);
    for (size_t j = 0; j < s.attention.size(); ++j) {
      if (!std::isnan(s.attention[j])) head_means_[step_heads_[j]].attention.Add(s.attention[j]);
    }
    for (size_t j = 0; j < s.copy.size(); ++j) {
      HeadMeans& head = head_means_[step_heads_[j]];
      if (!std::isnan(s.copy[j])) head.copy.Add(s.copy[j]);
      if (!std::isnan(s.write_share[j])) head.write_share.Add(s.write_share[j]);
    }
    if (!std::isnan(s.answer_loss)) answer_.Add(s.answer_loss);
    IterationReport report;
    const bool eval = (step + 1) % w_.eval_every == 0 || step + 1 == total_;
    if ((step + 1) % 10 != 0 && !eval) return report;
    report.has_line = true;
    JsonLine& line = report.line;
    line.Add("step", step + 1).Add("tokens", double(step + 1) * B * L).Add("loss", loss_.mean());
    line.Add("lr", lr).Add("grad_norm", norm_.mean());
    const double run_s = MonotonicSeconds() - t0_;
    const double tokens_per_s = run_s > 0 ? double(step + 1 - first_step_) * B * L / run_s : 0.0;
    line.Add("tokens_per_s", tokens_per_s);
    for (size_t h = 0; h < head_means_.size(); ++h) {
      if (head_means_[h].attention.any())
        line.Add(std::string("attention_") + GuidedHeadName(guide_.heads[h].kind), head_means_[h].attention.mean());
    }
    if (answer_.any()) line.Add("answer_loss", answer_.mean());
    for (size_t h = 0; h < head_means_.size(); ++h) {
      if (!head_means_[h].copy.any()) continue;
      const std::string head = GuidedHeadName(guide_.heads[h].kind);
      line.Add(head + "_copy_loss", head_means_[h].copy.mean())
          .Add(head + "_write_share", head_means_[h].write_share.mean());
    }
    if (eval) {
      const double h = HeldOutLoss(model_, data_.heldout, L, B, w_.eval_tokens);
      line.Add("heldout_loss", h).Add("heldout_perplexity", std::exp(h));
      heldout_ = h;
    }
    std::ostringstream p;
    if (in_lesson) p << "first lesson  ";
    p << "loss " << std::fixed << std::setprecision(3) << loss_.mean();
    if (answer_.any()) p << "  answers " << answer_.mean();
    if (!std::isnan(heldout_)) p << "  held-out ppl " << std::setprecision(1) << std::exp(heldout_);
    std::string heads;  // the guided heads' losses since the last line, "previous 0.12 induction 0.34 ..."
    for (size_t h = 0; h < head_means_.size(); ++h) {
      if (!head_means_[h].attention.any()) continue;
      std::ostringstream one;
      one << std::fixed << std::setprecision(2) << head_means_[h].attention.mean();
      heads += std::string(heads.empty() ? "" : " ") + GuidedHeadName(guide_.heads[h].kind) + " " + one.str();
    }
    if (!heads.empty()) p << "  guided attention " << heads;
    for (size_t h = 0; h < head_means_.size(); ++h) {
      const HeadMeans& head = head_means_[h];
      if (head.copy.any())
        p << "  " << GuidedHeadName(guide_.heads[h].kind) << " copies " << std::setprecision(2) << head.copy.mean()
          << " (write " << head.write_share.mean() << " of the stream)";
    }
    p << "  lr " << std::scientific << std::setprecision(1) << lr << std::fixed << "  "
      << static_cast<int64_t>(tokens_per_s) << " tok/s";
    report.progress = p.str();
    loss_ = norm_ = answer_ = RunningMean{};
    for (HeadMeans& m : head_means_) m = HeadMeans{};
    return report;
  }

 private:
  // The heads guided at `step` (nullptr: none); remade only where a head's steps begin or end.
  const GuidedAttention* GuideAt(int step) {
    std::vector<size_t> on = guide_.HeadsAt(step);
    if (!step_guide_ || on != step_heads_) {
      step_guide_ = guide_.At(step);
      step_heads_ = std::move(on);
    }
    return step_heads_.empty() ? nullptr : &*step_guide_;
  }

  const CompiledPretrain& w_;
  Pretrainer& model_;
  const Splits& data_;
  const Splits& lesson_;  // the first lesson's stream (empty without one)
  ChunkOrder order_, lesson_order_;
  const int total_;
  int first_step_ = -1;
  double t0_ = 0.0;
  double heldout_ = std::nan("");
  GuidedAttention guide_;
  std::optional<GuidedAttention> step_guide_;  // guide_'s heads at the latest step ...
  std::vector<size_t> step_heads_;             // ... and their indices in guide_.heads
  AnswerLoss answers_;  // with reading documents: their answers' loss, reported (and trained on, with a weight)
  // Since the last line: the step's losses and gradient norm; each guided
  // head's loss and the answers' over the steps whose batch gave them a target.
  RunningMean loss_, norm_, answer_;
  struct HeadMeans {
    RunningMean attention, copy, write_share;  // its attention loss, its copy loss, its write's share of the stream
  };
  std::vector<HeadMeans> head_means_;  // per head of guide_.heads
};

class PretrainRun {
 public:
  PretrainRun(const CompiledPretrain& w, const PretrainOptions& o, std::ostream& out)
      : w_(w), o_(o), out_(out), dir_(o.out_dir), tty_(::isatty(STDOUT_FILENO) && &out == &std::cout) {}

  PretrainResult Run() {
    PrepareFolder();
    if (!w_.unseen_questions.empty() && !o_.unseen_factbook_pages) {
      throw ConfigError("pretrain.unseen_questions: the pages they name were not resolved (troupe pretrain does)");
    }
    if (w_.reading_share > 0 && !o_.reading_document) {
      throw ConfigError("pretrain.reading_share: no reading documents were given (troupe pretrain makes them)");
    }
    PretrainDocuments documents =
        ReadPretrainDocuments(w_, o_.unseen_factbook_pages.value_or(std::set<std::string>{}), out_);
    const Tokenizer tokenizer = TokenizerOfRun(documents.train);
    const int L = w_.seq_len, B = w_.batch;
    Splits lesson;
    CompiledPretrain mix = w_;  // the first lesson's tokens come out of max_tokens
    if (w_.first_lesson_steps > 0) {
      if (!o_.first_lesson_document) {
        throw ConfigError("pretrain.first_lesson: no reading documents were given for it (troupe pretrain makes them)");
      }
      lesson = FirstLessonSplits(w_, documents, tokenizer, o_.first_lesson_document, out_);
      if (Chunks(lesson.train, L) < static_cast<int64_t>(w_.first_lesson_steps) * B)
        throw Error("pretrain.first_lesson: too little text for its " + std::to_string(w_.first_lesson_steps) +
                    " steps");
      if (mix.max_tokens > 0) mix.max_tokens -= static_cast<int64_t>(w_.first_lesson_steps) * B * L;
    }
    const Splits data = TokenizeCorpora(mix, std::move(documents), tokenizer, o_.reading_document, out_);
    const int64_t chunks = Chunks(data.train, L);
    if (chunks < B)
      throw Error("too little training text for one batch of " + std::to_string(B) + " x " + std::to_string(L) +
                  " tokens");
    const int total = w_.first_lesson_steps + static_cast<int>(std::ceil(w_.epochs * chunks / B));
    ModelConfig config = w_.model;
    config.vocab_size = tokenizer.vocab_size();
    config.num_roles = 1;
    Pretrainer model(config, Rng::Mix(w_.seed, 1000), w_.threads, w_.replicas);
    result_.run_dir = dir_.string();
    result_.parameters = model.parameter_count();
    result_.total_steps = total;
    result_.train_tokens = static_cast<int64_t>(data.train.size());
    result_.heldout_tokens = static_cast<int64_t>(data.heldout.size());
    const ModelSizes sizes = config.sizes();
    out_ << "model: " << result_.parameters << " parameters (vocabulary " << config.vocab_size << ", width "
         << sizes.width << ", " << sizes.layers << " layers); " << total << " steps of " << B << " x " << L
         << " tokens (" << w_.epochs << " pass" << (w_.epochs == 1 ? "" : "es");
    if (w_.first_lesson_steps > 0) out_ << "; the first " << w_.first_lesson_steps << " the first lesson";
    out_ << ")\n";
    PretrainObjective objective(w_, model, data, lesson, total, tokenizer);
    RunLoopSpec spec;
    spec.dir = dir_.string();
    spec.resume = o_.resume;
    spec.progress = o_.progress;
    spec.tty = tty_;
    spec.stop = o_.stop;
    spec.stop_at = o_.stop_at;
    spec.max_minutes = w_.max_minutes;
    spec.save_models = [&](const std::string& d) {
      model.Save(d);
      WriteTokenizerFolder(tokenizer, d + "/model");
    };
    spec.load_models = [&](const std::string& d) { model.Load(d); };
    RunLoop loop(std::move(spec), objective, out_);
    if (o_.resume) {
      std::string checkpoint;
      loop.Resume(&checkpoint);
      out_ << "resuming " << checkpoint << " at step " << loop.start() << "\n";
    }
    const RunLoopEnd end = loop.Run();
    result_.steps = end.iterations;
    result_.seconds = end.seconds;
    // At the time limit the model is written and measured as it stands (a shorter run, not a broken one);
    // an interrupted run is continued with --resume instead.
    if (end.interrupted) return result_;
    Finish(model, tokenizer, data);
    return result_;
  }

 private:
  void PrepareFolder() {
    if (!o_.resume && fs::exists(dir_ / "metrics.jsonl")) {
      throw Error(dir_.string() + " already holds a run: choose another --out, or continue it with --resume");
    }
    fs::create_directories(dir_);
    std::string text;
    google::protobuf::TextFormat::PrintToString(w_.proto, &text);
    WriteFileAtomically((dir_ / "workflow.resolved.textproto").string(), text);
  }

  // The workflow's tokenizer, or the one this run learns (once) on its training split.
  Tokenizer TokenizerOfRun(const std::vector<Document>& train) {
    if (!w_.tokenizer.empty()) return LoadTokenizer(w_.tokenizer);
    const fs::path folder = dir_ / "tokenizer";
    if (fs::exists(folder / "tokenizer.json")) return LoadTokenizer(folder.string());
    const double t0 = MonotonicSeconds();
    BpeTrainerOptions options;
    options.vocab_size = w_.vocab_size;
    BpeTrainer trainer(options);
    for (const Document& d : train) trainer.Add(d.text);  // BPE counts do not depend on the order
    Tokenizer tokenizer(trainer.Train());
    WriteTokenizerFolder(tokenizer, folder.string());
    out_ << "tokenizer: learnt " << tokenizer.vocab_size() << " tokens in " << static_cast<int>(MonotonicSeconds() - t0)
         << " s -> " << folder.string() << "\n";
    return tokenizer;
  }

  // The model folder, the final held-out perplexity beside the baselines, continuations.
  void Finish(Pretrainer& model, const Tokenizer& tokenizer, const Splits& data) {
    const fs::path folder = dir_ / "model";
    model.WriteModel(folder.string());
    WriteTokenizerFolder(tokenizer, folder.string());
    nlohmann::json generation = {{"eos_token_id", *tokenizer.TokenId("<|endoftext|>")}, {"do_sample", false}};
    WriteFileAtomically((folder / "generation_config.json").string(), generation.dump(2) + "\n");
    result_.model_dir = folder.string();
    const double h = HeldOutLoss(model, data.heldout, w_.seq_len, w_.batch, 0);
    result_.heldout_perplexity = std::exp(h);
    // The baselines count the corpora's text alone: held-out text is only the corpora's.
    std::tie(result_.unigram_perplexity, result_.bigram_perplexity) = Baselines(
        data.corpus_train.empty() ? data.train : data.corpus_train, data.heldout, w_.seq_len, tokenizer.vocab_size());
    std::ostringstream samples;
    const auto lm = LanguageModel::Load(folder.string(), w_.model.device.empty() ? "cpu" : w_.model.device);
    std::vector<int> stops = {*tokenizer.TokenId("<|endoftext|>")};
    nlohmann::json continuations = nlohmann::json::array();
    for (const std::string& prompt : w_.sample_prompts) {
      const std::vector<int> ids = tokenizer.Encode(prompt, false);
      const std::string text = tokenizer.Decode(lm->Generate(ids, 40, true, 1.0, w_.seed, stops));
      samples << prompt << "[" << text << "]\n\n";
      continuations.push_back({{"prompt", prompt}, {"continuation", text}});
    }
    WriteFileAtomically((dir_ / "samples.txt").string(), samples.str());
    // Whether it reads its context (reading_probes.h); a model too short for the probes' prompts is not probed.
    nlohmann::json probes = nlohmann::json::object();
    std::string probe_line;
    try {
      for (const ProbeScore& p : ProbeReading(*lm, tokenizer)) {
        probes[p.name] = {{"score", p.score}, {"count", p.count}, {"evidence_gain", p.evidence_gain}};
        result_.probes[p.name] = p.score;
        std::ostringstream f;
        f << std::fixed << std::setprecision(3) << p.score << " (" << std::showpos << std::setprecision(2)
          << p.evidence_gain << " nats)";
        probe_line += (probe_line.empty() ? "" : ", ") + p.name + " " + f.str();
      }
    } catch (const ModelError& e) {
      probes = {{"not_run", e.what()}};
      probe_line = std::string("not run: ") + e.what();
    }
    result_.finished = true;
    const nlohmann::json summary = {{"parameters", result_.parameters},
                                    {"steps", result_.steps},
                                    {"total_steps", result_.total_steps},  // more than steps: stopped at max_minutes
                                    {"seconds", result_.seconds},
                                    {"train_tokens", result_.train_tokens},
                                    {"tokens_seen", double(result_.steps) * w_.batch * w_.seq_len},
                                    {"heldout_tokens", result_.heldout_tokens},
                                    {"heldout_perplexity", result_.heldout_perplexity},
                                    {"unigram_perplexity", result_.unigram_perplexity},
                                    {"bigram_perplexity", result_.bigram_perplexity},
                                    {"probes", probes},
                                    {"samples", continuations}};
    // A continuation may end inside a character (40 byte-level tokens): such bytes are written as U+FFFD.
    WriteFileAtomically((dir_ / "summary.json").string(),
                        summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    out_ << std::fixed << std::setprecision(1) << "held-out perplexity " << result_.heldout_perplexity << " (unigram "
         << result_.unigram_perplexity << ", bigram " << result_.bigram_perplexity << ") after " << result_.steps
         << " steps in " << FormatDuration(result_.seconds) << "\nreading probes: " << probe_line
         << "\nmodel: " << folder.string() << "\nsamples: " << (dir_ / "samples.txt").string() << "\n";
  }

  const CompiledPretrain& w_;
  const PretrainOptions& o_;
  std::ostream& out_;
  const fs::path dir_;
  const bool tty_;
  PretrainResult result_;
};

}  // namespace

PretrainResult Pretrain(const CompiledPretrain& w, const PretrainOptions& options, std::ostream& out) {
  return PretrainRun(w, options, out).Run();
}

}  // namespace troupe
