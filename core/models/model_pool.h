// ModelPool: the physical models of a workflow by index, with device placement
// and batched generation. This header is free of LibTorch; the trainer reaches
// the modules through core/model_pool_impl.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/models/architecture_spec.h"
#include "core/rng.h"
#include "core/vocab.h"

namespace troupe {

struct ModelInit;

// A physical model's architecture and optimiser. No defaults here: a
// workflow's are in one table (workflows/config/defaults.cc), and compilation
// sets every field.
struct ModelConfig {
  std::string name;
  int index = -1;  // position among the workflow's models (seeds its initialisation); -1: its place here
  // The model's resolved workflow entry: its architecture oneof names the
  // architecture and holds every one of its options (architecture_spec.h).
  config::ModelSpec spec;
  int vocab_size = 0;
  // The sizes every architecture has (width, layers, heads, max_len).
  ModelSizes sizes() const { return ArchitectureSpecOf(spec).Sizes(spec); }
  std::string hf_dir;  // a Hugging Face folder whose weights the model starts from; empty: fresh
  std::string tokenizer_json;  // text prompts: the tokenizer, which checkpoints carry; empty: word prompts
  int eos_token = Vocab::kEos;  // the token that ends an answer (the tokenizer's <|im_end|> for text prompts)
  int num_roles = 1;        // roles mapped onto this model (role embeddings)
  int lora_rank = 0;        // > 0: per-role LoRA adapters (partial sharing)
  bool role_heads = false;  // per-role heads (partial sharing)
  bool latent = false;      // latent projection for LATENT/HYBRID channels
  int latent_in_width = 0;  // > 0 and != width: an adapter for latent vectors of that width (another model's)
  std::string device;       // "cpu" or "cuda:N"
  bool bf16 = false;        // forward passes in bfloat16 (autocast); parameters and optimiser in float32
  double lr = 0.0;
  double weight_decay = 0.0;
  double grad_clip = 0.0;  // global norm; 0: off
  bool frozen = false;     // generation only: the trainer never updates it and keeps no optimiser for it
  std::shared_ptr<const ModelInit> init;  // the checkpoint it starts from (init_from); null: fresh or hf_dir
};

// Where a model starts from another run's checkpoint (workflow.proto's
// init_from), as compilation resolved it: building the model loads `source`
// from `checkpoint` and copies its parameters over, row by row where the
// vocabulary or the roles differ (core/models/model_init.h).
struct ModelInit {
  std::string checkpoint;                    // a checkpoint folder
  std::shared_ptr<const ModelConfig> source; // the model as that run built it (no init of its own)
  std::vector<int> token_map;  // per token here: the checkpoint's id, -1: fresh; empty: the same tokens
  std::vector<int> slot_map;   // per role slot here: the checkpoint's slot, -1: fresh
};

struct GenerateQuery {
  int role_slot = 0;
  const std::vector<int>* prompt = nullptr;
  int max_new_tokens = 1;
  // Guided decoding: when set, the first token is sampled among these only.
  const std::vector<int>* first_options = nullptr;
  // With share_identical: only queries with the same share_key share an answer
  // (e.g. the agents of one episode); a negative key never shares.
  int64_t share_key = -1;
  // Prefix reuse: a conversation (an episode) whose earlier prompts the pool
  // may keep the keys and values of; the longest prefix this prompt shares
  // with one of them (same role slot, same tokens) is not encoded again.
  // Results agree with encoding from the start up to float rounding. Negative:
  // no reuse. Prompts with soft inputs or latent steps are never reused.
  int64_t cache_key = -1;
  // Hybrid messages. Soft inputs: vectors [slots, soft_width] read, in order, at
  // the prompt's Vocab::kSoft positions (another agent's latent vectors; an
  // adapter maps another width). Latent steps: after the prompt (which ends with
  // <bot>) the model sends K vectors z = Prj(h) fed back as inputs, then reads
  // `latent_end` (<eot>) and decodes its text.
  const std::vector<float>* soft_inputs = nullptr;
  int soft_width = 0;
  int latent_steps = 0;
  int latent_end = 0;
};

struct Generation {
  std::vector<int> tokens;      // <eos> included when sampled
  std::vector<float> logprobs;  // of the sampling distribution
  std::vector<float> latents;   // [latent_steps, d_model] sent before the text
  bool lost = false;            // the worker serving it was lost (runtime); tokens are empty
};

// The most query-by-key cells (rows x new positions x keys) one forward pass
// of Generate encodes prompts over; a batch past it is encoded in several
// passes. Each cell is a score per head: 2^22 cells are 128 MiB of float32
// scores at 8 heads.
constexpr int64_t kEncodeScoreCellsPerPass = int64_t{1} << 22;

class ModelPool {
 public:
  // Builds every model; parameters are initialised from `seed`.
  ModelPool(std::vector<ModelConfig> configs, uint64_t seed);
  ~ModelPool();
  ModelPool(const ModelPool&) = delete;
  ModelPool& operator=(const ModelPool&) = delete;

  int size() const;
  const ModelConfig& config(int model) const;
  int Find(const std::string& name) const;  // -1 when absent

  // One batched, KV-cached generation for every query of one model. Counts one
  // forward call per decoding step, however many queries are in the batch.
  // With `share_identical`, queries with identical (share_key, role, prompt)
  // share one sampled answer (correlated exploration); otherwise each samples its own.
  std::vector<Generation> Generate(int model, const std::vector<GenerateQuery>& queries, Rng& rng, double temperature,
                                   bool greedy, bool share_identical = false);

  int64_t forward_calls(int model) const;
  int64_t total_forward_calls() const;
  // Token positions the forward passes of Generate encoded (prompt positions
  // not reused from the prefix cache, plus one per batch row per decoding
  // step: rows still answering, and finished rows until they leave the batch):
  // forward FLOPs ~ 2 x parameters x positions.
  int64_t encoded_positions(int model) const;
  int64_t ParameterCount(int model) const;

  // Parameters only; optimiser state is the trainer's.
  void Save(const std::string& dir) const;
  void Load(const std::string& dir);
  // One model's parameters as bytes (for keeping replicas in step).
  std::string SaveBytes(int model) const;
  void LoadBytes(int model, const std::string& bytes);
  // FNV-1a of one model's parameters' bytes, in order: equal on learners that are in step.
  uint64_t ParameterDigest(int model) const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Sets LibTorch's intra-op threads and OpenBLAS's (its own pool, one thread per core
// unless told, whose idle threads spin).
void SetTorchThreads(int threads);
// OpenBLAS's own threads for matrix products, process-wide; 0 (and no-op when
// setting) where the BLAS LibTorch runs on is not OpenBLAS.
int BlasThreads();
void SetBlasThreads(int threads);

}  // namespace troupe
