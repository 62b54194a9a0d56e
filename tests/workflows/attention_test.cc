// Attention on the CPU kernels (core/models/attention_kernel.h) against the
// same attention composed of LibTorch's operators: outputs and the gradients
// of queries, keys and values, for grouped key/value heads, padding and
// prefix-tree masks, one bias for every sequence, a query that sees nothing,
// decoding one query over a cache, and head widths off the vector width.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <cstdint>

#include "core/models/attention.h"
#include "core/models/policy_model.h"

using namespace troupe;

namespace {

struct Case {
  int64_t B, H, KV, T, Tk, dh;
};

// A random query-by-key mask [B, 1, T, Tk] in which each query sees itself
// (the last T keys are the queries) and a random subset of the keys before it.
torch::Tensor RandomTreeMask(const Case& c, torch::Generator& gen) {
  torch::Tensor allowed = torch::rand({c.B, 1, c.T, c.Tk}, gen).lt(0.6);
  for (int64_t i = 0; i < c.T; ++i) {
    allowed.narrow(2, i, 1).narrow(3, c.Tk - c.T + i + 1, c.T - i - 1).fill_(false);  // nothing after itself
    allowed.narrow(2, i, 1).narrow(3, c.Tk - c.T + i, 1).fill_(true);
  }
  return allowed;
}

struct Result {
  torch::Tensor out, dq, dk, dv;
};

Result Run(bool kernels, const Case& c, const torch::Tensor& mask, torch::Generator& gen_in) {
  torch::Generator gen = gen_in.clone();
  torch::Tensor q = torch::randn({c.B, c.H, c.T, c.dh}, gen).requires_grad_(true);
  torch::Tensor k = torch::randn({c.B, c.KV, c.Tk, c.dh}, gen).requires_grad_(true);
  torch::Tensor v = torch::randn({c.B, c.KV, c.Tk, c.dh}, gen).requires_grad_(true);
  const torch::Tensor up = torch::randn({c.B, c.H, c.T, c.dh}, gen);
  const torch::Tensor out = kernels ? KernelAttention(q, k, v, mask) : ComposedAttention(q, k, v, mask);
  (out * up).sum().backward();
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

void RequireSame(const Case& c, const torch::Tensor& mask) {
  torch::Generator gen = at::detail::createCPUGenerator(17);
  const Result kernel = Run(true, c, mask, gen), composed = Run(false, c, mask, gen);
  INFO("B " << c.B << " H " << c.H << " KV " << c.KV << " T " << c.T << " Tk " << c.Tk << " dh " << c.dh);
  REQUIRE(kernel.out.sizes() == composed.out.sizes());
  CHECK((kernel.out - composed.out).abs().max().item<float>() < 1e-5);
  CHECK((kernel.dq - composed.dq).abs().max().item<float>() < 1e-5);
  CHECK((kernel.dk - composed.dk).abs().max().item<float>() < 1e-5);
  CHECK((kernel.dv - composed.dv).abs().max().item<float>() < 1e-5);
}

}  // namespace

TEST_CASE("attention kernels match LibTorch's operators under padding and tree masks", "[attention]") {
  torch::Generator gen = at::detail::createCPUGenerator(3);
  for (const Case& c :
       {Case{3, 4, 4, 9, 9, 8}, Case{2, 4, 2, 12, 12, 16}, Case{2, 6, 1, 7, 7, 5}, Case{2, 2, 2, 40, 40, 32}}) {
    SECTION("tree mask, heads " + std::to_string(c.H) + "/" + std::to_string(c.KV) + ", width " +
            std::to_string(c.dh)) {
      RequireSame(c, AttentionBias(RandomTreeMask(c, gen)));
    }
    SECTION("left padding, heads " + std::to_string(c.H) + "/" + std::to_string(c.KV) + ", width " +
            std::to_string(c.dh)) {
      torch::Tensor key_valid = torch::ones({c.B, c.Tk}, torch::kBool);
      key_valid.select(0, 0).narrow(0, 0, 3).fill_(false);
      RequireSame(c, AttentionBias(AttentionMask(key_valid, c.T)));
    }
  }
}

TEST_CASE("attention kernels take one bias for every sequence, and decode one query over a cache", "[attention]") {
  torch::Generator gen = at::detail::createCPUGenerator(5);
  const Case shared{3, 4, 2, 10, 10, 8};
  RequireSame(shared, AttentionBias(RandomTreeMask(Case{1, 4, 2, 10, 10, 8}, gen)));
  const Case decode{3, 4, 4, 1, 13, 8};
  torch::Tensor key_valid = torch::ones({decode.B, decode.Tk}, torch::kBool);
  key_valid.select(0, 1).narrow(0, 0, 5).fill_(false);
  RequireSame(decode, AttentionBias(AttentionMask(key_valid, 1)));
}

TEST_CASE("attention kernels treat a query that sees nothing as the composed softmax does", "[attention]") {
  const Case c{2, 2, 2, 6, 6, 8};
  torch::Tensor allowed = torch::ones({c.B, 1, c.T, c.Tk}, torch::kBool).tril();
  allowed.select(0, 1).select(1, 3).fill_(false);  // sequence 1, query 3: every key masked
  RequireSame(c, AttentionBias(allowed));
}

TEST_CASE("attention kernels mask exactly: a masked key's value never reaches the output", "[attention]") {
  const Case c{1, 2, 2, 5, 5, 8};
  const torch::Tensor mask = AttentionBias(torch::ones({1, 1, 5, 5}, torch::kBool).tril());
  torch::Tensor q = torch::randn({1, 2, 5, 8}), k = torch::randn({1, 2, 5, 8}), v = torch::randn({1, 2, 5, 8});
  const torch::Tensor before = KernelAttention(q, k, v, mask);
  v.select(2, 4).fill_(1e6);  // the last key: masked for every query but the last
  const torch::Tensor after = KernelAttention(q, k, v, mask);
  CHECK(torch::equal(before.narrow(2, 0, 4), after.narrow(2, 0, 4)));
  CHECK_FALSE(torch::equal(before.narrow(2, 4, 1), after.narrow(2, 4, 1)));
}

TEST_CASE("attention takes the kernels only for float32 heads they are faster on", "[attention]") {
  const torch::Tensor mask = AttentionBias(torch::ones({1, 1, 4, 4}, torch::kBool).tril());
  for (int64_t width : {8, 16}) {
    const torch::Tensor q = torch::randn({2, 2, 4, width}, torch::requires_grad()), k = torch::randn({2, 2, 4, width}),
                        v = torch::randn({2, 2, 4, width});
    const torch::Tensor out = Attention(q, k, v, mask);
    const std::string node = out.grad_fn()->name();
    INFO("width " << width << ": " << node);
    CHECK((node.find("CpuAttention") != std::string::npos) == (width <= kKernelAttentionMaxHeadDim));
  }
  const torch::Tensor q = torch::randn({1, 2, 4, 8}), k = torch::randn({1, 2, 4, 8});
  CHECK_THROWS_WITH(KernelAttention(q.to(torch::kDouble), k, k, mask), Catch::Contains("float32 CPU tensors"));
}
