// Token-level generalised advantage estimation (PPO), for the trainer and its tests.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace troupe {

// values, rewards and mask are [calls, positions]: the value of each position,
// the reward placed on each call's last response token, and 1 on response
// positions. The recursion runs backwards over each call's response; prompt and
// padding positions reset it and get advantage 0. The value after a call's last
// token is 0 (the call ends there).
inline torch::Tensor TokenGae(const torch::Tensor& values, const torch::Tensor& rewards, const torch::Tensor& mask,
                              double gamma, double lambda) {
  torch::Tensor adv = torch::zeros_like(values);
  torch::Tensor next_adv = torch::zeros({values.size(0)}, values.options());
  torch::Tensor next_value = torch::zeros({values.size(0)}, values.options());
  for (int64_t t = values.size(1) - 1; t >= 0; --t) {
    torch::Tensor m = mask.select(1, t);
    torch::Tensor v = values.select(1, t);
    torch::Tensor delta = rewards.select(1, t) + gamma * next_value - v;
    torch::Tensor a = delta + gamma * lambda * next_adv;
    adv.select(1, t).copy_(a * m);
    next_adv = a * m;
    next_value = v * m;
  }
  return adv;
}

}  // namespace troupe
