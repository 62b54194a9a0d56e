// Boost.Graph checks over roles, channels, pipeline nodes and edges.
#include "workflows/config/validate_graph.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/strong_components.hpp>

#include <map>
#include <set>

#include "core/base/errors.h"
#include "workflows/config/compiled_workflow.h"
#include "workflows/config/config_loader.h"
#include "workflows/config/defaults.h"

namespace troupe {

using Digraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

namespace {

// What a LATENT/HYBRID channel of a reinforcement-learning run sends: its
// mode, vectors per message and words of text (sizes default to
// trainer.hybrid's, from the one table).
struct MessageShape {
  config::ChannelMode mode = config::TEXT;
  int vectors = 0;
  int words = 0;
  bool operator!=(const MessageShape& o) const { return mode != o.mode || vectors != o.vectors || words != o.words; }
};

MessageShape ShapeOf(const config::ChannelSpec& ch) {
  const config::HybridSpec& sizes = WorkflowDefaults().trainer().hybrid();
  MessageShape m;
  m.mode = ch.mode();
  m.vectors = ch.has_latent_vectors() ? ch.latent_vectors() : sizes.latent_vectors();
  m.words = ch.mode() != config::HYBRID ? 0 : ch.has_text_words() ? ch.text_words() : sizes.text_words();
  return m;
}

// Latent channels trained by reinforcement learning (not trainer.hybrid).
bool ReinforcementLatent(const LoadedWorkflow& w, const config::ChannelSpec& ch) {
  return ch.mode() != config::TEXT && !w.proto.trainer().has_hybrid();
}

// The mode of the LATENT/HYBRID channel of a reinforcement-learning run from
// role `from` to role `to`; TEXT when none.
config::ChannelMode LatentMode(const LoadedWorkflow& w, const std::string& from, const std::string& to) {
  for (const auto& ch : w.proto.channel()) {
    if (ch.from() == from && ch.to() == to && ReinforcementLatent(w, ch)) return ch.mode();
  }
  return config::TEXT;
}

}  // namespace

void ValidateChannels(const LoadedWorkflow& w, const CompiledWorkflow& c) {
  std::set<std::string> names;
  if (c.rollout.pipeline) {
    for (const auto& n : c.rollout.pipeline->nodes) names.insert(n.name);
  }
  for (const auto& r : c.rollout.roles) names.insert(r.name);
  const config::HybridSpec& sizes = WorkflowDefaults().trainer().hybrid();
  std::map<int, MessageShape> sends;  // role -> what its first latent channel sends
  std::map<int, int> read_width;      // reader model -> width of the vectors it reads
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    for (const auto* end : {&ch.from(), &ch.to()}) {
      if (names.count(*end) == 0) {
        w.Fail({{"channel", i}, {end == &ch.from() ? "from" : "to"}},
               "channel endpoint '" + *end + "' is not a role" + (c.rollout.pipeline ? " or node" : ""));
      }
    }
    if (ch.mode() == config::TEXT) continue;
    const bool rl = ReinforcementLatent(w, ch);
    if (rl && c.rollout.game && c.rollout.game->MessagePhases().empty()) {
      w.Fail({{"channel", i}, {"mode"}}, "channel mode " + config::ChannelMode_Name(ch.mode()) +
                                             " needs a game whose seats send messages " +
                                             "(red_black's speak phase), a pipeline, or trainer.hybrid { }" +
                                             "; game '" + c.rollout.game->Name() + "' has no message phase");
    }
    if (c.rollout.pipeline && !rl)
      w.Fail({{"trainer"}, {"hybrid"}},
             "pipelines train latent channels by reinforcement learning: drop trainer.hybrid");
    if (c.rollout.pipeline && ch.has_text_words()) {
      w.Fail({{"channel", i}, {"text_words"}},
             "in a pipeline the text a reader sees is what its prompt template shows; text_words is for games");
    }
    for (const auto* end : {&ch.from(), &ch.to()}) {
      const int r = c.RoleIndex(*end);
      if (r < 0 || !c.rollout.roles[r].trained()) {
        w.Fail({{"channel", i}, {end == &ch.from() ? "from" : "to"}}, "a " + config::ChannelMode_Name(ch.mode()) +
                                                                          " channel joins roles that run on models; '" +
                                                                          *end + "' does not");
      }
    }
    // A reader's prompts carry vectors of one width (its own, or its latent_in adapter's).
    const int from = c.RoleIndex(ch.from());
    const int reader = c.rollout.roles[c.RoleIndex(ch.to())].model;
    const int width = static_cast<int>(c.models[c.rollout.roles[from].model].sizes().width);
    auto [read, fresh] = read_width.emplace(reader, width);
    if (!fresh && read->second != width) {
      w.Fail({{"channel", i}}, "model '" + c.models[reader].name + "' would read latent vectors of widths " +
                                   std::to_string(read->second) + " and " + std::to_string(width) +
                                   ": give the models that send to it one width");
    }
    if (!rl) {
      if (ch.has_latent_vectors() || ch.has_text_words()) {
        w.Fail({{"channel", i}, {ch.has_latent_vectors() ? "latent_vectors" : "text_words"}},
               "with trainer.hybrid the message sizes are trainer.hybrid.latent_vectors and text_words");
      }
      continue;
    }
    const MessageShape shape = ShapeOf(ch);
    if (shape.vectors < 1 || shape.vectors > 64) {
      w.Fail({{"channel", i}, {"latent_vectors"}},
             "latent_vectors must be 1..64 (default " + std::to_string(sizes.latent_vectors()) + ")");
    }
    if (ch.text_words() < 0 || (ch.mode() == config::LATENT && ch.text_words() > 0) ||
        (ch.mode() == config::HYBRID && shape.words < 1)) {
      w.Fail({{"channel", i}, {"text_words"}},
             "text_words is for HYBRID channels, at least 1 (default " + std::to_string(sizes.text_words()) + ")");
    }
    auto [sent, first] = sends.emplace(from, shape);
    if (!first && sent->second != shape) {
      w.Fail({{"channel", i}}, "role '" + ch.from() + "' already sends " + config::ChannelMode_Name(sent->second.mode) +
                                   " messages of " + std::to_string(sent->second.vectors) +
                                   " vectors on another channel: a message is made once, so every channel from a "
                                   "role has one mode and size");
    }
  }
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    auto sent = sends.find(c.RoleIndex(ch.from()));
    if (ch.mode() == config::TEXT && sent != sends.end()) {
      w.Fail({{"channel", i}, {"mode"}}, "role '" + ch.from() + "' sends " +
                                             config::ChannelMode_Name(sent->second.mode) +
                                             " messages on another channel: a message is made once, in one mode");
    }
  }
}

