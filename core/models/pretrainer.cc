// Pretrainer over any architecture with a Hugging Face folder, and AdamW.
#include "core/models/pretrainer.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/base/errors.h"
#include "core/models/architecture.h"
#include "core/models/model_pool_impl.h"
#include "core/models/module_tensors.h"
#include "core/models/torch_files.h"

namespace troupe {

namespace {

// Checks that `tokens` holds whole rows of `stride` tokens (0: `length`), of which `length` are inputs; the stride.
int RowStride(const std::vector<int>& tokens, int length, int stride) {
  if (stride == 0) stride = length;
  if (length <= 0 || stride < length || tokens.size() % static_cast<size_t>(stride) != 0) {
    throw ModelError("guided attention and the answer loss need whole rows of " + std::to_string(stride) + " tokens");
  }
  return stride;
}

// Calls f(i, n) at each input position i of `row` (`length` inputs of a row of `stride` tokens) that ends
// `cue`, with n > 0 the answer's tokens after it: those before `end` or `separator`, within the row, `most` at most.
template <typename F>
void ForEachAnswer(const int* row, int64_t length, int64_t stride, const std::vector<int>& cue, int end,
                   int separator, int64_t most, F f) {
  const auto c = static_cast<int64_t>(cue.size());
  if (c == 0) return;
  for (int64_t i = c - 1; i < length; ++i) {
    if (!std::equal(cue.begin(), cue.end(), row + i - c + 1)) continue;
    int64_t n = 0;
    while (n < most && i + 1 + n < stride && row[i + 1 + n] != end && row[i + 1 + n] != separator) ++n;
    if (n > 0) f(i, n);
  }
}

}  // namespace

const char* GuidedHeadName(GuidedHeadKind kind) {
  switch (kind) {
    case GuidedHeadKind::kPrevious: return "previous";
    case GuidedHeadKind::kInduction: return "induction";
    case GuidedHeadKind::kLookup: return "lookup";
    case GuidedHeadKind::kLineStart: return "line_start";
    case GuidedHeadKind::kSubject: return "subject";
  }
  return "?";
}

const GuidedHead* GuidedAttention::Find(GuidedHeadKind kind) const {
  for (const GuidedHead& h : heads) {
    if (h.kind == kind) return &h;
  }
  return nullptr;
}

bool GuidedAttention::SameHeads(const GuidedAttention& other) const {
  return head == other.head && Layers() == other.Layers();
}

std::vector<int> GuidedAttention::Layers() const {
  std::vector<int> layers;
  for (const GuidedHead& h : heads) layers.push_back(h.layer);
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

std::vector<size_t> GuidedAttention::HeadsAt(int step) const {
  std::vector<size_t> on;
  for (size_t h = 0; h < heads.size(); ++h) {
    if (step >= heads[h].from_step && step < heads[h].until_step) on.push_back(h);
  }
  return on;
}

GuidedAttention GuidedAttention::At(int step) const {
  GuidedAttention at = *this;
  at.heads.clear();
  for (size_t h : HeadsAt(step)) at.heads.push_back(heads[h]);
  return at;
}

const std::vector<int64_t>& AttentionTargets::Of(GuidedHeadKind kind) const {
  switch (kind) {
    case GuidedHeadKind::kPrevious: return previous;
    case GuidedHeadKind::kInduction: return induction;
    case GuidedHeadKind::kLookup: return lookup;
    case GuidedHeadKind::kLineStart: return line_start;
    case GuidedHeadKind::kSubject: return subject;
  }
  return previous;
}

namespace {

// Whether `token` ends a line (a line break, or the document separator).
bool EndsLine(const GuidedAttention& guide, int token) {
  return token == guide.unmatched_token ||
         std::binary_search(guide.line_breaks.begin(), guide.line_breaks.end(), token);
}

// Per position of each row, the first position of its line (-1 up to the row's first line break).
std::vector<int64_t> LineStarts(const std::vector<int>& tokens, int64_t length, int64_t stride,
                                const GuidedAttention& guide) {
  const size_t rows = tokens.size() / stride;
  std::vector<int64_t> starts(rows * length, -1);
  for (size_t row = 0; row < rows; ++row) {
    int64_t start = -1;  // the current line's first position, once a break has been seen
    for (int64_t i = 0; i < length; ++i) {
      starts[row * length + i] = start;
      if (EndsLine(guide, tokens[row * stride + i])) start = i + 1;  // the next position starts a line
    }
  }
  return starts;
}

// The subject targets (GuidedHeadKind::kSubject) from the lookup's and the line starts.
std::vector<int64_t> SubjectTargets(const std::vector<int>& tokens, int64_t length, int64_t stride,
                                    const GuidedAttention& guide, const std::vector<int64_t>& lookup,
                                    const std::vector<int64_t>& line_start) {
  const size_t rows = tokens.size() / stride;
  std::vector<int64_t> subject(rows * length, -1);
  auto starts_word = [&](int token) {
    return std::binary_search(guide.word_starts.begin(), guide.word_starts.end(), token);
  };
  for (size_t row = 0; row < rows; ++row) {
    const int* r = tokens.data() + row * stride;
    int64_t* out = subject.data() + row * length;
    for (int64_t cue = 0; cue < length; ++cue) {
      const int64_t found = lookup[row * length + cue];
      if (found < 0) continue;
      const int64_t start = line_start[row * length + found];
      if (start < 0) continue;
      int64_t word_end = start + 1;  // the title's first word: up to the next token that starts a word
      while (word_end < found && !starts_word(r[word_end])) ++word_end;
      if (word_end >= found) continue;
      const int64_t title = word_end - 1;
      int64_t asked = -1;  // the title's token, latest in the question (after the fact, before the cue)
      for (int64_t p = cue - 1; p > found; --p) {
        if (r[p] == r[title]) {
          asked = p;
          break;
        }
      }
      if (asked < 0) continue;
      out[cue] = asked;
      for (int64_t p = title + 1; p < length && !EndsLine(guide, r[p]); ++p) out[p] = title;
    }
  }
  return subject;
}

}  // namespace

AttentionTargets GuidedAttentionTargets(const std::vector<int>& tokens, int length, int stride,
                                        const GuidedAttention& guide, const AnswerLoss* answers) {
  stride = RowStride(tokens, length, stride);
  const int unmatched = guide.unmatched_token;
  AttentionTargets t;
  const size_t rows = tokens.size() / stride;
  t.previous.resize(rows * length);
  t.induction.assign(rows * length, -1);
  std::unordered_map<int, int64_t> last;  // token -> its latest position in the row
  for (size_t row = 0; row < rows; ++row) {
    last.clear();
    for (int64_t i = 0; i < length; ++i) {
      const int token = tokens[row * stride + i];
      const size_t at = row * length + i;
      t.previous[at] = i - 1;
      if (token == unmatched) continue;
      const auto it = last.find(token);
      if (it != last.end()) {
        const int64_t found = it->second + 1;
        const bool right = i + 1 < stride && tokens[row * stride + found] == tokens[row * stride + i + 1];
        if (!guide.induction_only_where_right || right) t.induction[at] = found;
      }
      last[token] = i;
    }
  }
  const bool subject = guide.Find(GuidedHeadKind::kSubject) != nullptr;
  const bool line_starts = guide.Find(GuidedHeadKind::kLineStart) != nullptr;
  std::vector<int64_t> line_start;
  if (line_starts || subject) line_start = LineStarts(tokens, length, stride, guide);
  if (line_starts) t.line_start = line_start;
  const bool answered = answers != nullptr && !answers->cue.empty();
  const bool lookup_head = guide.Find(GuidedHeadKind::kLookup) != nullptr;
  if (!answered || (!lookup_head && !subject)) return t;
  constexpr int64_t kAnswerTokens = 4;  // matched of each answer: enough to tell a name from a chance token
  const auto c = static_cast<int64_t>(answers->cue.size());
  std::vector<int64_t> lookup(rows * length, -1);
  for (size_t row = 0; row < rows; ++row) {
    const int* r = tokens.data() + row * stride;
    ForEachAnswer(r, length, stride, answers->cue, answers->end, answers->separator, kAnswerTokens,
                  [&](int64_t i, int64_t n) {
                    for (int64_t j = i - c + 1 - n; j >= 0; --j) {  // wholly before the cue, the latest first
                      if (std::equal(r + j, r + j + n, r + i + 1)) {
                        lookup[row * length + i] = j;
                        break;
                      }
                    }
                  });
  }
  if (subject) t.subject = SubjectTargets(tokens, length, stride, guide, lookup, line_start);
  if (lookup_head) t.lookup = std::move(lookup);
  return t;
}

std::vector<int64_t> AnswerPositions(const std::vector<int>& tokens, int length, int stride,
                                     const AnswerLoss& answers) {
  stride = RowStride(tokens, length, stride);
  std::vector<int64_t> positions;
  for (size_t row = 0; row < tokens.size() / stride; ++row) {
    ForEachAnswer(tokens.data() + row * stride, length, stride, answers.cue, answers.end, answers.separator,
                  std::numeric_limits<int64_t>::max(), [&](int64_t i, int64_t n) {
                    for (int64_t k = i; k < i + n && k < length; ++k) positions.push_back(int64_t(row) * length + k);
                  });
  }
  return positions;
}

namespace {

// Positions that have a target (>= 0).
int64_t Guided(const std::vector<int64_t>& target) {
  return std::count_if(target.begin(), target.end(), [](int64_t t) { return t >= 0; });
}

// -log weight of attention `att` [B,T,Tk] on `target` [B,T] (-1: none), summed
// over the positions that have one and divided by `over` (the whole batch's
// such positions, so the shares of a batch add up to its mean).
torch::Tensor AttentionLoss(const torch::Tensor& att, const std::vector<int64_t>& target, int64_t over) {
  const torch::Tensor index = torch::tensor(target, torch::kLong).view({att.size(0), att.size(1)}).to(att.device());
  const torch::Tensor valid = index.ge(0);
  if (!valid.any().item<bool>()) return att.sum() * 0.0;
  const torch::Tensor picked = att.to(torch::kFloat).gather(-1, index.clamp_min(0).unsqueeze(-1)).squeeze(-1);
  return -(picked.masked_select(valid) + 1e-9).log().sum() / static_cast<double>(over);
}

// A guided head's copy loss (GuidedHead::copy_weight) and how loud its write is.
struct CopyResult {
  torch::Tensor loss;
  double write_share = 0.0;
};

// What `head` writes from each of its targets [B,T] (-1: none),
// read as logits at the position that looks (scaled by `scale_stream` [B,T,H]
// there, as a norm scales it; undefined: at the write's own scale), against
// the token looked at (in `input` [B,T]); beside it the write's norm as a
// share of `own_stream`'s [B,T,H] (the head's layer's output) there. Both
// summed and divided by `over`, as AttentionLoss.
CopyResult CopyLoss(PolicyModelImpl& model, const GuidedHead& head, const std::vector<int64_t>& target,
                    const torch::Tensor& input, const torch::Tensor& scale_stream, const torch::Tensor& own_stream,
                    int64_t over) {
  const torch::Tensor writes = model.kept_writes(head.layer, head.copy_reaches_stream);
  const int64_t B = writes.size(0), T = writes.size(1);
  std::vector<int64_t> looking, looked_at;  // flat positions b * T + t and b * T + target
  for (size_t p = 0; p < target.size(); ++p) {
    if (target[p] < 0) continue;
    looking.push_back(static_cast<int64_t>(p));
    looked_at.push_back(static_cast<int64_t>(p) / T * T + target[p]);
  }
  if (looked_at.empty()) return {writes.sum() * 0.0, 0.0};
  const torch::Tensor from = torch::tensor(looked_at, torch::kLong).to(writes.device());
  const torch::Tensor at = torch::tensor(looking, torch::kLong).to(writes.device());
  const auto at_looking = [&](const torch::Tensor& stream) { return stream.reshape({B * T, -1}).index_select(0, at); };
  const torch::Tensor written = writes.reshape({B * T, -1}).index_select(0, from);
  const torch::Tensor own = at_looking(own_stream);
  const torch::Tensor scale =
      !scale_stream.defined() ? written : scale_stream.is_same(own_stream) ? own : at_looking(scale_stream);
  const torch::Tensor logits = model.direct_logits(written, scale).to(torch::kFloat);
  const torch::Tensor tokens = input.reshape({B * T}).index_select(0, from);
  CopyResult result;
  result.loss = torch::nn::functional::cross_entropy(
                    logits, tokens, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
                static_cast<double>(over);
  torch::NoGradGuard no_grad;
  const torch::Tensor ratio = written.to(torch::kFloat).norm(2, -1) / own.to(torch::kFloat).norm(2, -1);
  result.write_share = ratio.sum().item<double>() / static_cast<double>(over);
  return result;
}

}  // namespace

// One copy of the model and whose heads it keeps. Replica 0 is the trained
// model; the others follow its parameters and lend their gradients.
struct Replica {
  PolicyModel model;
  std::optional<GuidedAttention> guiding;  // whose heads are kept now

  // Keeps the guided heads' attention weights while guiding, and none otherwise.
  void Guide(const GuidedAttention* guide) {
    if (guide != nullptr && guiding && guide->SameHeads(*guiding)) return;
    if (guiding) {
      for (int layer : guiding->Layers()) model->keep_attention(layer, -1);
      guiding.reset();
    }
    if (guide != nullptr) {
      for (int layer : guide->Layers()) model->keep_attention(layer, guide->head);
      guiding = *guide;
    }
  }

  // Cross-entropy of each of `target`'s tokens after `input` [B,T], row after row [B*T]; with
  // `layers`, each layer's output [B,T,H] too.
  torch::Tensor LossesOf(const torch::Tensor& input, const torch::Tensor& target,
                         std::vector<torch::Tensor>* layers = nullptr) {
    const int64_t B = input.size(0), T = input.size(1);
    const auto on = torch::TensorOptions().device(input.device());
    const torch::Tensor positions = torch::arange(T, on.dtype(torch::kLong)).repeat({B, 1});
    LMOutput o = model->forward_embeds(model->embed(input), positions, torch::ones({B, T}, on.dtype(torch::kBool)), {},
                                       nullptr, layers != nullptr);
    if (layers != nullptr) *layers = std::move(o.layers);
    return torch::nn::functional::cross_entropy(o.logits.reshape({B * T, -1}), target.reshape({B * T}),
                                                torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  }
};

// What one replica's share of a batch gave.
struct ShareResult {
  double loss = 0.0;
  std::vector<double> attention;  // per guided head, its share of the loss
  double answer_sum = 0.0;  // the next-token losses on its answer tokens, summed
  std::vector<double> copy;  // per guided head, its share of the head's copy loss
  std::vector<double> write_share;  // per guided head, its share of the head's write share
};

struct Pretrainer::Impl {
  ModelConfig config;
  torch::Device device = torch::kCPU;         // the model's (config.device)
  std::vector<Replica> replicas;              // [0] is the model trained
  std::vector<torch::Tensor> decayed, plain;  // replica 0's, weight decay on matrices only
  std::unique_ptr<torch::optim::AdamW> optimizer;
  int blas_threads_before = 0;  // OpenBLAS's threads before the replicas took theirs, restored at the end

  ~Impl() {
    if (blas_threads_before > 0) SetBlasThreads(blas_threads_before);
  }

  PolicyModel& model() { return replicas[0].model; }

  std::pair<torch::Tensor, torch::Tensor> Batch(const std::vector<int>& tokens, int batch, int length) const {
    if (tokens.size() != static_cast<size_t>(batch) * (length + 1)) {
      throw ModelError("a batch of " + std::to_string(batch) + " x " + std::to_string(length + 1) + " tokens has " +
                       std::to_string(tokens.size()));
    }
    const torch::Tensor all = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong)
                                  .view({batch, length + 1})
                                  .to(device);
    return {all.narrow(1, 0, length), all.narrow(1, 1, length)};
  }

  // Rows [first, first + count) of the batch for each replica used (at least one row each).
  std::vector<std::pair<int, int>> Shares(int batch) const {
    const int n = std::max(1, std::min<int>(batch, static_cast<int>(replicas.size())));
    std::vector<std::pair<int, int>> shares;
    for (int k = 0, first = 0; k < n; ++k) {
      const int count = batch / n + (k < batch % n ? 1 : 0);
      shares.emplace_back(first, count);
      first += count;
    }
    return shares;
  }

  // Runs work(k) for every share, replica k on its own thread (0 on the caller's), and rethrows the first failure.
  void OnReplicas(size_t shares, const std::function<void(size_t)>& work) {
    std::vector<std::exception_ptr> failed(shares);
    std::vector<std::thread> threads;
    for (size_t k = 1; k < shares; ++k) {
      threads.emplace_back([&, k] {
        try {
          at::init_num_threads();  // this thread's intra-op threads, as set for the process
          work(k);
        } catch (...) {
          failed[k] = std::current_exception();
        }
      });
    }
    try {
      work(0);
    } catch (...) {
      failed[0] = std::current_exception();
    }
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : failed) {
      if (e) std::rethrow_exception(e);
    }
  }

  // The other replicas take replica 0's parameters.
  void SyncReplicas() {
    torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> from = model()->parameters();
    for (size_t k = 1; k < replicas.size(); ++k) {
      const std::vector<torch::Tensor> to = replicas[k].model->parameters();
      for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
    }
  }
};

Pretrainer::Pretrainer(const ModelConfig& config, uint64_t seed, int threads, int replicas)
    : impl_(std::make_unique<Impl>()) {
  if (!ArchitectureSpecOf(config.spec).hugging_face()) {
    throw ModelError("pretraining needs an architecture with a Hugging Face folder (" +
                     ArchitectureSpecOf(config.spec).name() + " has none)");
  }
  if (replicas < 1)
    throw ModelError("pretraining needs at least one replica of the model; got " + std::to_string(replicas));
  // The replicas share the threads: each runs its ops, matrix products
  // included, on threads / replicas of them (OpenBLAS's own pool would
  // otherwise put more threads than cores on the products).
  impl_->blas_threads_before = BlasThreads();
  SetTorchThreads(std::max(1, threads / replicas));  // OpenBLAS's pool too
  impl_->config = config;
  impl_->device = ParseDevice(config.device);
  torch::manual_seed(seed);
  const Architecture& architecture = ArchitectureOf(config);
  for (int k = 0; k < replicas; ++k) {
    PolicyModel model = BuildPolicyModel(config);
    model->to(impl_->device);  // initialised on the CPU from the seed: the same model on every device
    for (const auto& p : model->named_parameters()) {
      if (!architecture.IsFieldParameter(p.key())) {
        p.value().set_requires_grad(false);  // the value head is not trained on text
        continue;
      }
      if (k == 0) (p.value().dim() >= 2 ? impl_->decayed : impl_->plain).push_back(p.value());
    }
    impl_->replicas.push_back({std::move(model), std::nullopt});
  }
  impl_->SyncReplicas();
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(impl_->decayed, std::make_unique<torch::optim::AdamWOptions>(
                                          torch::optim::AdamWOptions(config.lr).weight_decay(config.weight_decay)));
  groups.emplace_back(impl_->plain, std::make_unique<torch::optim::AdamWOptions>(
                                        torch::optim::AdamWOptions(config.lr).weight_decay(0)));
  impl_->optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups));
}

