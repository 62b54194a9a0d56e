// Batched rollouts of node-driven pipelines. Per tick, every episode's
// frontier runs together: role nodes of all episodes are gathered per model
// into one Generate call, each tool node's calls of all episodes into one tool
// call (retried, fail-open); every node reads the outputs of earlier ticks.
// The next frontier is every edge target whose condition holds; an episode
// stops at an end node or after max_steps ticks.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>

#include "core/base/errors.h"
#include "core/text/byte_level.h"
#include "workflows/rollout/pipeline_credit.h"
#include "workflows/rollout/rollout.h"

namespace troupe {

namespace {

struct PipelineEpisode {
  PipelineQuery query;
  std::vector<NodeOutput> outputs;  // per node, its latest
  std::vector<int> frontier;
  int steps = 0;
  bool done = false;
  bool finished = false;  // reached an end node (not max_steps, not a failed tool)
  bool worked = false;    // ran a node this tick
  bool dropped = false;
  int invalid = 0;
  int calls = 0;
  int tool_errors = 0;
  int truncated = 0;  // prompts cut to fit the model's max_len
  int latent_vectors = 0;  // vectors its latent channels sent
  std::vector<std::string> retrieved;  // ids every tool returned, in order
  std::vector<int> visits;             // per node: how many times it ran (a call's turn)
  std::vector<CallTick> call_ticks;    // per record of the episode, in order
  std::vector<AnswerTick> answers;     // every answer the answer node gave
};

// What a role node reads when it has no prompt template: the question, then
// each input's latest raw output after a '|'.
std::string DefaultPrompt(const PipelineNode& node, const PipelineEpisode& ep) {
  std::string text = ep.query.question;
  for (int in : node.inputs) text += " | " + ep.outputs[in].raw;
  return text;
}

// Runs one tool node's calls of a tick as a batch; a failed batch, or failed
// calls, are tried again up to `retries` times. Results stay failed after that.
std::vector<ToolResult> RunTool(const PipelineTool& tool, const std::vector<ToolCall>& calls, int retries) {
  std::vector<ToolResult> results(calls.size());
  std::vector<size_t> todo(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) todo[i] = i;
  for (int attempt = 0; attempt <= retries && !todo.empty(); ++attempt) {
    std::vector<ToolCall> batch;
    for (size_t i : todo) batch.push_back(calls[i]);
    std::vector<ToolResult> got;
    try {
      got = tool.Run(batch);
      if (got.size() != batch.size()) throw Error("the tool answered " + std::to_string(got.size()) + " of " + std::to_string(batch.size()) + " calls");
    } catch (const Error& e) {
      got.assign(batch.size(), ToolResult{false, e.what(), {}});
    }
    std::vector<size_t> again;
    for (size_t k = 0; k < todo.size(); ++k) {
      results[todo[k]] = std::move(got[k]);
      if (!results[todo[k]].ok) again.push_back(todo[k]);
    }
    todo = std::move(again);
  }
  return results;
}

// The oracle's answer at a role node (supervised warm starts): the gold
// answer at the answer node, the oracle sub-questions elsewhere, written as
// the node's parser reads them.
// At its `visit`-th run, a node whose parser has markers (search: <end>) asks
// the visit-th sub-question, or gives its first marker once they are all asked;
// a JSON list asks them all; other nodes write the visit-th sub-question.
std::string OracleAnswer(const CompiledPipeline& p, int node, int visit, const PipelineQuery& query) {
  const OutputParser& parser = *p.nodes[node].parser;
  if (node == p.answer) return parser.Format({query.answers.empty() ? "" : query.answers.front()});
  const std::vector<std::string>& subs = query.decomposition;
  if (!parser.markers().empty() && visit >= static_cast<int>(subs.size())) return parser.markers().front();
  if (parser.kind() == config::JSON_KEY || subs.empty()) return parser.Format(subs);
  return parser.Format({subs[std::min<size_t>(static_cast<size_t>(visit), subs.size() - 1)]});
}

// A role node's prompt text as its codec reads it. Each latent marker (a
// {node.latents} in the template) becomes <bot> <eot>, and the vectors of the
// message shown there go between them as soft slots, in template order.
PromptParts NodePrompt(const RolloutSpec& w, const PipelineNode& node, const PipelineEpisode& ep,
                       const std::string& text, const std::function<std::vector<int>(const std::vector<std::string>&)>& words_prompt) {
  const PromptCodec& codec = w.Codec(node.role);
  std::vector<const NodeOutput*> messages;
  for (const NodeRef& r : node.prompt.refs()) {
    if (r.key == kLatentsKey && !ep.outputs[r.node].latents.empty()) messages.push_back(&ep.outputs[r.node]);
  }
  PromptParts parts;
  if (messages.empty()) {
    parts.tokens = codec.reads_text() ? codec.TextPrompt(node.role, text) : words_prompt(WordsOfText(text));
    return parts;
  }
  std::string shown;  // text codecs: the markers as the tokenizer's <bot><eot>
  std::vector<std::string> words;  // word codecs: the words, the markers as <bot> <eot>
  size_t start = 0;
  for (size_t at = text.find(kLatentMarker);; at = text.find(kLatentMarker, start)) {
    const std::string piece = text.substr(start, at == std::string::npos ? std::string::npos : at - start);
    if (codec.reads_text()) shown += piece;
    else for (auto& word : WordsOfText(piece)) words.push_back(std::move(word));
    if (at == std::string::npos) break;
    if (codec.reads_text()) shown += "<bot><eot>";
    else words.insert(words.end(), {"<bot>", "<eot>"});
    start = at + 1;
  }
  const std::vector<int> tokens = codec.reads_text() ? codec.TextPrompt(node.role, shown) : words_prompt(words);
  const auto [bot, eot] = codec.MessageMarkers();
  size_t next = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    parts.tokens.push_back(tokens[i]);
    if (tokens[i] != bot || i + 1 >= tokens.size() || tokens[i + 1] != eot || next >= messages.size()) continue;
    const NodeOutput& m = *messages[next++];
    parts.tokens.insert(parts.tokens.end(), m.latents.size() / static_cast<size_t>(m.latent_width), Vocab::kSoft);
    parts.soft.insert(parts.soft.end(), m.latents.begin(), m.latents.end());
    parts.soft_width = m.latent_width;
  }
  return parts;
}

// Cuts a prompt longer than `limit` tokens in the middle: the head (the start,
// the role, the instructions) and the tail (a template's last lines, where
// the question stands) stay, passages in between lose their end, and soft
// slots cut lose their vectors. True when cut.
bool FitPrompt(PromptParts* prompt, int limit) {
  std::vector<int>& tokens = prompt->tokens;
  if (limit <= 0 || static_cast<int>(tokens.size()) <= limit) return false;
  const int head = std::min(32, limit / 4), tail = limit - head;
  const auto from = tokens.begin() + head, to = tokens.end() - tail;
  if (prompt->soft_width > 0) {
    const auto before = std::count(tokens.begin(), from, Vocab::kSoft), cut = std::count(from, to, Vocab::kSoft);
    const auto w = prompt->soft_width;
    prompt->soft.erase(prompt->soft.begin() + before * w, prompt->soft.begin() + (before + cut) * w);
  }
  tokens.erase(from, to);
  return true;
}

}  // namespace