void CompileChannels(const LoadedWorkflow& w, CompiledWorkflow& c) {
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    if (ch.mode() == config::TEXT) continue;
    RoleInfo& from = c.rollout.roles[c.RoleIndex(ch.from())];
    ModelConfig& reader = c.models[c.rollout.roles[c.RoleIndex(ch.to())].model];
    c.models[from.model].latent = true;
    reader.latent = true;
    reader.latent_in_width = static_cast<int>(c.models[from.model].sizes().width);  // equal to its own width: no adapter
    if (!ReinforcementLatent(w, ch)) continue;
    const MessageShape shape = ShapeOf(ch);
    from.message_mode = shape.mode;
    from.latent_vectors = shape.vectors;
    from.text_words = shape.words;
    // The resolved workflow states the sizes that ran.
    c.proto.mutable_channel(i)->set_latent_vectors(shape.vectors);
    if (shape.mode == config::HYBRID) c.proto.mutable_channel(i)->set_text_words(shape.words);
  }
}

namespace {

// Fails at a character of a string field: `offset` bytes into its text.
[[noreturn]] void FailInString(const LoadedWorkflow& w, const std::vector<PathStep>& path, size_t offset,
                               const std::string& message) {
  const SourcePos pos = w.Locate(path);
  if (pos.line <= 0) w.Fail(path, message);
  // The field's line, from its name: the value starts after the first quote.
  size_t at = 0;
  for (int line = 1; line < pos.line && at != std::string::npos; ++line) {
    at = w.text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  const size_t quote = at == std::string::npos ? std::string::npos : w.text.find('"', at + pos.col - 1);
  const size_t eol = at == std::string::npos ? std::string::npos : w.text.find('\n', at);
  if (quote == std::string::npos || (eol != std::string::npos && quote > eol)) w.Fail(path, message);
  throw ConfigError(w.file, pos.line, static_cast<int>(quote - at) + 2 + static_cast<int>(offset), message);
}

// Whether `to` is reachable from `from` by one or more edges.
std::vector<std::vector<bool>> Reaches(const Digraph& g, size_t n) {
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (size_t s = 0; s < n; ++s) {
    std::vector<size_t> stack;
    for (auto [e, end] = boost::out_edges(s, g); e != end; ++e) stack.push_back(boost::target(*e, g));
    while (!stack.empty()) {
      const size_t v = stack.back();
      stack.pop_back();
      if (reach[s][v]) continue;
      reach[s][v] = true;
      for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) stack.push_back(boost::target(*e, g));
    }
  }
  return reach;
}

// A role node's template may show a sender's vectors ({node.latents}) only
// across a LATENT or HYBRID channel from the sender's role to its own; a
// LATENT channel carries no text, so the reader may not also read the
// sender's text.
void CheckLatentReads(const LoadedWorkflow& w, const CompiledPipeline& p, const PipelineNode& reader, int i,
                      const std::vector<PathStep>& path, const std::string& text) {
  const auto& refs = reader.prompt.refs();
  for (const NodeRef& r : refs) {
    if (r.key != kLatentsKey) continue;
    const PipelineNode& sender = p.nodes[r.node];
    const std::string& from = w.proto.pipeline().node(r.node).role();
    const std::string& to = w.proto.pipeline().node(i).role();
    const config::ChannelMode mode = LatentMode(w, from, to);
    const size_t at = text.find(sender.name + "." + kLatentsKey);
    if (mode == config::TEXT) {
      FailInString(w, path, at, "'" + reader.name + "' reads " + sender.name + ".latents, but no LATENT or HYBRID channel joins role '" +
                                    from + "' to role '" + to + "'");
    }
    if (mode != config::LATENT) continue;
    for (const NodeRef& other : refs) {
      if (other.node == r.node && other.key != kLatentsKey) {
        FailInString(w, path, text.find(sender.name), "'" + reader.name + "' reads the text of '" + sender.name +
                                                          "', but the channel from role '" + from +
                                                          "' is LATENT (vectors only): make it HYBRID to send both");
      }
    }
  }
}

// The pipeline graph compiled and checked in steps, each reporting at the
// field it reads: node names, then each node (a role node's role and parser,
// a tool node's tool and params), the edges, what prompts, tool inputs and
// conditions read (known nodes and keys, in an order the graph allows), that
// latent channels reach a prompt, the start nodes, reachability, cycles and
// their bound, and the answer and oracle nodes.
class PipelineGraphCheck {
 public:
  PipelineGraphCheck(const LoadedWorkflow& w, CompiledWorkflow& c)
      : w_(w), c_(c), spec_(c.proto.pipeline()), p_(*c.rollout.pipeline), keys_(spec_.node_size()) {}

