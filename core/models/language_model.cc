// LanguageModel over any architecture a Hugging Face folder holds.
#include "core/models/language_model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdint>

#include "core/base/errors.h"
#include "core/models/architecture.h"
#include "core/models/model_pool_impl.h"

namespace troupe {

namespace {

class FolderLanguageModel : public LanguageModel {
 public:
  FolderLanguageModel(ModelConfig config, PolicyModel model, torch::Device device)
      : config_(std::move(config)), model_(std::move(model)), device_(device) {
    model_->to(device_);
    model_->eval();
  }

  std::vector<float> Score(const std::vector<int>& ids) const override {
    std::vector<float> out;
    ForEachWindow(ids, [&](const torch::Tensor& logits, int64_t first, int64_t end) {
      // The targets' log-probabilities in one gather, copied out once.
      const torch::Tensor targets =
          torch::tensor(std::vector<int64_t>(ids.begin() + first, ids.begin() + end), torch::kLong).unsqueeze(1).to(device_);
      const torch::Tensor chosen =
          torch::log_softmax(logits, -1).gather(1, targets).squeeze(1).to(torch::kCPU, torch::kFloat).contiguous();
      out.insert(out.end(), chosen.data_ptr<float>(), chosen.data_ptr<float>() + chosen.numel());
    });
    return out;
  }

  std::vector<int> Predict(const std::vector<int>& ids) const override {
    std::vector<int> out;
    ForEachWindow(ids, [&](const torch::Tensor& logits, int64_t, int64_t) {
      const torch::Tensor best = logits.argmax(-1).to(torch::kCPU).contiguous();
      out.insert(out.end(), best.data_ptr<int64_t>(), best.data_ptr<int64_t>() + best.numel());
    });
    return out;
  }

  std::vector<int> Generate(const std::vector<int>& prompt, int max_new, bool greedy, double temperature,
                            uint64_t seed, const std::vector<int>& stop_ids) const override {
    if (prompt.empty()) throw ModelError("generation needs a prompt of at least one token");
    torch::NoGradGuard no_grad;
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    KvCache cache;
    std::vector<int64_t> tokens(prompt.begin(), prompt.end());
    int64_t T = static_cast<int64_t>(tokens.size());
    if (T + max_new > max_len()) throw ModelError("prompt and continuation exceed max_len " + std::to_string(max_len()));
    const auto on = torch::TensorOptions().device(device_);
    torch::Tensor logits = model_->forward(torch::tensor(tokens, torch::kLong).view({1, T}).to(device_),
                                           torch::arange(T, on.dtype(torch::kLong)).view({1, T}),
                                           torch::ones({1, T}, on.dtype(torch::kBool)), {}, &cache)
                               .logits[0][T - 1]
                               .to(torch::kCPU, torch::kFloat);
    std::vector<int> out;
    for (int i = 0; i < max_new; ++i) {
      int next;
      if (greedy) {
        next = static_cast<int>(logits.argmax().item<int64_t>());
      } else {
        const torch::Tensor p = torch::softmax(logits / std::max(temperature, 1e-6), -1);
        next = static_cast<int>(torch::multinomial(p, 1, false, generator).item<int64_t>());
      }
      out.push_back(next);
      if (std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end()) break;
      logits = model_->forward(torch::full({1, 1}, next, on.dtype(torch::kLong)),
                               torch::full({1, 1}, T, on.dtype(torch::kLong)), torch::ones({1, T + 1}, on.dtype(torch::kBool)),
                               {}, &cache)
                   .logits[0][0]
                   .to(torch::kCPU, torch::kFloat);
      ++T;
    }
    return out;
  }

  int vocab_size() const override { return static_cast<int>(model_->vocab_size()); }
  int max_len() const override { return static_cast<int>(model_->max_len()); }
  int64_t parameter_count() const override { return FieldParameterCount(*model_, config_); }

 private:
  // The logits that predict ids[first..end) (one row per target), window by
  // window: windows of at most max_len tokens, each after the first seeing the
  // previous half window; the first window predicts all of its own targets.
  template <typename Visit>
  void ForEachWindow(const std::vector<int>& ids, Visit visit) const {
    torch::NoGradGuard no_grad;
    const int64_t n = static_cast<int64_t>(ids.size()), window = max_len(), stride = std::max<int64_t>(1, window / 2);
    int64_t scored = 1;  // the first target not yet predicted
    for (int64_t begin = 0; scored < n; begin = std::min(begin + stride, n - 1)) {
      const int64_t end = std::min(n, begin + window);
      std::vector<int64_t> tokens(ids.begin() + begin, ids.begin() + end);
      const int64_t T = end - begin;
      const auto on = torch::TensorOptions().device(device_);
      const torch::Tensor logits = model_
                                       ->forward(torch::tensor(tokens, torch::kLong).view({1, T}).to(device_),
                                                 torch::arange(T, on.dtype(torch::kLong)).view({1, T}),
                                                 torch::ones({1, T}, on.dtype(torch::kBool)), {})
                                       .logits[0];
      visit(logits.narrow(0, scored - 1 - begin, end - scored), scored, end);
      scored = end;
    }
  }

  ModelConfig config_;
  mutable PolicyModel model_;  // forward is not const in the frontend
  torch::Device device_;
};

}  // namespace

std::unique_ptr<LanguageModel> LanguageModel::Load(const std::string& dir, const std::string& device) {
  const torch::Device where = ParseDevice(device);  // ModelError before any file is read
  ModelConfig config = HfFolderConfig(dir);
  config.device = device;
  PolicyModel model = BuildPolicyModel(config);
  return std::make_unique<FolderLanguageModel>(std::move(config), std::move(model), where);
}

}  // namespace troupe