// One RunPipeline call: its episodes and, tick by tick, the steps of a tick:
// Collect the frontier's work (role-node prompts per model, tool calls per
// tool node), RunTools, Generate (the models' answers, and the oracle's where
// it answers), then the outputs of both (ApplyTools, ApplyGenerations), and
// Advance each episode along the edges whose conditions hold. Summarize scores
// every episode and gives its calls their rewards.
class Rollout::PipelineRun {
 public:
  PipelineRun(Rollout& r, const RolloutOptions& options, Rng& rng)
      : r_(r),
        w_(r.workflow_),
        p_(*r.workflow_.pipeline),
        options_(options),
        rng_(rng),
        E_(options.episodes),
        observer_(options.observer),
        eps_(E_),
        episode_records_(E_) {
    const int eval_count = options.eval_first >= 0 ? p_.task->EvalQueryCount() : 0;
    for (int e = 0; e < E_; ++e) {
      const int group = e / std::max(1, options.group_size);
      eps_[e].query = eval_count > 0 ? p_.task->EvalQuery((options.eval_first + e) % eval_count)
                                     : p_.task->MakeQuery(Rng::Mix(options.seed, static_cast<uint64_t>(group)));
      eps_[e].outputs.assign(p_.nodes.size(), {});
      eps_[e].visits.assign(p_.nodes.size(), 0);
      eps_[e].frontier = p_.start;
    }
    latent_channels_ = std::any_of(p_.nodes.begin(), p_.nodes.end(),
                                   [&](const PipelineNode& n) { return n.kind == config::ROLE_NODE && Sends(n); });
    has_tools_ = std::any_of(p_.tools.begin(), p_.tools.end(), [](const auto& t) { return t != nullptr; });
    // Whether some tool retrieves (returns "ids"): then retrieval recall counts, also when it did not run.
    searches_ = std::any_of(p_.tools.begin(), p_.tools.end(), [](const auto& t) {
      if (t == nullptr) return false;
      const auto keys = t->Keys();
      return std::find(keys.begin(), keys.end(), "ids") != keys.end();
    });
  }