Pretrainer::~Pretrainer() = default;

PretrainStep Pretrainer::Step(const std::vector<int>& tokens, int batch, int length, double lr,
                              const GuidedAttention* guide, const AnswerLoss* answers) {
  const auto [input, target] = impl_->Batch(tokens, batch, length);
  for (auto& group : impl_->optimizer->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  const AttentionTargets targets =
      guide != nullptr ? GuidedAttentionTargets(tokens, length, length + 1, *guide, answers) : AttentionTargets{};
  // Per guided head: its targets, and how many the whole batch has (0: none, no loss this step).
  std::vector<const std::vector<int64_t>*> head_targets;
  std::vector<int64_t> head_over;
  if (guide != nullptr) {
    for (const GuidedHead& h : guide->heads) {
      head_targets.push_back(&targets.Of(h.kind));
      head_over.push_back(Guided(*head_targets.back()));
    }
  }
  // The heads whose output is led to what they find (GuidedHead::copy_weight), guided now with
  // targets in this batch; they read the layers' outputs (GuidedHead::copy_scale_layer).
  std::vector<bool> copies(head_over.size(), false);
  bool any_copies = false;
  for (size_t h = 0; h < copies.size(); ++h) {
    copies[h] = guide->heads[h].copy_weight > 0 && head_over[h] > 0;
    any_copies = any_copies || copies[h];
  }
  const std::vector<int64_t> answer_at =
      answers != nullptr ? AnswerPositions(tokens, length, length + 1, *answers) : std::vector<int64_t>{};
  const std::vector<std::pair<int, int>> shares = impl_->Shares(batch);
  std::vector<ShareResult> results(shares.size());
  // Each replica's next-token loss is the mean over its rows: weighted by its
  // share of the rows (and the attention losses divided by the whole batch's
  // guided positions), the replicas' gradients sum to the whole batch's.
  impl_->OnReplicas(shares.size(), [&](size_t k) {
    Replica& r = impl_->replicas[k];
    const auto [first, count] = shares[k];
    const double share = double(count) / batch;
    r.model->train();
    r.model->zero_grad();
    r.Guide(guide);
    std::vector<torch::Tensor> layers;  // each layer's output, for the copy losses
    const torch::Tensor losses = r.LossesOf(input.narrow(0, first, count), target.narrow(0, first, count),
                                            any_copies ? &layers : nullptr);
    const torch::Tensor loss = losses.mean();
    torch::Tensor answer_sum;  // over this share's answer tokens, as positions within its rows
    if (!answer_at.empty()) {
      std::vector<int64_t> mine;
      for (int64_t p : answer_at) {
        if (p >= int64_t(first) * length && p < int64_t(first + count) * length) mine.push_back(p - int64_t(first) * length);
      }
      if (!mine.empty()) answer_sum = losses.index_select(0, torch::tensor(mine, torch::kLong).to(losses.device())).sum();
    }
    torch::Tensor total = loss * share;
    results[k].attention.assign(head_targets.size(), 0.0);
    results[k].copy.assign(head_targets.size(), 0.0);
    results[k].write_share.assign(head_targets.size(), 0.0);
    for (size_t h = 0; h < head_targets.size(); ++h) {
      if (head_over[h] == 0) continue;
      const std::vector<int64_t>& all = *head_targets[h];
      const std::vector<int64_t> rows(all.begin() + int64_t(first) * length,
                                      all.begin() + int64_t(first + count) * length);
      const GuidedHead& head = guide->heads[h];
      const torch::Tensor guided = AttentionLoss(r.model->kept_attention(head.layer), rows, head_over[h]);
      total = total + head.weight * guided;
      results[k].attention[h] = guided.item<double>();
      if (copies[h]) {
        const CopyResult copy =
            CopyLoss(*r.model, head, rows, input.narrow(0, first, count),
                     head.copy_scale_layer >= 0 ? layers.at(head.copy_scale_layer) : torch::Tensor(),
                     layers.at(head.layer), head_over[h]);
        total = total + head.copy_weight * copy.loss;
        results[k].copy[h] = copy.loss.item<double>();
        results[k].write_share[h] = copy.write_share;
      }
    }
    if (answer_sum.defined()) {
      if (answers->weight > 0) total = total + answers->weight * answer_sum / static_cast<double>(answer_at.size());
      results[k].answer_sum = answer_sum.item<double>();
    }
    total.backward();
    results[k].loss = loss.item<double>();
  });
  PretrainStep step;
  for (int64_t over : head_over) step.attention.push_back(over > 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN());
  if (!answer_at.empty()) step.answer_loss = 0.0;
  for (bool copied : copies) step.copy.push_back(copied ? 0.0 : std::numeric_limits<double>::quiet_NaN());
  step.write_share = step.copy;  // 0 where a head copies this step, NaN where not, as its copy loss
  for (size_t k = 0; k < shares.size(); ++k) {
    const double share = double(shares[k].second) / batch;
    step.loss += share * results[k].loss;
    if (!answer_at.empty()) step.answer_loss += results[k].answer_sum / static_cast<double>(answer_at.size());
    for (size_t h = 0; h < step.attention.size(); ++h) step.attention[h] += results[k].attention[h];
    for (size_t h = 0; h < step.copy.size(); ++h) {
      step.copy[h] += results[k].copy[h];
      step.write_share[h] += results[k].write_share[h];
    }
  }
  std::vector<torch::Tensor> all = impl_->decayed;
  all.insert(all.end(), impl_->plain.begin(), impl_->plain.end());
  if (shares.size() > 1) {
    torch::NoGradGuard no_grad;
    for (size_t k = 1; k < shares.size(); ++k) {
      const std::vector<torch::Tensor> from = impl_->replicas[k].model->parameters();
      const std::vector<torch::Tensor> to = impl_->model()->parameters();
      for (size_t i = 0; i < to.size(); ++i) {
        if (to[i].grad().defined() && from[i].grad().defined()) to[i].mutable_grad().add_(from[i].grad());
      }
    }
  }
  const double clip = impl_->config.grad_clip > 0 ? impl_->config.grad_clip : std::numeric_limits<double>::infinity();
  const double norm = torch::nn::utils::clip_grad_norm_(all, clip);
  impl_->optimizer->step();
  impl_->SyncReplicas();
  step.grad_norm = norm;
  return step;
}

double Pretrainer::Loss(const std::vector<int>& tokens, int batch, int length) {
  torch::NoGradGuard no_grad;
  const auto [input, target] = impl_->Batch(tokens, batch, length);
  const std::vector<std::pair<int, int>> shares = impl_->Shares(batch);
  std::vector<double> losses(shares.size());
  impl_->OnReplicas(shares.size(), [&](size_t k) {
    torch::NoGradGuard no_grad_here;  // grad mode is per thread
    Replica& r = impl_->replicas[k];
    r.model->eval();
    r.Guide(nullptr);
    const auto [first, count] = shares[k];
    losses[k] =
        r.LossesOf(input.narrow(0, first, count), target.narrow(0, first, count)).mean().item<double>() * count / batch;
  });
  double loss = 0.0;
  for (double l : losses) loss += l;
  return loss;
}

int64_t Pretrainer::parameter_count() const { return FieldParameterCount(*impl_->replicas[0].model, impl_->config); }

void Pretrainer::WriteModel(const std::string& dir) const {
  ArchitectureOf(impl_->config).WriteHfFolder(*impl_->replicas[0].model, impl_->config, dir);
}

void Pretrainer::Save(const std::string& dir) const {
  WriteModel(dir + "/model");
  SaveAdamW(*impl_->optimizer, dir + "/optimizer.safetensors");
}

void Pretrainer::Load(const std::string& dir) {
  if (!std::filesystem::exists(dir + "/model/config.json") ||
      (!std::filesystem::exists(dir + "/optimizer.safetensors") && !std::filesystem::exists(dir + "/optimizer.pt"))) {
    throw CheckpointError(dir + " is not a pretraining checkpoint (model/ and optimizer.safetensors)");
  }
  ArchitectureOf(impl_->config).ReadHfWeights(*impl_->model(), dir + "/model");
  impl_->SyncReplicas();
  torch::optim::AdamW& optimizer = *impl_->optimizer;
  LoadSafetensorsOrOlder(
      optimizer, dir + "/optimizer", [&](const std::string& f) { LoadAdamW(optimizer, f); }, impl_->device);
}

}  // namespace troupe
