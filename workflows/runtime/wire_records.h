// Conversions between the runtime's C++ structs and their wire messages
// (comms/proto/runtime.proto). Torch-free.
#pragma once

#include <cstdint>
#include <vector>

#include "comms/proto/runtime.pb.h"
#include "core/models/trainer.h"
#include "core/trajectory.h"
#include "workflows/runtime/policy_service.h"

namespace troupe {

void ToWire(const CallRecord& record, wire::CallRecord* out);
CallRecord FromWire(const wire::CallRecord& record, int model);

// Rows [begin, end) of a batch as one request. `prompts`/`options`/`soft` keep
// the storage that the returned batch's query pointers refer to (FromWire).
void ToWire(const GenerateBatch& batch, size_t begin, size_t end, uint64_t seed, wire::GenerateRequest* out);
GenerateBatch FromWire(const wire::GenerateRequest& request, int model, std::vector<std::vector<int>>* prompts,
                       std::vector<std::vector<int>>* options, std::vector<std::vector<float>>* soft);

// `width`: of the model's latent vectors (rows of generation.latents).
void ToWire(const Generation& generation, int width, wire::GenerationRow* out);
Generation FromWire(const wire::GenerationRow& row);

void ToWire(const ModelTrainStats& stats, wire::TrainStats* out);
ModelTrainStats FromWire(const wire::TrainStats& stats);

// A hybrid distillation step for one model: its examples (model fields are not
// sent; FromWire sets them to `model`) and the step's settings.
void ToWire(const HybridBatch& batch, const HybridSettings& settings, wire::HybridStepRequest* out);
HybridBatch FromWire(const wire::HybridStepRequest& request, int model, HybridSettings* settings);
void ToWire(const HybridStepStats& stats, wire::HybridStepReply* out);
HybridStepStats FromWire(const wire::HybridStepReply& reply);

}  // namespace troupe