  RolloutBatch Run() {
    const int64_t calls_before = r_.policy_.forward_calls();
    if (observer_) {
      for (int e = 0; e < E_; ++e) observer_->EpisodeStarted(e, e / std::max(1, options_.group_size), {});
    }
    for (;;) {
      Tick tick;
      tick.by_model.resize(r_.policy_.size());
      if (!Collect(&tick)) break;
      RunTools(&tick);  // before the outputs change this tick
      Generate(&tick);
      ApplyTools(&tick);
      ApplyGenerations(&tick);
      Advance();
    }
    for (int e = 0; e < E_; ++e) batch_.episodes.push_back(Summarize(e));
    r_.Finish(options_, episode_records_, &batch_);
    batch_.forward_calls = r_.policy_.forward_calls() - calls_before;
    return std::move(batch_);
  }

 private:
  // A role node's call this tick.
  struct Pending {
    int episode;
    int node;
    PromptParts prompt;
    int latent_steps = 0;  // a sender: vectors to send (after <bot>) before its text
    bool oracle = false;   // the oracle writes its text (a sender's vectors still come from its model)
  };
  struct Tick {
    std::vector<std::vector<Pending>> by_model;     // role nodes per model (then one list the oracle answers alone)
    std::vector<std::vector<Generation>> gens_of;   // their answers, in the same shape
    std::vector<Pending> oracle;                    // role nodes only the oracle answers (demonstrations)
    std::map<int, std::vector<int>> tool_episodes;  // tool node -> episodes calling it this tick
    std::map<int, std::vector<ToolCall>> calls_of;  // tool node -> its calls, per those episodes
    std::map<int, std::vector<ToolResult>> tool_results;
  };

  // Roles that send latent messages: K vectors after the prompt, then <eot> and the text.
  bool Sends(const PipelineNode& node) const { return w_.roles[node.role].message_mode != config::TEXT; }

  // Each running episode's frontier: end nodes end it, tool nodes queue their
  // calls, role nodes their prompts. False when no episode runs any more.
  bool Collect(Tick* tick) {
    bool active = false;
    for (int e = 0; e < E_; ++e) {
      PipelineEpisode& ep = eps_[e];
      if (ep.done) continue;
      if (ep.frontier.empty() || ep.steps >= p_.max_steps) {
        ep.done = true;
        continue;
      }
      active = true;
      for (int n : ep.frontier) {
        const PipelineNode& node = p_.nodes[n];
        if (node.kind == config::END_NODE) {
          ep.done = ep.finished = true;
          continue;
        }
        ep.worked = true;
        if (node.kind == config::TOOL_NODE) tick->tool_episodes[n].push_back(e);
        else QueueRoleNode(e, n, tick);
      }
    }
    return active;
  }

