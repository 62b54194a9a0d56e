// ModelPool: building models on their devices, batched KV-cached generation,
// saving and loading parameters.
#include "core/models/model_pool.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <tuple>

#include "core/base/fnv1a.h"
#include "core/base/errors.h"
#include "core/device_support.h"
#include "core/models/architecture.h"
#include "core/models/model_pool_impl.h"
#include "core/vocab.h"

namespace troupe {

namespace {

// OpenBLAS's thread controls, looked up in the process (LibTorch reaches the
// BLAS through Debian's libblas alternative, so troupe does not link it).
template <typename F>
F OpenBlasFunction(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

int BlasThreads() {
  static const auto get = OpenBlasFunction<int (*)()>("openblas_get_num_threads");
  return get != nullptr ? get() : 0;
}

void SetBlasThreads(int threads) {
  static const auto set = OpenBlasFunction<void (*)(int)>("openblas_set_num_threads");
  if (set != nullptr) set(threads < 1 ? 1 : threads);
}

// OpenBLAS starts a thread per core whatever LibTorch's count, and its idle
// threads spin on sched_yield: with one LibTorch thread on 2 cores the main
// job burnt the second core (30% of the machine in the kernel) for no speed.
void SetTorchThreads(int threads) {
  at::set_num_threads(threads < 1 ? 1 : threads);
  SetBlasThreads(threads);
}

torch::Device ParseDevice(const std::string& text) {
  if (text.empty() || text == "cpu") return torch::Device(torch::kCPU);
  if (text.rfind("cuda:", 0) == 0) {
    int index = -1;
    try {
      index = std::stoi(text.substr(5));
    } catch (const std::exception&) {
      throw ModelError("device '" + text + "': expected cuda:N");
    }
    if (!torch::cuda::is_available()) {
      throw ModelError("device '" + text + "' requested, but no CUDA device is available to this LibTorch build");
    }
    if (index < 0 || index >= static_cast<int>(torch::cuda::device_count())) {
      throw ModelError("device '" + text + "': only " + std::to_string(torch::cuda::device_count()) +
                       " CUDA device(s) present");
    }
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw ModelError("device '" + text + "': expected cpu or cuda:N");
}

// Workflow validation asks how many CUDA devices this LibTorch build has.
const bool kCudaCounterSet =
    SetCudaDeviceCounter([] { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; });

ModelPool::ModelPool(std::vector<ModelConfig> configs, uint64_t seed) : impl_(std::make_unique<Impl>()) {
  impl_->configs = std::move(configs);
  for (size_t m = 0; m < impl_->configs.size(); ++m) {
    const ModelConfig& c = impl_->configs[m];
    // LibTorch's default generator is global: model workers build their models
    // in parallel threads, so seeding and initialising must not interleave.
    static std::mutex init_mutex;
    std::unique_lock<std::mutex> init_lock(init_mutex);
    torch::manual_seed(static_cast<uint64_t>(Rng::Mix(seed, 1000 + (c.index >= 0 ? c.index : m))));
    PolicyModel model = BuildPolicyModel(c);
    init_lock.unlock();
    if (c.latent) model->latent_projection().seed_dropout(Rng::Mix(seed, 2000 + (c.index >= 0 ? c.index : m)));
    torch::Device device = ParseDevice(c.device);
    model->to(device);
    impl_->models.push_back(model);
    impl_->devices.push_back(device);
    impl_->forward_calls.push_back(0);
    impl_->encoded_positions.push_back(0);
    impl_->prefixes.emplace_back();
  }
}

ModelPool::~ModelPool() = default;

int ModelPool::size() const { return static_cast<int>(impl_->configs.size()); }
const ModelConfig& ModelPool::config(int model) const { return impl_->configs.at(model); }
int ModelPool::Find(const std::string& name) const {
  for (int m = 0; m < size(); ++m) {
    if (impl_->configs[m].name == name) return m;
  }
  return -1;
}
int64_t ModelPool::forward_calls(int model) const { return impl_->forward_calls.at(model); }
int64_t ModelPool::encoded_positions(int model) const { return impl_->encoded_positions.at(model); }
int64_t ModelPool::total_forward_calls() const {
  int64_t n = 0;
  for (int64_t c : impl_->forward_calls) n += c;
  return n;
}

int64_t ModelPool::ParameterCount(int model) const {
  int64_t n = 0;
  for (const auto& p : impl_->models.at(model)->parameters()) n += p.numel();
  return n;
}

namespace {

// Samples one token per row from log-probabilities [B,V] (CPU float).
void SampleRows(const torch::Tensor& logp, Rng& rng, bool greedy, const std::vector<bool>& done,
                std::vector<int>* tokens, std::vector<float>* chosen_logp) {
  const int64_t B = logp.size(0), V = logp.size(1);
  const float* data = logp.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) {
    const float* row = data + b * V;
    int pick = 0;
    if (done[b]) {
      pick = Vocab::kPad;
    } else if (greedy) {
      for (int64_t v = 1; v < V; ++v) {
        if (row[v] > row[pick]) pick = static_cast<int>(v);
      }
    } else {
      double u = rng.Uniform(), acc = 0.0;
      pick = static_cast<int>(V - 1);
      for (int64_t v = 0; v < V; ++v) {
        acc += std::exp(static_cast<double>(row[v]));
        if (u < acc) {
          pick = static_cast<int>(v);
          break;
        }
      }
    }
    (*tokens)[b] = pick;
    (*chosen_logp)[b] = row[pick];
  }
}

// Additive logits mask [B,V]: -inf outside each guided query's first-token options.
torch::Tensor FirstTokenMask(const std::vector<GenerateQuery>& queries, int64_t V) {
  const int64_t B = static_cast<int64_t>(queries.size());
  torch::Tensor mask = torch::zeros({B, V});
  for (int64_t b = 0; b < B; ++b) {
    if (queries[b].first_options == nullptr || queries[b].first_options->empty()) continue;
    mask[b].fill_(-1e9);
    for (int t : *queries[b].first_options) mask[b][t] = 0.0;
  }
  return mask;
}

// Refuses a batch whose longest row (prompt, vectors, <eot>, answer) exceeds max_len.
void CheckFits(PolicyModel& model, const std::vector<GenerateQuery>& queries, const std::string& name) {
  int64_t Tp = 0, longest = 0;
  for (const auto& q : queries) {
    const int64_t p = static_cast<int64_t>(q.prompt->size());
    Tp = std::max(Tp, p);
    longest = std::max<int64_t>(longest, p + (q.latent_steps > 0 ? q.latent_steps + 1 : 0) + q.max_new_tokens);
  }
  if (longest > model->max_len()) {
    throw ModelError("model '" + name + "': a prompt of " + std::to_string(Tp) +
                     " tokens with its vectors and answer needs " + std::to_string(longest) +
                     " positions, over max_len " + std::to_string(model->max_len()));
  }
}

// Whether a query's prompt may reuse, and be kept in, the prefix cache: token
// prompts only (vectors at soft slots and sent vectors are not in the tokens).
bool Reusable(const GenerateQuery& q) {
  return q.cache_key >= 0 && (q.soft_inputs == nullptr || q.soft_inputs->empty()) && q.latent_steps == 0;
}

// A batch's prompts as the model's first input. Agents of one role with the
// same prompt and vectors (teammates reading the same deliberation) share a
// row, copied per query after the first step. A row whose conversation's
// earlier prompt shares a prefix with it (PrefixCache) starts from those keys
// and values and encodes the rest only. Rows are left-padded (cached part and
// new part each); other agents' vectors go in at their soft slots.
struct PromptBatch {
  torch::Tensor embeds, positions, key_valid, role;  // [U,Tn,d], [U,Tn], [U,Lp+Tn], [U]
  KvCache past;                                      // per layer [U,heads,Lp,head_dim]; empty when Lp = 0
  std::vector<int64_t> row_of;                       // per query: its row
  std::vector<int64_t> first_query;                  // per row: the first query it serves
  std::vector<int64_t> reused;                       // per row: cached positions it starts from
  int64_t rows = 0, length = 0, past_length = 0;     // U, Tn, Lp
  int64_t encoded = 0;                               // prompt positions encoded now
};

PromptBatch EncodePrompts(PolicyModel& model, torch::Device device, const std::vector<GenerateQuery>& queries,
                          const std::string& name, PrefixCache* prefixes) {
  const int64_t B = static_cast<int64_t>(queries.size()), d = model->width();
  PromptBatch pb;
  std::map<std::tuple<int, std::vector<int>, std::vector<float>>, int64_t> unique_of;
  std::vector<int64_t>& firsts = pb.first_query;
  pb.row_of.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    const GenerateQuery& q = queries[b];
    auto [it, fresh] = unique_of.emplace(
        std::make_tuple(q.role_slot, *q.prompt, q.soft_inputs ? *q.soft_inputs : std::vector<float>{}),
        static_cast<int64_t>(firsts.size()));
    if (fresh) firsts.push_back(b);
    pb.row_of[b] = it->second;
  }
  const int64_t U = static_cast<int64_t>(firsts.size());
  pb.rows = U;
  std::vector<PrefixCache::Match> match(U);
  pb.reused.assign(U, 0);
  for (int64_t u = 0; u < U; ++u) {
    const GenerateQuery& q = queries[firsts[u]];
    if (prefixes != nullptr && Reusable(q)) match[u] = prefixes->Find(q.cache_key, q.role_slot, *q.prompt);
    pb.reused[u] = match[u].length;
    pb.past_length = std::max(pb.past_length, match[u].length);
    pb.length = std::max<int64_t>(pb.length, static_cast<int64_t>(q.prompt->size()) - match[u].length);
  }
  const int64_t Tn = pb.length, Lp = pb.past_length;
  std::vector<int64_t> tok(U * Tn, Vocab::kPad), pos(U * Tn, 0), roles(U);
  std::vector<uint8_t> valid(U * (Lp + Tn), 0);
  std::map<int, std::pair<std::vector<int64_t>, std::vector<float>>> soft;  // width -> (flat positions, rows)
  for (int64_t u = 0; u < U; ++u) {
    const GenerateQuery& q = queries[firsts[u]];
    const auto& p = *q.prompt;
    const int64_t L = pb.reused[u], n = static_cast<int64_t>(p.size()) - L, off = Tn - n;
    pb.encoded += n;
    for (int64_t t = Lp - L; t < Lp; ++t) valid[u * (Lp + Tn) + t] = 1;
    int64_t slot = 0;
    const int64_t slots =
        q.soft_inputs && q.soft_width > 0 ? static_cast<int64_t>(q.soft_inputs->size()) / q.soft_width : 0;
    for (int64_t t = 0; t < n; ++t) {
      const int token = p[static_cast<size_t>(L + t)];
      tok[u * Tn + off + t] = token;
      pos[u * Tn + off + t] = L + t;
      valid[u * (Lp + Tn) + Lp + off + t] = 1;
      if (token != Vocab::kSoft) continue;
      if (slot >= slots)
        throw ModelError("model '" + name + "': a prompt has more soft slots than vectors (" + std::to_string(slots) +
                         ")");
      auto& [where, rows] = soft[q.soft_width];
      where.push_back(u * Tn + off + t);
      rows.insert(rows.end(), q.soft_inputs->begin() + slot * q.soft_width,
                  q.soft_inputs->begin() + (slot + 1) * q.soft_width);
      ++slot;
    }
    if (slot != slots)
      throw ModelError("model '" + name + "': " + std::to_string(slots) + " vectors for " + std::to_string(slot) +
                       " soft slots");
    roles[u] = q.role_slot;
  }
  auto long_opts = torch::TensorOptions().dtype(torch::kLong);
  pb.positions = torch::from_blob(pos.data(), {U, Tn}, long_opts).clone().to(device);
  pb.key_valid = torch::from_blob(valid.data(), {U, Lp + Tn}, torch::kUInt8).clone().to(torch::kBool).to(device);
  pb.role = torch::from_blob(roles.data(), {U}, long_opts).clone().to(device);
  torch::Tensor embeds = model->embed(torch::from_blob(tok.data(), {U, Tn}, long_opts).clone().to(device));
  embeds = embeds.view({U * Tn, d});
  for (auto& [width, where_rows] : soft) {
    auto& [where, rows] = where_rows;
    const int64_t n = static_cast<int64_t>(where.size());
    torch::Tensor vectors = torch::from_blob(rows.data(), {n, width}, torch::kFloat).clone().to(device);
    torch::Tensor index = torch::from_blob(where.data(), {n}, long_opts).clone().to(device);
    embeds = embeds.index_copy(0, index, model->adapt_latent(vectors));
  }
  pb.embeds = embeds.view({U, Tn, d});
  if (Lp > 0) {  // the cached keys and values, each row's right-aligned in Lp slots
    const PrefixCache::Entry* any = nullptr;
    for (const auto& m : match) any = m.entry ? m.entry : any;
    const size_t layers = any->keys.size();
    pb.past.reserve_layers(layers);
    for (size_t l = 0; l < layers; ++l) {
      auto shape = any->keys[l].sizes().vec();
      shape[0] = U;
      shape[2] = Lp;
      torch::Tensor k = torch::zeros(shape, any->keys[l].options()), v = torch::zeros(shape, any->values[l].options());
      for (int64_t u = 0; u < U; ++u) {
        const int64_t L = pb.reused[u];
        if (L == 0) continue;
        k[u].narrow(1, Lp - L, L).copy_(match[u].entry->keys[l][0].narrow(1, 0, L));
        v[u].narrow(1, Lp - L, L).copy_(match[u].entry->values[l][0].narrow(1, 0, L));
      }
      pb.past.keys[l] = k;
      pb.past.values[l] = v;
    }
  }
  return pb;
}

// Keeps each reusable row's prompt (its keys and values, cached and new
// positions, without padding) under the conversations of the queries it served.
void KeepPrompts(const PromptBatch& pb, const KvCache& cache, const std::vector<GenerateQuery>& queries,
                 PrefixCache* prefixes) {
  const int64_t U = pb.rows, Tn = pb.length, Lp = pb.past_length;
  std::vector<std::vector<int64_t>> keys_of(U);
  for (size_t b = 0; b < queries.size(); ++b) {
    if (!Reusable(queries[b])) continue;
    const GenerateQuery& q = queries[b];
    auto& keys = keys_of[pb.row_of[b]];
    if (std::find(keys.begin(), keys.end(), q.cache_key) != keys.end()) continue;
    if (!prefixes->Covers(q.cache_key, q.role_slot, *q.prompt)) keys.push_back(q.cache_key);
  }
  for (int64_t u = 0; u < U; ++u) {
    if (keys_of[u].empty()) continue;
    const GenerateQuery& q = queries[pb.first_query[u]];
    const int64_t L = pb.reused[u], n = static_cast<int64_t>(q.prompt->size()) - L;
    PrefixCache::Entry e;
    e.role = q.role_slot;
    e.tokens = *q.prompt;
    auto row = [&](const torch::Tensor& t) {  // [1,heads,L+n,head_dim]
      torch::Tensor fresh = t[u].narrow(1, Lp + Tn - n, n);
      torch::Tensor all = L > 0 ? torch::cat({t[u].narrow(1, Lp - L, L), fresh}, 1) : fresh.clone();
      return all.unsqueeze(0);
    };
    for (size_t l = 0; l < cache.keys.size(); ++l) {
      e.keys.push_back(row(cache.keys[l]));
      e.values.push_back(row(cache.values[l]));
      e.bytes += 2 * e.keys.back().numel() * static_cast<int64_t>(e.keys.back().element_size());
    }
    for (size_t k = 0; k + 1 < keys_of[u].size(); ++k) prefixes->Store(keys_of[u][k], e);
    prefixes->Store(keys_of[u].back(), std::move(e));
  }
}

// The queries in groups to encode one after another. A batch's prompts are
// encoded padded to the longest part not cached: one prompt the cache misses
// (a conversation's first, hundreds of positions) would make every row of a
// rollout's batch encode that many, at a cost of rows x new x (cached + new).
// So queries whose new parts differ by more than about twice go in separate
// groups (shortest first); a batch of like lengths stays one group unless its
// attention scores would pass kEncodeScoreCellsPerPass, when it is cut into
// groups that fit (scores grow as rows x new x keys: a thousand prompts of 600
// positions in one pass would have made tens of gigabytes of them). The
// matches found here only size the groups: EncodePrompts finds each group's
// again, since the groups before it store entries and may evict the ones
// found here.
std::vector<std::vector<size_t>> EncodeGroups(const std::vector<GenerateQuery>& queries,
                                              const PrefixCache* prefixes) {
  struct Part {
    int64_t fresh, cached;
    size_t query;
  };
  std::vector<Part> parts;  // (positions to encode, positions cached, query)
  for (size_t i = 0; i < queries.size(); ++i) {
    const GenerateQuery& q = queries[i];
    const int64_t cached =
        prefixes != nullptr && Reusable(q) ? prefixes->Find(q.cache_key, q.role_slot, *q.prompt).length : 0;
    parts.push_back({static_cast<int64_t>(q.prompt->size()) - cached, cached, i});
  }
  std::sort(parts.begin(), parts.end(),
            [](const Part& a, const Part& b) { return std::tie(a.fresh, a.query) < std::tie(b.fresh, b.query); });
  std::vector<std::vector<size_t>> groups;
  int64_t shortest = 0, longest = 0, most_cached = 0;  // of the group being filled
  for (const Part& p : parts) {
    const int64_t rows = groups.empty() ? 0 : static_cast<int64_t>(groups.back().size());
    const int64_t fresh = std::max(longest, p.fresh), keys = std::max(most_cached, p.cached) + fresh;
    if (groups.empty() || p.fresh > 2 * shortest + 64 || (rows + 1) * fresh * keys > kEncodeScoreCellsPerPass) {
      groups.emplace_back();
      shortest = longest = p.fresh;
      most_cached = p.cached;
    } else {
      longest = fresh;
      most_cached = std::max(most_cached, p.cached);
    }
    groups.back().push_back(p.query);
  }
  for (auto& g : groups) std::sort(g.begin(), g.end());  // each group in the callers' order
  return groups;
}

// The prompts read: each query's output at its last position, the keys and
// values, which key positions are real, and the role slots; one row per query.
struct EncodedPrompts {
  torch::Tensor hidden, logits, key_valid, role;  // [B,1,d], [B,1,V], [B,L], [B]
  KvCache cache;                                  // per layer [B,heads,L,head_dim]
};

// One group's prompts in one padded batch (see EncodePrompts), kept in the prefix cache.
EncodedPrompts EncodeGroup(PolicyModel& model, torch::Device device, const std::vector<GenerateQuery>& queries,
                           const std::string& name, PrefixCache* prefixes, int64_t* forward_calls, int64_t* encoded) {
  PromptBatch pb = EncodePrompts(model, device, queries, name, prefixes);
  *encoded += pb.encoded;
  EncodedPrompts e;
  e.cache = pb.past;
  e.key_valid = pb.key_valid;
  e.role = pb.role;
  // The prompts' logits are read at their last position only (rows are left-padded).
  LMOutput o = model->forward_hidden(pb.embeds, pb.positions, e.key_valid, e.role, &e.cache);
  e.hidden = o.hidden.narrow(1, pb.length - 1, 1);
  e.logits = model->lm_logits(e.hidden, e.role);
  ++*forward_calls;
  if (prefixes != nullptr) KeepPrompts(pb, e.cache, queries, prefixes);
  if (pb.rows < static_cast<int64_t>(queries.size())) {  // one row per query from here on
    const int64_t B = static_cast<int64_t>(queries.size());
    torch::Tensor expand =
        torch::from_blob(pb.row_of.data(), {B}, torch::TensorOptions().dtype(torch::kLong)).clone().to(device);
    e.hidden = e.hidden.index_select(0, expand);
    e.logits = e.logits.index_select(0, expand);
    for (auto& k : e.cache.keys) k = k.index_select(0, expand);
    for (auto& v : e.cache.values) v = v.index_select(0, expand);
    e.key_valid = e.key_valid.index_select(0, expand);
    e.role = e.role.index_select(0, expand);
  }
  return e;
}

// All queries' prompts, group by group (EncodeGroups), then as one batch
// again: each group's keys and values left-padded to the longest, masked out.
EncodedPrompts EncodeQueries(PolicyModel& model, torch::Device device, const std::vector<GenerateQuery>& queries,
                             const std::string& name, PrefixCache* prefixes, int64_t* forward_calls,
                             int64_t* encoded) {
  const std::vector<std::vector<size_t>> groups = EncodeGroups(queries, prefixes);
  if (groups.size() == 1) return EncodeGroup(model, device, queries, name, prefixes, forward_calls, encoded);
  std::vector<EncodedPrompts> parts;
  std::vector<int64_t> at(queries.size());  // each query's row in the groups' concatenation
  int64_t row = 0, length = 0;
  for (const std::vector<size_t>& group : groups) {
    std::vector<GenerateQuery> sub;
    for (size_t i : group) {
      sub.push_back(queries[i]);
      at[i] = row++;
    }
    parts.push_back(EncodeGroup(model, device, sub, name, prefixes, forward_calls, encoded));
    length = std::max(length, parts.back().key_valid.size(1));
  }
  EncodedPrompts all;
  std::vector<torch::Tensor> hidden, logits, valid, role;
  std::vector<std::vector<torch::Tensor>> keys(parts[0].cache.keys.size()), values(keys.size());
  for (EncodedPrompts& e : parts) {
    const int64_t pad = length - e.key_valid.size(1), n = e.key_valid.size(0);
    auto padded = [&](const torch::Tensor& t) {  // [n,heads,L,head_dim] -> [n,heads,length,head_dim]
      if (pad == 0) return t;
      return torch::cat({torch::zeros({n, t.size(1), pad, t.size(3)}, t.options()), t}, 2);
    };
    for (size_t l = 0; l < keys.size(); ++l) {
      keys[l].push_back(padded(e.cache.keys[l]));
      values[l].push_back(padded(e.cache.values[l]));
    }
    valid.push_back(pad == 0 ? e.key_valid
                             : torch::cat({torch::zeros({n, pad}, e.key_valid.options()), e.key_valid}, 1));
    hidden.push_back(e.hidden);
    logits.push_back(e.logits);
    role.push_back(e.role);
  }
  const torch::Tensor order =
      torch::from_blob(at.data(), {static_cast<int64_t>(at.size())}, torch::TensorOptions().dtype(torch::kLong))
          .clone()
          .to(device);
  auto in_order = [&](const std::vector<torch::Tensor>& pieces) { return torch::cat(pieces, 0).index_select(0, order); };
  all.hidden = in_order(hidden);
  all.logits = in_order(logits);
  all.key_valid = in_order(valid);
  all.role = in_order(role);
  all.cache.reserve_layers(keys.size());
  for (size_t l = 0; l < keys.size(); ++l) {
    all.cache.keys[l] = in_order(keys[l]);
    all.cache.values[l] = in_order(values[l]);
  }
  return all;
}

// Where one query's decoding stands. A row that sends vectors (hybrid
// messages) feeds K of them back, then reads its closing token, and samples
// only after that; the others sample from the first step.
struct RowProgress {
  int latents_left = 0;
  bool end_due = false;
  bool done = false;
  int sampled = 0;
  bool sampling() const { return !done && latents_left == 0 && !end_due; }
};

// The batch's decoding state, one row per query still in the batch. Rows
// whose answers are finished leave it once they are a quarter of it: a
// rollout's answers differ in length (a chat message against "accept"), and
// every step of a finished row costs as much as a live one's (its keys and
// values are copied on, attention reads them, its logits are normalised).
struct DecodingRows {
  std::vector<int64_t> query;  // the query each row serves
  KvCache cache;
  torch::Tensor key_valid, role, first_mask;

  int64_t size() const { return static_cast<int64_t>(query.size()); }
  // Whether the rows of `keep` (indices, in order) are few enough to drop the others now.
  bool WorthDropping(size_t keep) const { return 4 * (size() - static_cast<int64_t>(keep)) >= size(); }
  // Keeps the rows of `keep` only, here and in `per_row` (each a value per row, or an undefined tensor).
  void Keep(const std::vector<int64_t>& keep, torch::Device device, std::vector<torch::Tensor*> per_row) {
    const torch::Tensor index = torch::tensor(keep, torch::kLong).to(device);
    for (auto& k : cache.keys) k = k.index_select(0, index);
    for (auto& v : cache.values) v = v.index_select(0, index);
    per_row.insert(per_row.end(), {&key_valid, &role, &first_mask});
    for (torch::Tensor* t : per_row) {
      if (t->defined()) *t = t->index_select(0, index);
    }
    std::vector<int64_t> fewer;
    for (int64_t i : keep) fewer.push_back(query[static_cast<size_t>(i)]);
    query = std::move(fewer);
  }
};

// One KV-cached decoding of a batch: the prompts, then one step per position
// for every row still in the batch (DecodingRows).
std::vector<Generation> GenerateBatch(PolicyModel& model, torch::Device device,
                                      const std::vector<GenerateQuery>& queries, Rng& rng, double temperature,
                                      bool greedy, int64_t* forward_calls, int64_t* encoded,
                                      const ModelConfig& config, PrefixCache* prefixes) {
  const std::string& name = config.name;
  const int eos = config.eos_token;
  CheckFits(model, queries, name);
  const int64_t B = static_cast<int64_t>(queries.size()), d = model->width();
  EncodedPrompts e = EncodeQueries(model, device, queries, name, prefixes, forward_calls, encoded);
  auto long_opts = torch::TensorOptions().dtype(torch::kLong);
  std::vector<Generation> out(B);
  std::vector<RowProgress> progress(B);
  std::vector<int64_t> next_pos(B);
  for (int64_t b = 0; b < B; ++b) {
    progress[b].latents_left = std::max(0, queries[b].latent_steps);
    progress[b].end_due = progress[b].latents_left > 0;
    next_pos[b] = static_cast<int64_t>(queries[b].prompt->size());
  }
  DecodingRows rows;
  rows.query.resize(static_cast<size_t>(B));
  std::iota(rows.query.begin(), rows.query.end(), int64_t{0});
  rows.cache = std::move(e.cache);
  rows.key_valid = e.key_valid;
  rows.role = e.role;
  rows.first_mask = FirstTokenMask(queries, model->vocab_size()).to(device);
  LMOutput o;
  o.hidden = e.hidden;
  o.logits = e.logits;
  std::vector<int> picked;
  std::vector<float> picked_logp;
  while (true) {
    const int64_t R = rows.size();
    torch::Tensor hidden = o.hidden.select(1, o.hidden.size(1) - 1);  // [R,d]
    torch::Tensor logits = o.logits.select(1, o.logits.size(1) - 1);  // [R,V]
    std::vector<float> first_now(R, 0.f);
    std::vector<bool> skip(R);
    bool any_vector = false, any_first = false;
    for (int64_t i = 0; i < R; ++i) {
      const RowProgress& r = progress[rows.query[i]];
      skip[i] = !r.sampling();
      first_now[i] = !skip[i] && r.sampled == 0 ? 1.f : 0.f;
      any_first = any_first || first_now[i] > 0;
      any_vector = any_vector || r.latents_left > 0;
    }
    // Guided first tokens: only for rows that sample their first token now.
    torch::Tensor scaled = logits / temperature;
    if (any_first) {
      scaled =
          scaled + rows.first_mask * torch::from_blob(first_now.data(), {R, 1}, torch::kFloat).clone().to(device);
    }
    torch::Tensor logp = torch::log_softmax(scaled, -1).to(torch::kCPU, torch::kFloat).contiguous();
    picked.assign(R, 0);
    picked_logp.assign(R, 0.f);
    SampleRows(logp, rng, greedy, skip, &picked, &picked_logp);
    torch::Tensor z = any_vector ? model->project_latent(hidden) : torch::Tensor();  // [R,d]
    torch::Tensor z_cpu = any_vector ? z.to(torch::kCPU, torch::kFloat).contiguous() : torch::Tensor();
    // Each row's next input: a vector it sends, its closing token, or what it sampled.
    std::vector<int64_t> next(R, Vocab::kPad), npos(R);
    std::vector<float> use_vector(R, 0.f);
    std::vector<int64_t> keep;  // the rows still answering: their input next step is real
    for (int64_t i = 0; i < R; ++i) {
      const int64_t b = rows.query[i];
      RowProgress& r = progress[b];
      npos[i] = std::min<int64_t>(next_pos[b]++, model->max_len() - 1);
      if (r.done) continue;
      if (r.latents_left > 0) {
        const float* row = z_cpu.data_ptr<float>() + i * d;
        out[b].latents.insert(out[b].latents.end(), row, row + d);
        use_vector[i] = 1.f;
        --r.latents_left;
      } else if (r.end_due) {
        next[i] = queries[b].latent_end;
        r.end_due = false;
      } else {
        out[b].tokens.push_back(picked[i]);
        out[b].logprobs.push_back(picked_logp[i]);
        ++r.sampled;
        next[i] = picked[i];
        r.done = picked[i] == eos || r.sampled >= queries[b].max_new_tokens;
      }
      if (!r.done) keep.push_back(i);
    }
    if (keep.empty()) break;
    torch::Tensor step = model->embed(torch::from_blob(next.data(), {R, 1}, long_opts).clone().to(device));  // [R,1,d]
    torch::Tensor positions = torch::from_blob(npos.data(), {R, 1}, long_opts).clone().to(device);
    torch::Tensor pick =
        any_vector ? torch::from_blob(use_vector.data(), {R, 1, 1}, torch::kFloat).clone().to(device) : torch::Tensor();
    if (rows.WorthDropping(keep.size())) rows.Keep(keep, device, {&step, &positions, &pick, &z});
    if (any_vector) step = torch::where(pick > 0.5f, z.unsqueeze(1), step);
    const int64_t N = rows.size();
    *encoded += N;  // the rows the step runs, finished ones not yet dropped included: its cost
    rows.key_valid =
        torch::cat({rows.key_valid, torch::ones({N, 1}, torch::TensorOptions().dtype(torch::kBool).device(device))}, 1);
    o = model->forward_embeds(step, positions, rows.key_valid, rows.role, &rows.cache);
    ++*forward_calls;
  }
  return out;
}

}  // namespace

std::vector<Generation> ModelPool::Generate(int model_index, const std::vector<GenerateQuery>& queries, Rng& rng,
                                            double temperature, bool greedy, bool share_identical) {
  if (share_identical) {
    // Decode the distinct queries only and hand each duplicate its twin's answer.
    std::map<std::tuple<int64_t, int, int, std::vector<int>, std::vector<float>>, size_t> first;
    std::vector<GenerateQuery> distinct;
    std::vector<size_t> source(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      // A negative key never matches another query: make it unique.
      const int64_t share = queries[i].share_key >= 0 ? queries[i].share_key : -1 - static_cast<int64_t>(i);
      const auto key = std::make_tuple(share, queries[i].role_slot, queries[i].max_new_tokens, *queries[i].prompt,
                                       queries[i].soft_inputs ? *queries[i].soft_inputs : std::vector<float>{});
      auto [it, fresh] = first.emplace(key, distinct.size());
      if (fresh) distinct.push_back(queries[i]);
      source[i] = it->second;
    }
    if (distinct.size() < queries.size()) {
      std::vector<Generation> once = Generate(model_index, distinct, rng, temperature, greedy, false);
      std::vector<Generation> out(queries.size());
      for (size_t i = 0; i < queries.size(); ++i) out[i] = once[source[i]];
      return out;
    }
  }
  if (queries.empty()) return {};
  torch::NoGradGuard no_grad;
  PolicyModel& model = impl_->models.at(model_index);
  for (const auto& q : queries) {
    if (q.latent_steps > 0) model->set_latent_dropout(false);  // the trainer recomputes these vectors: no random masks
  }
  PrefixCache& prefixes = impl_->prefixes.at(model_index);
  prefixes.Validate(ParametersVersion(*model));
  prefixes.BeginCall();
  return GenerateBatch(model, impl_->devices.at(model_index), queries, rng, temperature, greedy,
                       &impl_->forward_calls[model_index], &impl_->encoded_positions[model_index],
                       impl_->configs[model_index], &prefixes);
}

void ModelPool::Save(const std::string& dir) const {
  for (int m = 0; m < size(); ++m) SavePolicyModel(*impl_->models[m], impl_->configs[m], dir);
}

std::string ModelPool::SaveBytes(int model) const {
  std::ostringstream out;
  torch::save(impl_->models.at(model), out);
  return out.str();
}

uint64_t ModelPool::ParameterDigest(int model) const {
  torch::NoGradGuard no_grad;
  uint64_t h = kFnv1aOffset;
  for (const auto& p : impl_->models.at(model)->parameters()) {
    const torch::Tensor t = p.detach().to(torch::kCPU, torch::kFloat).contiguous();
    h = Fnv1aBytes(t.data_ptr(), static_cast<size_t>(t.numel()) * sizeof(float), h);
  }
  return h;
}

void ModelPool::LoadBytes(int model, const std::string& bytes) {
  impl_->prefixes.at(model).Clear();  // version counters would catch it too; be explicit
  std::istringstream in(bytes);
  try {
    torch::load(impl_->models.at(model), in, impl_->devices.at(model));
  } catch (const c10::Error& e) {
    throw ModelError("cannot load parameters of model '" + impl_->configs.at(model).name +
                     "': " + e.what_without_backtrace());
  }
}

void ModelPool::Load(const std::string& dir) {
  for (auto& p : impl_->prefixes) p.Clear();
  for (int m = 0; m < size(); ++m) LoadPolicyModel(impl_->models[m], impl_->configs[m], dir, impl_->devices[m]);
}

}  // namespace troupe
