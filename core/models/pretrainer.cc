// Pretrainer over any architecture with a Hugging Face folder, and AdamW.
#include "core/models/pretrainer.h"

#include <filesystem>
#include <optional>
#include <unordered_map>

#include "core/base/errors.h"
#include "core/models/architecture.h"

namespace troupe {

AttentionTargets GuidedAttentionTargets(const std::vector<int>& tokens, int length, int unmatched) {
  if (length <= 0 || tokens.size() % static_cast<size_t>(length) != 0) {
    throw ModelError("guided attention needs whole rows of " + std::to_string(length) + " tokens");
  }
  AttentionTargets t;
  t.previous.resize(tokens.size());
  t.induction.assign(tokens.size(), -1);
  std::unordered_map<int, int64_t> last;  // token -> its latest position in the row
  for (size_t row = 0; row < tokens.size(); row += length) {
    last.clear();
    for (int64_t i = 0; i < length; ++i) {
      const int token = tokens[row + i];
      t.previous[row + i] = i - 1;
      if (token == unmatched) continue;
      const auto it = last.find(token);
      if (it != last.end()) t.induction[row + i] = it->second + 1;
      last[token] = i;
    }
  }
  return t;
}

namespace {

// Mean -log weight of attention `att` [B,T,Tk] on `target` [B,T] (-1: none) over the positions that have one.
torch::Tensor AttentionLoss(const torch::Tensor& att, const std::vector<int64_t>& target) {
  const torch::Tensor index = torch::tensor(target, torch::kLong).view({att.size(0), att.size(1)}).to(att.device());
  const torch::Tensor valid = index.ge(0);
  if (!valid.any().item<bool>()) return att.sum() * 0.0;
  const torch::Tensor picked = att.to(torch::kFloat).gather(-1, index.clamp_min(0).unsqueeze(-1)).squeeze(-1);
  return -(picked.masked_select(valid) + 1e-9).log().mean();
}

}  // namespace

struct Pretrainer::Impl {
  ModelConfig config;
  PolicyModel model;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::vector<torch::Tensor> decayed, plain;  // weight decay on matrices only
  std::optional<GuidedAttention> guiding;     // whose heads are kept now

  // Keeps the guided heads' attention weights while guiding, and none otherwise.
  void Guide(const GuidedAttention* guide) {
    auto same = [](const GuidedAttention& a, const GuidedAttention& b) {
      return a.previous_layer == b.previous_layer && a.induction_layer == b.induction_layer && a.head == b.head;
    };
    if (guide != nullptr && guiding && same(*guide, *guiding)) return;
    if (guiding) {
      model->keep_attention(guiding->previous_layer, -1);
      model->keep_attention(guiding->induction_layer, -1);
      guiding.reset();
    }
    if (guide != nullptr) {
      model->keep_attention(guide->previous_layer, guide->head);
      model->keep_attention(guide->induction_layer, guide->head);
      guiding = *guide;
    }
  }

  std::pair<torch::Tensor, torch::Tensor> Batch(const std::vector<int>& tokens, int batch, int length) const {
    if (tokens.size() != static_cast<size_t>(batch) * (length + 1)) {
      throw ModelError("a batch of " + std::to_string(batch) + " x " + std::to_string(length + 1) + " tokens has " +
                       std::to_string(tokens.size()));
    }
    const torch::Tensor all =
        torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong).view({batch, length + 1});
    return {all.narrow(1, 0, length), all.narrow(1, 1, length)};
  }

  torch::Tensor LossOf(const torch::Tensor& input, const torch::Tensor& target) {
    const int64_t B = input.size(0), T = input.size(1);
    const torch::Tensor positions = torch::arange(T, torch::kLong).repeat({B, 1});
    const LMOutput o = model->forward(input, positions, torch::ones({B, T}, torch::kBool), {});
    return torch::nn::functional::cross_entropy(o.logits.reshape({B * T, -1}), target.reshape({B * T}));
  }
};