  void QueueRoleNode(int e, int n, Tick* tick) {
    PipelineEpisode& ep = eps_[e];
    const PipelineNode& node = p_.nodes[n];
    const std::string text =
        node.prompt.empty() ? DefaultPrompt(node, ep) : node.prompt.Render(ep.query.question, ep.outputs);
    const RoleInfo& role = w_.roles[node.role];
    Pending pending{e, n, NodePrompt(w_, node, ep, text, [&](const std::vector<std::string>& words) {
                      return r_.Prompt(node.role, words).tokens;
                    })};
    // Demonstrations have the rollouts' shape: a sender's oracle text follows the
    // vectors its model sends (asked of the model: readers read them as data).
    if (Sends(node)) pending.latent_steps = role.latent_vectors;
    pending.oracle = options_.scripted_for_trained || node.oracle;
    const int room = node.max_tokens + (pending.latent_steps > 0 ? pending.latent_steps + 2 : 0);
    ep.truncated += FitPrompt(&pending.prompt, w_.max_len.at(role.model) - room);
    if (pending.latent_steps > 0) pending.prompt.tokens.push_back(w_.Codec(node.role).MessageMarkers().first);
    if (pending.oracle && pending.latent_steps == 0) tick->oracle.push_back(std::move(pending));
    else tick->by_model[role.model].push_back(std::move(pending));
  }

  // One batched call per tool node.
  void RunTools(Tick* tick) {
    for (const auto& [n, episodes] : tick->tool_episodes) {
      const PipelineNode& node = p_.nodes[n];
      std::vector<ToolCall> calls;
      for (int e : episodes) {
        ToolCall call{&eps_[e].query, {}};
        if (node.input_question) call.inputs = {eps_[e].query.question};
        else if (node.input) call.inputs = node.input->Items(eps_[e].outputs);
        else
          for (int in : node.inputs) call.inputs.push_back(eps_[e].outputs[in].raw);
        calls.push_back(std::move(call));
      }
      tick->tool_results[n] = RunTool(*p_.tools[n], calls, node.retries);
      tick->calls_of[n] = std::move(calls);
    }
  }

  // One Generate per model; then the oracle's answers where it answers.
  void Generate(Tick* tick) {
    std::vector<std::vector<GenerateQuery>> queries(tick->by_model.size());
    for (size_t m = 0; m < tick->by_model.size(); ++m) {
      for (const auto& q : tick->by_model[m]) {
        const PipelineNode& node = p_.nodes[q.node];
        // An oracle sender only sends its vectors (and one token, replaced by the oracle's text).
        GenerateQuery query{w_.roles[node.role].slot, &q.prompt.tokens, q.oracle ? 1 : node.max_tokens, nullptr,
                            q.episode};
        if (!q.prompt.soft.empty()) {
          query.soft_inputs = &q.prompt.soft;
          query.soft_width = q.prompt.soft_width;
        }
        query.latent_steps = q.latent_steps;
        if (q.latent_steps > 0) query.latent_end = w_.Codec(node.role).MessageMarkers().second;
        queries[m].push_back(query);
      }
    }
    tick->gens_of = r_.GenerateTick(queries, options_, rng_, &batch_);
    for (size_t m = 0; m < tick->by_model.size(); ++m) {
      for (size_t i = 0; i < tick->by_model[m].size(); ++i) {
        if (tick->by_model[m][i].oracle && !tick->gens_of[m][i].lost)
          WriteOracle(tick->by_model[m][i], &tick->gens_of[m][i]);
      }
    }
    if (tick->oracle.empty()) return;
    tick->by_model.emplace_back();
    tick->gens_of.emplace_back();
    for (Pending& q : tick->oracle) {
      Generation g;
      WriteOracle(q, &g);
      tick->by_model.back().push_back(std::move(q));
      tick->gens_of.back().push_back(std::move(g));
    }
  }

  // The oracle's answer, as the tokens a model would have sampled.
  void WriteOracle(const Pending& q, Generation* g) const {
    const PipelineNode& node = p_.nodes[q.node];
    const PromptCodec& codec = w_.Codec(node.role);
    const std::string text = OracleAnswer(p_, q.node, eps_[q.episode].visits[q.node], eps_[q.episode].query);
    g->tokens = codec.reads_text() ? codec.Answer({text}, 1 << 20) : codec.Answer(WordsOfText(text), 1 << 20);
    if (static_cast<int>(g->tokens.size()) > node.max_tokens) g->tokens.resize(static_cast<size_t>(node.max_tokens));
    g->logprobs.assign(g->tokens.size(), 0.0f);
  }

