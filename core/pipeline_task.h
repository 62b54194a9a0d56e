// Node-driven pipelines: a task makes queries and scores final answers; tools
// are non-LLM nodes (retrievers, scorers, verifiers) that turn inputs into
// named lists of strings. Both are plug-ins registered by name, like games.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/registry.h"
#include "core/params.h"

namespace troupe {

struct PipelineQuery {
  std::string id;
  std::string question;              // what every node may see ({question})
  std::vector<std::string> answers;  // gold aliases, never shown to nodes
  std::string type;                  // for metrics per question type; may be empty
  std::vector<std::string> supporting;     // passage ids that answer it (retrieval recall)
  std::vector<std::string> decomposition;  // oracle sub-questions (demonstrations)
  // Counterfactual training queries: the text tools return says `to` wherever
  // the source says `from` (in order), so the gold answer is only in what was retrieved.
  std::vector<std::pair<std::string, std::string>> rewrites;
};

// What an episode produced, for scoring.
struct PipelineOutcome {
  std::string answer;                  // the answer node's first item ("" when it never answered)
  std::vector<std::string> retrieved;  // every id a tool returned under "ids", in order
  bool searched = false;               // the pipeline has a tool that returns "ids" (a retriever)
  int calls = 0;                       // model calls made
};

class PipelineTask {
 public:
  virtual ~PipelineTask() = default;
  // The words a word-vocabulary model reads and writes (text models ignore it).
  virtual std::vector<std::string> Vocabulary() const = 0;
  // A training query.
  virtual PipelineQuery MakeQuery(uint64_t seed) const = 0;
  // A fixed evaluation set (a test split): its size, 0 when evaluation draws
  // queries with MakeQuery like training; and its i-th query.
  virtual int EvalQueryCount() const { return 0; }
  virtual PipelineQuery EvalQuery(int i) const { return MakeQuery(static_cast<uint64_t>(i)); }
  // The episode's metrics; "score" (in [0, 1], the outcome reward) is required.
  virtual std::map<std::string, double> Score(const PipelineQuery& query, const PipelineOutcome& outcome) const = 0;
  // The episode metrics the task is judged by (see Game::HeadlineMetrics).
  virtual std::vector<std::string> HeadlineMetrics() const { return {"score"}; }
};
using PipelineTaskFactory = Registry<PipelineTask, const Params&>;
using PipelineTaskParamRegistry = ParamSpecRegistry<PipelineTask>;

// One episode's call of a tool node.
struct ToolCall {
  const PipelineQuery* query = nullptr;
  std::vector<std::string> inputs;  // the items of the node's input reference
};

struct ToolResult {
  bool ok = true;
  std::string error;  // when !ok
  std::map<std::string, std::vector<std::string>> values;
};

class PipelineTool {
 public:
  virtual ~PipelineTool() = default;
  // The keys its outputs have (templates and conditions may name them).
  virtual std::vector<std::string> Keys() const = 0;
  // Every episode's call of one tick, in one batch; a result per call. May
  // throw Error: the whole batch then failed (the node retries it).
  virtual std::vector<ToolResult> Run(const std::vector<ToolCall>& calls) const = 0;
};
using PipelineToolFactory = Registry<PipelineTool, const Params&>;
using PipelineToolParamRegistry = ParamSpecRegistry<PipelineTool>;

}  // namespace troupe

#define TROUPE_REGISTER_TASK(name, specs, Type)                                         \
  TROUPE_REGISTER(::troupe::PipelineTaskFactory, name,                                  \
                  [](const ::troupe::Params& p) { return std::make_unique<Type>(p); }); \
  static const bool TROUPE_CONCAT(troupe_task_specs_, __LINE__) =                       \
      ::troupe::PipelineTaskParamRegistry::Get().Register(name, specs)

#define TROUPE_REGISTER_TOOL(name, specs, Type)                                         \
  TROUPE_REGISTER(::troupe::PipelineToolFactory, name,                                  \
                  [](const ::troupe::Params& p) { return std::make_unique<Type>(p); }); \
  static const bool TROUPE_CONCAT(troupe_tool_specs_, __LINE__) =                       \
      ::troupe::PipelineToolParamRegistry::Get().Register(name, specs)