  void Run() {
    Names();
    std::set<int> used_roles;
    for (int i = 0; i < spec_.node_size(); ++i) Node(i, &used_roles);
    for (size_t r = 0; r < c_.rollout.roles.size(); ++r) {
      if (used_roles.count(static_cast<int>(r)) == 0) {
        w_.Fail({{"role", static_cast<int>(r)}, {"name"}},
                "role '" + c_.rollout.roles[r].name + "' answers at no pipeline node");
      }
    }
    Edges();
    reach_ = Reaches(g_, p_.nodes.size());
    scope_.node = [&](const std::string& name) {
      auto it = index_.find(name);
      return it == index_.end() ? -1 : it->second;
    };
    scope_.keys = [&](int node) { return keys_[node]; };
    for (int i = 0; i < spec_.node_size(); ++i) NodeReads(i);
    LatentChannelsShown();
    Conditions();
    StartsAndReach();
    Cycles();
    AnswerAndOracles();
  }

 private:
  std::vector<PathStep> At(int node, const char* field) const { return {{"pipeline"}, {"node", node}, {field}}; }

  void Names() {
    for (int i = 0; i < spec_.node_size(); ++i) {
      const config::NodeSpec& n = spec_.node(i);
      if (n.name().empty()) w_.Fail({{"pipeline"}, {"node", i}}, "node needs a name");
      if (n.name() == "question") {
        w_.Fail(At(i, "name"), "'question' names the query's text in prompts and inputs; pick another node name");
      }
      if (!index_.emplace(n.name(), i).second) w_.Fail(At(i, "name"), "node '" + n.name() + "' is defined twice");
    }
    if (spec_.node_size() == 0) w_.Fail({{"pipeline"}}, "pipeline has no nodes");
  }