  // Tool results become the nodes' outputs; a failed call ends its episode unless the node fails open.
  void ApplyTools(Tick* tick) {
    for (const auto& [n, episodes] : tick->tool_episodes) {
      const PipelineNode& node = p_.nodes[n];
      for (size_t k = 0; k < episodes.size(); ++k) {
        PipelineEpisode& ep = eps_[episodes[k]];
        ToolResult& r = tick->tool_results[n][k];
        NodeOutput out;
        out.ran = true;
        out.valid = r.ok;
        if (!r.ok) {
          ++ep.tool_errors;
          if (!node.fail_open) ep.done = true;
        }
        out.values = std::move(r.values);
        out.runs = ep.outputs[n].runs + 1;
        for (const auto& [key, items] : out.values) {
          if (out.raw.empty() && !items.empty()) out.raw = items.front();
          if (key == "ids") ep.retrieved.insert(ep.retrieved.end(), items.begin(), items.end());
        }
        if (observer_ && observer_->Detailed(episodes[k])) {
          observer_->ToolRan(episodes[k], node.name, ep.steps, tick->calls_of[n][k].inputs, out.values, out.valid);
        }
        ep.outputs[n] = std::move(out);
      }
    }
  }

  void ApplyGenerations(Tick* tick) {
    for (size_t m = 0; m < tick->by_model.size(); ++m) {
      for (size_t i = 0; i < tick->by_model[m].size(); ++i) Apply(tick->by_model[m][i], tick->gens_of[m][i]);
    }
  }

  // A role node's answer: parsed into its output, and (unless the oracle stands
  // in for an ablated node) a call record of its episode.
  void Apply(Pending& q, Generation& gen) {
    PipelineEpisode& ep = eps_[q.episode];
    const PipelineNode& node = p_.nodes[q.node];
    if (gen.lost) {
      ep.dropped = ep.done = true;
      return;
    }
    // Byte-level tokens may end inside a character: later prompts read valid UTF-8.
    const std::string text = ToValidUtf8(w_.Codec(node.role).Text(gen.tokens));
    const int runs = ep.outputs[q.node].runs + 1;
    ep.outputs[q.node] = node.parser->Parse(text);
    ep.outputs[q.node].runs = runs;
    // Its turn: how many times this node ran before in the episode (GRPO groups by query, role and turn).
    CallRecord rec = r_.NewRecord(q.episode, options_.group_size, node.role, 0, ep.visits[q.node]++, node.name);
    if (q.latent_steps > 0) {  // a sender: readers get its vectors
      NodeOutput& out = ep.outputs[q.node];
      out.latents = gen.latents;
      out.latent_width = w_.roles[node.role].latent_width;
      out.values[kLatentsKey] = {std::string(1, kLatentMarker)};
    }
    if (node.oracle && !options_.scripted_for_trained) {
      // An ablated node (pipeline.oracle): its output stands, but it is no model's call.
      if (observer_ && observer_->Detailed(q.episode)) {
        rec.prompt = std::move(q.prompt.tokens);
        rec.response = std::move(gen.tokens);
        rec.valid = ep.outputs[q.node].valid;
        observer_->Acted(q.episode, rec, {text}, true);
      }
      return;
    }
    if (q.latent_steps > 0) {
      // The record keeps the sender's own slots (between <bot> and <eot> at
      // the prompt's end) for the trainer to recompute.
      q.prompt.tokens.insert(q.prompt.tokens.end(), q.latent_steps, Vocab::kSoft);
      q.prompt.tokens.push_back(w_.Codec(node.role).MessageMarkers().second);
      rec.latent_steps = q.latent_steps;
      rec.latents = std::move(gen.latents);
      ep.latent_vectors += q.latent_steps;
    }
    rec.step = ep.steps;
    rec.prompt = std::move(q.prompt.tokens);
    rec.soft_inputs = std::move(q.prompt.soft);
    rec.soft_width = q.prompt.soft_width;
    rec.response = std::move(gen.tokens);
    rec.logprobs = std::move(gen.logprobs);
    rec.valid = ep.outputs[q.node].valid;
    rec.format = rec.valid ? node.parser->valid_reward() : node.parser->invalid_reward();
    ep.invalid += !rec.valid;
    ++ep.calls;
    batch_.invalid += !rec.valid;
    if (observer_ && observer_->Detailed(q.episode)) observer_->Acted(q.episode, rec, {text}, false);
    ep.call_ticks.push_back({ep.steps, q.node == p_.answer});
    if (q.node == p_.answer) {
      PipelineOutcome answered;
      const auto found = ep.outputs[q.node].values.find(node.parser->output_key());
      if (found != ep.outputs[q.node].values.end() && !found->second.empty()) answered.answer = found->second.front();
      const auto scored = p_.task->Score(ep.query, answered);
      ep.answers.push_back({ep.steps, scored.count("score") ? scored.at("score") : 0.0});
    }
    episode_records_[q.episode].push_back(batch_.records.size());
    batch_.records.push_back(std::move(rec));
  }

