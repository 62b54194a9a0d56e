// LibTorch archives as troupe loads them from checkpoints written before it
// wrote safetensors (core/models/torch_files.h): into a module (which must
// keep its shapes), an optimiser and a tensor. The archive reader is LibTorch's, uninstrumented: coverage
// guides the mutations only through troupe's side, so this target mostly
// tries damaged variants of its seeds (a module, an Adam state, a tensor).
//   TROUPE_FUZZ_WRITE_SEEDS=DIR fuzz_torch_archive -runs=0   writes those seeds.
#include <cstdlib>

#include "core/models/torch_files.h"
#include "fuzz/fuzz_support.h"

namespace {

struct SmallImpl : torch::nn::Module {
  SmallImpl() {
    embed = register_module("embed", torch::nn::Embedding(11, 4));
    out = register_module("out", torch::nn::Linear(4, 3));
    register_buffer("steps", torch::zeros({2}));
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear out{nullptr};
};
TORCH_MODULE(Small);

void WriteSeeds(const std::string& dir) {
  torch::manual_seed(0);
  Small model;
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  model->out(model->embed(torch::tensor({1, 2, 3}))).sum().backward();
  adam.step();
  torch::save(model, dir + "/module.pt");
  torch::save(adam, dir + "/adam.pt");
  torch::save(torch::arange(6).reshape({2, 3}), dir + "/tensor.pt");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  torch::set_num_threads(1);
  if (const char* dir = std::getenv("TROUPE_FUZZ_WRITE_SEEDS")) WriteSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = troupe::fuzz::AsFile(data, size, "archive.pt");
  Small model;
  troupe::fuzz::Refusing([&] { troupe::LoadTorchFile(model, path); });
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  troupe::fuzz::Refusing([&] { troupe::LoadTorchFile(adam, path); });
  torch::Tensor t;
  troupe::fuzz::Refusing([&] { troupe::LoadTorchFile(t, path); });
  return 0;
}
