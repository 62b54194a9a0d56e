// Starting a model from another run's checkpoint.
#include "core/models/model_init.h"

#include <cstdint>
#include <map>

#include "core/base/errors.h"
#include "core/models/architecture.h"
#include "core/safetensors.h"

namespace troupe {

namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string ShapeOf(const torch::Tensor& t) { return ShapeText(t.sizes().vec()); }

// The indices `map` (entry i: the source's index, or -1) keeps: the source's and this side's.
struct Kept {
  torch::Tensor from, to;
};
Kept KeptIndices(const std::vector<int>& map, int64_t source_size) {
  std::vector<int64_t> from, to;
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] >= 0 && map[i] < source_size) from.push_back(map[i]), to.push_back(static_cast<int64_t>(i));
  }
  return {torch::tensor(from, torch::kLong), torch::tensor(to, torch::kLong)};
}

// The identity map of n entries, where no map was given.
std::vector<int> Identity(int64_t n) {
  std::vector<int> map(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) map[static_cast<size_t>(i)] = static_cast<int>(i);
  return map;
}

}  // namespace

ParameterAxes ParameterAxesOf(const std::string& name) {
  ParameterAxes a;
  if (EndsWith(name, "tok_emb.weight") || EndsWith(name, "embed_tokens.weight") || EndsWith(name, "wte.weight") ||
      EndsWith(name, "lm_head.weight")) {
    a.vocab = 0;
  }
  if (name == "role_lm_w") a.role = 0, a.vocab = 2;
  if (name == "role_value_w" || EndsWith(name, "role_emb.weight") || EndsWith(name, "lora_a") ||
      EndsWith(name, "lora_b")) {
    a.role = 0;
  }
  // Per-role LoRA modules (lora_q, lora_attn, ...): parameters a and b, one slice per role.
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && (name.substr(dot) == ".a" || name.substr(dot) == ".b") &&
      name.rfind("lora_", dot) != std::string::npos) {
    a.role = 0;
  }
  return a;
}

void StartFromCheckpoint(PolicyModelImpl& model, const ModelConfig& c) {
  if (!c.init) return;
  const ModelInit& init = *c.init;
  const std::string where = "model '" + c.name + "': init_from " + init.checkpoint;
  ModelConfig source_config = *init.source;
  source_config.hf_dir.clear();  // its weights come from the checkpoint
  source_config.init.reset();
  source_config.device = "cpu";
  PolicyModel source = ArchitectureOf(source_config).Build(source_config);
  LoadPolicyModel(source, source_config, init.checkpoint, torch::kCPU);

  const std::vector<int> tokens = init.token_map.empty() ? Identity(c.vocab_size) : init.token_map;
  const std::vector<int> slots = init.slot_map.empty() ? Identity(c.num_roles) : init.slot_map;
  std::map<std::string, torch::Tensor> from;
  for (const auto& p : source->named_parameters()) from[p.key()] = p.value();
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    auto it = from.find(p.key());
    if (it == from.end()) continue;  // a part the source had not (role embeddings of a model of one role): fresh
    torch::Tensor target = p.value();
    torch::Tensor value = it->second;
    const ParameterAxes axes = ParameterAxesOf(p.key());
    if (value.dim() != target.dim()) {
      throw CheckpointError(where + ": parameter " + p.key() + " has shape " + ShapeOf(value) +
                            " in the checkpoint and " + ShapeOf(target) + " here");
    }
    // The fresh values, with the source's written where every remapped axis keeps an index.
    torch::Tensor result = target.detach().to(torch::kCPU, torch::kFloat).clone();
    torch::Tensor kept = value;
    std::vector<std::pair<int, Kept>> remapped;
    for (int axis : {axes.vocab, axes.role}) {
      if (axis < 0 || axis >= value.dim()) continue;
      remapped.push_back({axis, KeptIndices(axis == axes.vocab ? tokens : slots, value.size(axis))});
      kept = kept.index_select(axis, remapped.back().second.from);
    }
    std::vector<int64_t> expected = result.sizes().vec();
    for (const auto& [axis, k] : remapped) expected[static_cast<size_t>(axis)] = k.to.numel();
    if (kept.sizes().vec() != expected) {
      throw CheckpointError(where + ": parameter " + p.key() + " has shape " + ShapeOf(value) +
                            " in the checkpoint and " + ShapeOf(target) + " here");
    }
    if (remapped.empty()) {
      result = kept;
    } else if (remapped.size() == 1) {
      result.index_copy_(remapped[0].first, remapped[0].second.to, kept);
    } else {
      const auto& [outer, k_outer] = remapped[0];
      const auto& [inner, k_inner] = remapped[1];
      torch::Tensor slice = result.index_select(outer, k_outer.to);
      slice.index_copy_(inner, k_inner.to, kept);
      result.index_copy_(outer, k_outer.to, slice);
    }
    if (result.sizes() != target.sizes()) {
      throw CheckpointError(where + ": parameter " + p.key() + " has shape " + ShapeOf(value) +
                            " in the checkpoint and " + ShapeOf(target) + " here");
    }
    target.copy_(result.to(target.device(), target.scalar_type()));
  }
}

}  // namespace troupe