  // A node: its kind's fields only, its role and parser or its tool; its output keys.
  void Node(int i, std::set<int>* used_roles) {
    const config::NodeSpec& n = spec_.node(i);
    PipelineNode node;
    node.name = n.name();
    node.kind = n.kind();
    node.max_tokens = n.max_tokens();
    if (node.max_tokens <= 0) w_.Fail(At(i, "max_tokens"), "max_tokens must be positive");
    std::unique_ptr<PipelineTool> tool;
    if (n.kind() != config::ROLE_NODE) {
      const std::pair<const char*, bool> role_only[] = {
          {"parser", n.has_parser()}, {"prompt", !n.prompt().empty()}, {"output_key", !n.output_key().empty()}};
      for (const auto& [field, set] : role_only) {
        if (set) {
          w_.Fail(At(i, field), std::string(field) + " belongs to role nodes; '" + n.name() + "' is a " +
                                    (n.kind() == config::TOOL_NODE ? "tool" : "end") + " node");
        }
      }
    }
    if (n.kind() != config::TOOL_NODE) {
      if (!n.input().empty())
        w_.Fail(At(i, "input"), "input belongs to tool nodes; a role node's prompt names what it reads");
      if (n.param_size() > 0) w_.Fail(At(i, "param"), "params belong to tool nodes");
    }
    if (n.kind() == config::ROLE_NODE) {
      RoleNode(i, &node);
      used_roles->insert(node.role);
    } else if (n.kind() == config::TOOL_NODE) {
      tool = ToolNode(i, &node);
    }
    for (int j = 0; j < n.inputs_size(); ++j) {
      auto it = index_.find(n.inputs(j));
      if (it == index_.end()) {
        w_.Fail({{"pipeline"}, {"node", i}, {"inputs", j}},
                "node '" + n.name() + "' reads unknown node '" + n.inputs(j) + "'");
      }
      node.inputs.push_back(it->second);
    }
    p_.nodes.push_back(std::move(node));
    p_.tools.push_back(std::move(tool));
  }

  void RoleNode(int i, PipelineNode* node) {
    const config::NodeSpec& n = spec_.node(i);
    node->role = c_.RoleIndex(n.role());
    if (node->role < 0) w_.Fail(At(i, "role"), "node '" + n.name() + "' names undefined role '" + n.role() + "'");
    if (!c_.rollout.roles[node->role].trained())
      w_.Fail(At(i, "role"), "node '" + n.name() + "': pipeline roles must map to a model");
    const config::ParserSpec& ps = n.has_parser() ? n.parser() : WorkflowDefaults().pipeline().node(0).parser();
    try {
      node->parser = std::make_shared<OutputParser>(ps, n.output_key());
    } catch (const Error& e) {
      w_.Fail(n.has_parser() ? At(i, "parser") : At(i, "output_key"), "node '" + n.name() + "': " + e.what());
    }
    keys_[i] = node->parser->Keys();
    keys_[i].push_back(kLatentsKey);  // a sender's vectors; templates may read them across a latent channel only
  }

  std::unique_ptr<PipelineTool> ToolNode(int i, PipelineNode* node) {
    const config::NodeSpec& n = spec_.node(i);
    const std::vector<ParamSpec>* specs = PipelineToolParamRegistry::Get().Find(n.tool());
    if (specs == nullptr) {
      w_.Fail(At(i, "tool"), "node '" + n.name() + "': unknown tool '" + n.tool() +
                                 "' (registered: " + JoinNames(PipelineToolFactory::Get().Names()) + ")");
    }
    node->tool = n.tool();
    const Params params = ResolveParams(w_, *specs, n.param(), {{"pipeline"}, {"node", i}});
    std::unique_ptr<PipelineTool> tool;
    try {
      tool = PipelineToolFactory::Get().Create(n.tool(), params);
    } catch (const Error& e) {
      w_.Fail(At(i, "tool"), "node '" + n.name() + "': tool '" + n.tool() + "': " + e.what());
    }
    node->retries = n.retries();
    node->fail_open = n.fail_open();
    if (node->retries < 0) w_.Fail(At(i, "retries"), "retries must be 0 or more");
    keys_[i] = tool->Keys();
    keys_[i].push_back("raw");
    return tool;
  }