Pretrainer::Pretrainer(const ModelConfig& config, uint64_t seed, int threads) : impl_(std::make_unique<Impl>()) {
  if (!ArchitectureSpecOf(config.spec).hugging_face()) {
    throw ModelError("pretraining needs an architecture with a Hugging Face folder (" + ArchitectureSpecOf(config.spec).name() +
                     " has none)");
  }
  SetTorchThreads(threads);
  impl_->config = config;
  torch::manual_seed(seed);
  impl_->model = BuildPolicyModel(config);
  const Architecture& architecture = ArchitectureOf(config);
  for (const auto& p : impl_->model->named_parameters()) {
    if (!architecture.IsFieldParameter(p.key())) {
      p.value().set_requires_grad(false);  // the value head is not trained on text
      continue;
    }
    (p.value().dim() >= 2 ? impl_->decayed : impl_->plain).push_back(p.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(impl_->decayed, std::make_unique<torch::optim::AdamWOptions>(
                                          torch::optim::AdamWOptions(config.lr).weight_decay(config.weight_decay)));
  groups.emplace_back(impl_->plain,
                      std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(config.lr).weight_decay(0)));
  impl_->optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups));
}

Pretrainer::~Pretrainer() = default;

PretrainStep Pretrainer::Step(const std::vector<int>& tokens, int batch, int length, double lr,
                              const GuidedAttention* guide) {
  impl_->model->train();
  const auto [input, target] = impl_->Batch(tokens, batch, length);
  for (auto& group : impl_->optimizer->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  impl_->optimizer->zero_grad();
  impl_->Guide(guide);
  const torch::Tensor loss = impl_->LossOf(input, target);
  PretrainStep step;
  torch::Tensor total = loss;
  if (guide != nullptr) {
    std::vector<int> inputs;  // each row's first `length` tokens
    inputs.reserve(static_cast<size_t>(batch) * length);
    for (int b = 0; b < batch; ++b) {
      const auto row = tokens.begin() + static_cast<int64_t>(b) * (length + 1);
      inputs.insert(inputs.end(), row, row + length);
    }
    const AttentionTargets targets = GuidedAttentionTargets(inputs, length, guide->unmatched_token);
    const torch::Tensor previous = AttentionLoss(impl_->model->kept_attention(guide->previous_layer), targets.previous);
    const torch::Tensor induction =
        AttentionLoss(impl_->model->kept_attention(guide->induction_layer), targets.induction);
    total = loss + guide->weight * (previous + induction);
    step.previous_attention = previous.item<double>();
    step.induction_attention = induction.item<double>();
  }
  total.backward();
  std::vector<torch::Tensor> all = impl_->decayed;
  all.insert(all.end(), impl_->plain.begin(), impl_->plain.end());
  const double clip = impl_->config.grad_clip > 0 ? impl_->config.grad_clip : std::numeric_limits<double>::infinity();
  const double norm = torch::nn::utils::clip_grad_norm_(all, clip);
  impl_->optimizer->step();
  step.loss = loss.item<double>();
  step.grad_norm = norm;
  return step;
}

double Pretrainer::Loss(const std::vector<int>& tokens, int batch, int length) {
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  impl_->Guide(nullptr);
  const auto [input, target] = impl_->Batch(tokens, batch, length);
  return impl_->LossOf(input, target).item<double>();
}

int64_t Pretrainer::parameter_count() const { return FieldParameterCount(*impl_->model, impl_->config); }

void Pretrainer::WriteModel(const std::string& dir) const {
  ArchitectureOf(impl_->config).WriteHfFolder(*impl_->model, impl_->config, dir);
}

void Pretrainer::Save(const std::string& dir) const {
  WriteModel(dir + "/model");
  torch::save(*impl_->optimizer, dir + "/optimizer.pt");
}

void Pretrainer::Load(const std::string& dir) {
  if (!std::filesystem::exists(dir + "/model/config.json") || !std::filesystem::exists(dir + "/optimizer.pt")) {
    throw CheckpointError(dir + " is not a pretraining checkpoint (model/ and optimizer.pt)");
  }
  ArchitectureOf(impl_->config).ReadHfWeights(*impl_->model, dir + "/model");
  try {
    torch::load(*impl_->optimizer, dir + "/optimizer.pt");
  } catch (const c10::Error& e) {
    throw CheckpointError("cannot load " + dir + "/optimizer.pt: " + e.what_without_backtrace());
  }
}

}  // namespace troupe