  // Next frontier: targets of edges whose condition holds on the outputs so far.
  void Advance() {
    for (int e = 0; e < E_; ++e) {
      PipelineEpisode& ep = eps_[e];
      if (ep.worked) ++ep.steps;  // ticks that ran a node
      ep.worked = false;
      batch_.turns = std::max<int64_t>(batch_.turns, ep.steps);
      if (ep.done) continue;
      std::set<int> next;
      for (int n : ep.frontier) {
        for (const auto& edge : p_.edges) {
          if (edge.from == n && (!edge.when || edge.when->Holds(ep.outputs))) next.insert(edge.to);
        }
      }
      ep.frontier.assign(next.begin(), next.end());
    }
  }

  // An ended episode's score and metrics; its calls get their rewards.
  EpisodeSummary Summarize(int e) {
    PipelineEpisode& ep = eps_[e];
    PipelineOutcome outcome;
    const auto it = ep.outputs[p_.answer].values.find(p_.nodes[p_.answer].parser->output_key());
    if (it != ep.outputs[p_.answer].values.end() && !it->second.empty()) outcome.answer = it->second.front();
    outcome.retrieved = ep.retrieved;
    outcome.searched = searches_;
    outcome.calls = ep.calls;
    EpisodeSummary s;
    s.metrics = p_.task->Score(ep.query, outcome);
    const double score = s.metrics.count("score") ? s.metrics["score"] : 0.0;
    const std::vector<double> gains = AnswerGains(ep.call_ticks, ep.answers);
    std::map<int, double> credit;  // per role: its calls' rewards in the episode
    std::vector<int> receivers(w_.rewards.size(), 0);  // per term: the episode's calls it applies to
    for (size_t r : episode_records_[e]) {
      for (size_t t = 0; t < receivers.size(); ++t) receivers[t] += TermApplies(w_.rewards[t], batch_.records[r].role);
    }
    for (size_t k = 0; k < episode_records_[e].size(); ++k) {
      CallRecord& rec = batch_.records[episode_records_[e][k]];
      rec.answer_gain = gains[k];
      rec.reward = CallReward(w_, rec, nullptr, score, &rec.role_reward, &receivers);
      credit[rec.role] += rec.reward;
    }
    for (const auto& [role, r] : credit) s.metrics["credit/" + w_.roles[role].name] = r;
    s.metrics["steps"] = ep.steps;
    s.metrics["finished"] = ep.finished;
    s.metrics["invalid_outputs"] = ep.invalid;
    s.metrics["calls"] = ep.calls;
    if (has_tools_) s.metrics["tool_errors"] = ep.tool_errors;
    s.metrics["truncated_prompts"] = ep.truncated;
    if (latent_channels_) s.metrics["latent_vectors"] = ep.latent_vectors;
    s.final_state = "question: " + ep.query.question + "\nanswer: " + outcome.answer + "\n";
    s.dropped = ep.dropped;
    return s;
  }

  Rollout& r_;
  const RolloutSpec& w_;
  const CompiledPipeline& p_;
  const RolloutOptions& options_;
  Rng& rng_;
  const int E_;
  RolloutObserver* observer_;
  std::vector<PipelineEpisode> eps_;
  std::vector<std::vector<size_t>> episode_records_;  // per episode: its records' indices in batch_
  RolloutBatch batch_;
  bool latent_channels_ = false;  // some role node sends latent vectors
  bool has_tools_ = false;
  bool searches_ = false;  // some tool retrieves passages
};

RolloutBatch Rollout::RunPipeline(const RolloutOptions& options, Rng& rng) {
  return PipelineRun(*this, options, rng).Run();
}

}  // namespace troupe