  // Edges (their conditions are read once the graph is known).
  void Edges() {
    g_ = Digraph(p_.nodes.size());
    for (int i = 0; i < spec_.edge_size(); ++i) {
      const config::EdgeSpec& e = spec_.edge(i);
      PipelineEdge edge;
      for (const auto* end : {&e.from(), &e.to()}) {
        if (index_.count(*end) == 0) {
          w_.Fail({{"pipeline"}, {"edge", i}, {end == &e.from() ? "from" : "to"}},
                  "edge endpoint '" + *end + "' is not a node");
        }
      }
      edge.from = index_[e.from()];
      edge.to = index_[e.to()];
      if (p_.nodes[edge.from].kind == config::END_NODE) {
        w_.Fail({{"pipeline"}, {"edge", i}, {"from"}}, "edge leaves end node '" + e.from() + "'");
      }
      p_.edges.push_back(std::move(edge));
      boost::add_edge(p_.edges.back().from, p_.edges.back().to, g_);
    }
  }

  // A reference to `ref` read when `reader` runs (or when an edge leaves it):
  // `ref` must be able to run before, i.e. reach `reader`.
  void CheckOrder(const std::vector<NodeRef>& refs, int reader, const std::vector<PathStep>& path,
                  const std::string& text) const {
    for (const NodeRef& r : refs) {
      const bool before = r.node == reader ? reach_[reader][reader] : reach_[r.node][reader];
      if (!before && !(r.node == reader && path.back().field == std::string("when"))) {
        const std::string name = p_.nodes[r.node].name;
        FailInString(w_, path, text.find(name),
                     "'" + p_.nodes[reader].name + "' reads '" + name +
                         "', which cannot run before it (no path from '" + name + "' to '" + p_.nodes[reader].name +
                         "')");
      }
    }
  }

  // What a node reads: its prompt template, its tool input, its inputs.
  void NodeReads(int i) {
    const config::NodeSpec& n = spec_.node(i);
    PipelineNode& node = p_.nodes[i];
    const std::vector<PathStep> prompt_at = At(i, "prompt"), input_at = At(i, "input");
    try {
      if (!n.prompt().empty()) node.prompt = PromptTemplate(n.prompt(), scope_);
    } catch (const PipelineExprError& e) {
      FailInString(w_, prompt_at, e.offset(), "prompt of '" + n.name() + "': " + e.what());
    }
    CheckOrder(node.prompt.refs(), i, prompt_at, n.prompt());
    CheckLatentReads(w_, p_, node, i, prompt_at, n.prompt());
    if (n.input() == "question") {
      node.input_question = true;
    } else if (!n.input().empty()) {
      try {
        node.input = ParseRef(n.input(), scope_);
      } catch (const PipelineExprError& e) {
        FailInString(w_, input_at, e.offset(), "input of '" + n.name() + "': " + e.what());
      }
      CheckOrder({*node.input}, i, input_at, n.input());
      if (node.input->key == kLatentsKey) {
        FailInString(w_, input_at, n.input().find(kLatentsKey),
                     "a tool reads text items; latent vectors are read by role nodes");
      }
    }
    for (int in : node.inputs) CheckOrder({NodeRef{in}}, i, At(i, "inputs"), p_.nodes[in].name);
  }

  // A latent channel's vectors must reach some prompt: a node of the reading
  // role shows {node.latents} of a node of the sending role.
  void LatentChannelsShown() const {
    for (int i = 0; i < w_.proto.channel_size(); ++i) {
      const config::ChannelSpec& ch = w_.proto.channel(i);
      if (!ReinforcementLatent(w_, ch)) continue;
      bool shown = false;
      for (int r = 0; r < spec_.node_size() && !shown; ++r) {
        if (spec_.node(r).role() != ch.to()) continue;
        for (const NodeRef& ref : p_.nodes[r].prompt.refs()) {
          shown = shown || (ref.key == kLatentsKey && spec_.node(ref.node).role() == ch.from());
        }
      }
      if (!shown) {
        w_.Fail({{"channel", i}, {"mode"}}, "channel from '" + ch.from() + "' to '" + ch.to() + "' is " +
                                                config::ChannelMode_Name(ch.mode()) + ", but no prompt of role '" +
                                                ch.to() + "' shows its vectors: write {<" + ch.from() +
                                                " node>.latents} in the reader's prompt template");
      }
    }
  }

