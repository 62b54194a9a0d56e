// Batched rollouts of node-driven pipelines: every episode's frontier runs
// together; role nodes of all episodes are gathered per model into one
// Generate call per step; edges with conditions choose the next frontier.
#include <algorithm>
#include <set>

#include "core/base/errors.h"
#include "workflows/run/rollout.h"

namespace troupe {

RolloutBatch Rollout::RunPipeline(const RolloutOptions& options, Rng& rng) {
  const CompiledPipeline& p = *workflow_.pipeline;
  RolloutBatch batch;
  const int E = options.episodes;
  struct Episode {
    PipelineQuery query;
    std::vector<std::vector<std::string>> latest;  // per node
    std::vector<int> frontier;
    int steps = 0;
    bool done = false;
    bool dropped = false;
    int invalid = 0;
  };
  std::vector<Episode> eps(E);
  for (int e = 0; e < E; ++e) {
    const int group = e / std::max(1, options.group_size);
    eps[e].query = p.task->MakeQuery(Rng::Mix(options.seed, static_cast<uint64_t>(group)));
    eps[e].latest.assign(p.nodes.size(), {});
    eps[e].frontier = p.start;
  }
  const int64_t calls_before = policy_.forward_calls();
  std::vector<std::vector<size_t>> episode_records(E);
  RolloutObserver* observer = options.observer;
  if (observer) {
    for (int e = 0; e < E; ++e) observer->EpisodeStarted(e, e / std::max(1, options.group_size));
  }

  struct Pending {
    int episode;
    int node;
    std::vector<int> prompt;
  };
  for (bool active = true; active;) {
    active = false;
    std::vector<std::vector<Pending>> by_model(policy_.size());
    for (int e = 0; e < E; ++e) {
      Episode& ep = eps[e];
      if (ep.done) continue;
      if (ep.frontier.empty() || ep.steps >= p.max_steps) {
        ep.done = true;
        continue;
      }
      active = true;
      for (int n : ep.frontier) {
        const PipelineNode& node = p.nodes[n];
        if (node.kind == config::END_NODE) {
          ep.done = true;
          continue;
        }
        std::vector<std::string> seen = ep.query.question;
        for (int in : node.inputs) {
          seen.push_back("|");
          seen.insert(seen.end(), ep.latest[in].begin(), ep.latest[in].end());
        }
        if (node.kind == config::TOOL_NODE) {
          std::vector<std::vector<std::string>> inputs;
          for (int in : node.inputs) inputs.push_back(ep.latest[in]);
          ep.latest[n] = p.tools[n]->Run(ep.query, inputs);
        } else {
          const RoleInfo& role = workflow_.roles[node.role];
          by_model[role.model].push_back({e, n, Prompt(node.role, seen).tokens});
        }
      }
    }
    if (!active) break;
    std::vector<std::vector<GenerateQuery>> queries(by_model.size());
    for (size_t m = 0; m < by_model.size(); ++m) {
      for (const auto& q : by_model[m]) {
        const PipelineNode& node = p.nodes[q.node];
        queries[m].push_back({workflow_.roles[node.role].slot, &q.prompt, node.max_tokens, nullptr, q.episode});
      }
    }
    std::vector<std::vector<Generation>> gens_of = GenerateTick(queries, options, rng, &batch);
    for (size_t m = 0; m < by_model.size(); ++m) {
      auto& pend = by_model[m];
      auto& gens = gens_of[m];
      for (size_t i = 0; i < pend.size(); ++i) {
        Pending& q = pend[i];
        Episode& ep = eps[q.episode];
        const PipelineNode& node = p.nodes[q.node];
        if (gens[i].lost) {
          ep.dropped = ep.done = true;
          continue;
        }
        ep.latest[q.node] = workflow_.vocab.Decode(gens[i].tokens);
        CallRecord rec = NewRecord(q.episode, options.group_size, node.role, 0, ep.steps, node.name);
        rec.prompt = std::move(q.prompt);
        rec.response = std::move(gens[i].tokens);
        rec.logprobs = std::move(gens[i].logprobs);
        rec.valid = !ep.latest[q.node].empty();
        ep.invalid += !rec.valid;
        batch.invalid += !rec.valid;
        if (observer && observer->Detailed(q.episode)) observer->Acted(q.episode, rec, ep.latest[q.node], false);
        episode_records[q.episode].push_back(batch.records.size());
        batch.records.push_back(std::move(rec));
      }
    }
    // Next frontier: targets of edges whose condition holds.
    for (int e = 0; e < E; ++e) {
      Episode& ep = eps[e];
      if (ep.done) continue;
      std::set<int> next;
      for (int n : ep.frontier) {
        for (const auto& edge : p.edges) {
          if (edge.from != n) continue;
          bool ok = true;
          if (edge.conditional) {
            const auto& out = ep.latest[edge.cond_node];
            ok = (!out.empty() && out[0] == edge.equals) != edge.negate;
          }
          if (ok) next.insert(edge.to);
        }
      }
      ep.frontier.assign(next.begin(), next.end());
      ++ep.steps;
      batch.turns = std::max<int64_t>(batch.turns, ep.steps);
    }
  }
  for (int e = 0; e < E; ++e) {
    Episode& ep = eps[e];
    const double score = p.task->Score(ep.query, ep.latest[p.answer]);
    for (size_t r : episode_records[e]) {
      CallRecord& rec = batch.records[r];
      rec.reward = CallReward(workflow_, rec, nullptr, score, &rec.role_reward);
    }
    EpisodeSummary s;
    s.metrics = {{"score", score},
                 {"steps", static_cast<double>(ep.steps)},
                 {"invalid_outputs", static_cast<double>(ep.invalid)}};
    std::string text = "question:";
    for (const auto& w : ep.query.question) text += " " + w;
    text += "\nanswer:";
    for (const auto& w : ep.latest[p.answer]) text += " " + w;
    s.final_state = text + "\n";
    s.dropped = ep.dropped;
    batch.episodes.push_back(std::move(s));
  }
  Finish(options, episode_records, &batch);
  batch.forward_calls = policy_.forward_calls() - calls_before;
  return batch;
}

}  // namespace troupe
