// Node-driven pipelines: a task makes queries and scores final answers; tools
// are non-LLM nodes (verifiers, retrievers) that map their inputs to words.
// Both are plug-ins registered by name, like games.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/registry.h"
#include "core/params.h"

namespace troupe {

struct PipelineQuery {
  std::vector<std::string> question;  // what every node sees first
  std::vector<std::string> answer;    // the reference, never shown to nodes
};

class PipelineTask {
 public:
  virtual ~PipelineTask() = default;
  virtual std::vector<std::string> Vocabulary() const = 0;
  virtual PipelineQuery MakeQuery(uint64_t seed) const = 0;
  // Quality of a final answer in [0, 1] (exact match, F1, pass rate...).
  virtual double Score(const PipelineQuery& query, const std::vector<std::string>& answer) const = 0;
  // The episode metrics the task is judged by (see Game::HeadlineMetrics);
  // the pipeline rollout reports the answer's Score as "score".
  virtual std::vector<std::string> HeadlineMetrics() const { return {"score"}; }
};
using PipelineTaskFactory = Registry<PipelineTask, const Params&>;

using PipelineTaskParamRegistry = ParamSpecRegistry<PipelineTask>;

class PipelineTool {
 public:
  virtual ~PipelineTool() = default;
  // inputs: the latest output of each input node, in declaration order.
  virtual std::vector<std::string> Run(const PipelineQuery& query,
                                       const std::vector<std::vector<std::string>>& inputs) const = 0;
};
using PipelineToolFactory = Registry<PipelineTool>;

}  // namespace troupe

#define TROUPE_REGISTER_TASK(name, specs, Type)                                         \
  TROUPE_REGISTER(::troupe::PipelineTaskFactory, name,                                  \
                  [](const ::troupe::Params& p) { return std::make_unique<Type>(p); }); \
  static const bool TROUPE_CONCAT(troupe_task_specs_, __LINE__) =                       \
      ::troupe::PipelineTaskParamRegistry::Get().Register(name, specs)

#define TROUPE_REGISTER_TOOL(name, Type) \
  TROUPE_REGISTER(::troupe::PipelineToolFactory, name, []() { return std::make_unique<Type>(); })