  void Conditions() {
    for (int i = 0; i < spec_.edge_size(); ++i) {
      const std::string& text = spec_.edge(i).when();
      const std::vector<PathStep> when_at{{"pipeline"}, {"edge", i}, {"when"}};
      try {
        auto cond = std::make_shared<Condition>(text, scope_);
        if (!cond->empty()) p_.edges[i].when = cond;
      } catch (const PipelineExprError& e) {
        FailInString(w_, when_at, e.offset(), "condition: " + std::string(e.what()));
      }
      // An edge's condition is read when its source has run: it reads that node or one before it.
      if (p_.edges[i].when) CheckOrder(p_.edges[i].when->refs(), p_.edges[i].from, when_at, text);
    }
  }

  // The start nodes; every node reachable from them, and some end node.
  void StartsAndReach() {
    if (spec_.start_size() == 0) w_.Fail({{"pipeline"}}, "pipeline has no start node");
    for (int i = 0; i < spec_.start_size(); ++i) {
      auto it = index_.find(spec_.start(i));
      if (it == index_.end())
        w_.Fail({{"pipeline"}, {"start", i}}, "start node '" + spec_.start(i) + "' is not a node");
      p_.start.push_back(it->second);
    }
    std::vector<boost::default_color_type> color(p_.nodes.size(), boost::white_color);
    auto color_map = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g_));
    for (int s : p_.start) {
      if (color[s] == boost::white_color)
        boost::breadth_first_visit(g_, boost::vertex(s, g_), boost::color_map(color_map));
    }
    bool end_reachable = false;
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      if (color[i] == boost::white_color) {
        w_.Fail(At(static_cast<int>(i), "name"), "node '" + p_.nodes[i].name + "' is unreachable from the start nodes");
      }
      end_reachable = end_reachable || p_.nodes[i].kind == config::END_NODE;
    }
    if (!end_reachable) w_.Fail({{"pipeline"}}, "pipeline has no end node");
  }

  // Cycles (a strong component of several nodes, or a self-loop) need max_steps.
  void Cycles() {
    std::vector<int> component(p_.nodes.size());
    const int count = boost::strong_components(
        g_, boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, g_)));
    p_.has_cycle = count < static_cast<int>(p_.nodes.size());
    for (const auto& e : p_.edges) p_.has_cycle = p_.has_cycle || e.from == e.to;
    const bool bounded = w_.proto.pipeline().has_max_steps();
    if (p_.has_cycle && !bounded) w_.Fail({{"pipeline"}}, "pipeline graph has a cycle but no max_steps bound");
    if (bounded && spec_.max_steps() <= 0) w_.Fail({{"pipeline"}, {"max_steps"}}, "max_steps must be positive");
    // Without a cycle every node runs at most once: the default bound is the node count.
    p_.max_steps = bounded ? spec_.max_steps() : static_cast<int>(p_.nodes.size());
    c_.proto.mutable_pipeline()->set_max_steps(p_.max_steps);
  }

  void AnswerAndOracles() {
    auto it = index_.find(spec_.answer());
    if (it == index_.end() || p_.nodes[it->second].kind != config::ROLE_NODE) {
      w_.Fail({{"pipeline"}, {"answer"}}, "answer must name a role node, got '" + spec_.answer() + "'");
    }
    p_.answer = it->second;
    for (int i = 0; i < spec_.oracle_size(); ++i) {
      const auto o = index_.find(spec_.oracle(i));
      if (o == index_.end() || p_.nodes[o->second].kind != config::ROLE_NODE) {
        w_.Fail({{"pipeline"}, {"oracle", i}}, "oracle must name role nodes, got '" + spec_.oracle(i) + "'");
      }
      if (o->second == p_.answer) {
        w_.Fail({{"pipeline"}, {"oracle", i}}, "the answer node '" + spec_.oracle(i) +
                                                   "' cannot be an oracle node: it would answer with the gold answer");
      }
      p_.nodes[o->second].oracle = true;
    }
  }

  const LoadedWorkflow& w_;
  CompiledWorkflow& c_;
  const config::PipelineSpec& spec_;  // with its defaults
  CompiledPipeline& p_;
  std::map<std::string, int> index_;            // node name -> index
  std::vector<std::vector<std::string>> keys_;  // per node: the output keys others may read
  Digraph g_;
  std::vector<std::vector<bool>> reach_;  // reach_[a][b]: b runs after a, by one or more edges
  RefScope scope_;
};

}  // namespace

void ValidatePipelineGraph(const LoadedWorkflow& w, CompiledWorkflow& c) { PipelineGraphCheck(w, c).Run(); }

}  // namespace troupe
