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

}  // namespace

void ValidateChannels(const LoadedWorkflow& w, const CompiledWorkflow& c) {
  std::set<std::string> names;
  if (c.pipeline) {
    for (const auto& n : c.pipeline->nodes) names.insert(n.name);
  }
  for (const auto& r : c.roles) names.insert(r.name);
  const config::HybridSpec& sizes = WorkflowDefaults().trainer().hybrid();
  std::map<int, MessageShape> sends;  // role -> what its first latent channel sends
  std::map<int, int> read_width;      // reader model -> width of the vectors it reads
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    for (const auto* end : {&ch.from(), &ch.to()}) {
      if (names.count(*end) == 0) {
        w.Fail({{"channel", i}, {end == &ch.from() ? "from" : "to"}},
               "channel endpoint '" + *end + "' is not a role" + (c.pipeline ? " or node" : ""));
      }
    }
    if (ch.mode() == config::TEXT) continue;
    const bool rl = ReinforcementLatent(w, ch);
    if (rl && (!c.game || c.game->MessagePhases().empty())) {
      w.Fail({{"channel", i}, {"mode"}}, "channel mode " + config::ChannelMode_Name(ch.mode()) +
                                             " needs a game whose seats send messages " +
                                             "(red_black's speak phase) or trainer.hybrid { }" +
                                             (c.game ? "; game '" + c.game->Name() + "' has no message phase" : ""));
    }
    for (const auto* end : {&ch.from(), &ch.to()}) {
      const int r = c.RoleIndex(*end);
      if (r < 0 || !c.roles[r].trained()) {
        w.Fail({{"channel", i}, {end == &ch.from() ? "from" : "to"}}, "a " + config::ChannelMode_Name(ch.mode()) +
                                                                          " channel joins roles that run on models; '" +
                                                                          *end + "' does not");
      }
    }
    // A reader's prompts carry vectors of one width (its own, or its latent_in adapter's).
    const int from = c.RoleIndex(ch.from());
    const int reader = c.roles[c.RoleIndex(ch.to())].model;
    const int width = c.models[c.roles[from].model].d_model;
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
    RoleInfo& from = c.roles[c.RoleIndex(ch.from())];
    ModelConfig& reader = c.models[c.roles[c.RoleIndex(ch.to())].model];
    c.models[from.model].latent = true;
    reader.latent = true;
    reader.latent_in_width = c.models[from.model].d_model;  // equal to its own width: no adapter
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

void ValidatePipelineGraph(const LoadedWorkflow& w, CompiledWorkflow& c) {
  const config::PipelineSpec& spec = w.proto.pipeline();
  CompiledPipeline& p = *c.pipeline;
  std::map<std::string, int> index;
  for (int i = 0; i < spec.node_size(); ++i) {
    const config::NodeSpec& n = spec.node(i);
    if (n.name().empty()) w.Fail({{"pipeline"}, {"node", i}}, "node needs a name");
    if (!index.emplace(n.name(), i).second) {
      w.Fail({{"pipeline"}, {"node", i}, {"name"}}, "node '" + n.name() + "' is defined twice");
    }
  }
  if (spec.node_size() == 0) w.Fail({{"pipeline"}}, "pipeline has no nodes");
  std::set<int> used_roles;
  for (int i = 0; i < spec.node_size(); ++i) {
    const config::NodeSpec& n = spec.node(i);
    PipelineNode node;
    node.name = n.name();
    node.kind = n.kind();
    node.max_tokens = c.proto.pipeline().node(i).max_tokens();  // with its default
    if (node.max_tokens <= 0) w.Fail({{"pipeline"}, {"node", i}, {"max_tokens"}}, "max_tokens must be positive");
    std::unique_ptr<PipelineTool> tool;
    if (n.kind() == config::ROLE_NODE) {
      node.role = c.RoleIndex(n.role());
      if (node.role < 0) {
        w.Fail({{"pipeline"}, {"node", i}, {"role"}},
               "node '" + n.name() + "' names undefined role '" + n.role() + "'");
      }
      if (!c.roles[node.role].trained()) {
        w.Fail({{"pipeline"}, {"node", i}, {"role"}}, "node '" + n.name() + "': pipeline roles must map to a model");
      }
      used_roles.insert(node.role);
    } else if (n.kind() == config::TOOL_NODE) {
      if (!PipelineToolFactory::Get().Has(n.tool())) {
        w.Fail({{"pipeline"}, {"node", i}, {"tool"}},
               "node '" + n.name() + "': unknown tool '" + n.tool() +
                   "' (registered: " + JoinNames(PipelineToolFactory::Get().Names()) + ")");
      }
      node.tool = n.tool();
      tool = PipelineToolFactory::Get().Create(n.tool());
    }
    for (int j = 0; j < n.inputs_size(); ++j) {
      auto it = index.find(n.inputs(j));
      if (it == index.end()) {
        w.Fail({{"pipeline"}, {"node", i}, {"inputs", j}},
               "node '" + n.name() + "' reads unknown node '" + n.inputs(j) + "'");
      }
      node.inputs.push_back(it->second);
    }
    p.nodes.push_back(node);
    p.tools.push_back(std::move(tool));
  }
  for (size_t r = 0; r < c.roles.size(); ++r) {
    if (used_roles.count(static_cast<int>(r)) == 0) {
      w.Fail({{"role", static_cast<int>(r)}, {"name"}}, "role '" + c.roles[r].name + "' answers at no pipeline node");
    }
  }

  Digraph g(p.nodes.size());
  for (int i = 0; i < spec.edge_size(); ++i) {
    const config::EdgeSpec& e = spec.edge(i);
    PipelineEdge edge;
    for (const auto* end : {&e.from(), &e.to()}) {
      if (index.count(*end) == 0) {
        w.Fail({{"pipeline"}, {"edge", i}, {end == &e.from() ? "from" : "to"}},
               "edge endpoint '" + *end + "' is not a node");
      }
    }
    edge.from = index[e.from()];
    edge.to = index[e.to()];
    if (p.nodes[edge.from].kind == config::END_NODE) {
      w.Fail({{"pipeline"}, {"edge", i}, {"from"}}, "edge leaves end node '" + e.from() + "'");
    }
    if (e.has_when()) {
      edge.conditional = true;
      auto it = index.find(e.when().node());
      if (it == index.end()) {
        w.Fail({{"pipeline"}, {"edge", i}, {"when"}, {"node"}},
               "condition reads unknown node '" + e.when().node() + "'");
      }
      edge.cond_node = it->second;
      edge.equals = e.when().equals();
      edge.negate = e.when().negate();
    }
    p.edges.push_back(edge);
    boost::add_edge(edge.from, edge.to, g);
  }
  if (spec.start_size() == 0) w.Fail({{"pipeline"}}, "pipeline has no start node");
  for (int i = 0; i < spec.start_size(); ++i) {
    auto it = index.find(spec.start(i));
    if (it == index.end()) w.Fail({{"pipeline"}, {"start", i}}, "start node '" + spec.start(i) + "' is not a node");
    p.start.push_back(it->second);
  }

  // Reachability from the start nodes.
  std::vector<boost::default_color_type> color(p.nodes.size(), boost::white_color);
  auto color_map = boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g));
  for (int s : p.start) {
    if (color[s] == boost::white_color) boost::breadth_first_visit(g, boost::vertex(s, g), boost::color_map(color_map));
  }
  bool end_reachable = false;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (color[i] == boost::white_color) {
      w.Fail({{"pipeline"}, {"node", static_cast<int>(i)}, {"name"}},
             "node '" + p.nodes[i].name + "' is unreachable from the start nodes");
    }
    end_reachable = end_reachable || p.nodes[i].kind == config::END_NODE;
  }
  if (!end_reachable) w.Fail({{"pipeline"}}, "pipeline has no end node");

  // Cycles (a strong component of several nodes, or a self-loop) need max_steps.
  std::vector<int> component(p.nodes.size());
  const int count = boost::strong_components(
      g, boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, g)));
  p.has_cycle = count < static_cast<int>(p.nodes.size());
  for (const auto& e : p.edges) p.has_cycle = p.has_cycle || e.from == e.to;
  if (p.has_cycle && !spec.has_max_steps()) {
    w.Fail({{"pipeline"}}, "pipeline graph has a cycle but no max_steps bound");
  }
  if (spec.has_max_steps() && spec.max_steps() <= 0)
    w.Fail({{"pipeline"}, {"max_steps"}}, "max_steps must be positive");
  // Without a cycle every node runs at most once: the default bound is the node count.
  p.max_steps = spec.has_max_steps() ? spec.max_steps() : static_cast<int>(p.nodes.size());
  c.proto.mutable_pipeline()->set_max_steps(p.max_steps);

  auto it = index.find(spec.answer());
  if (it == index.end() || p.nodes[it->second].kind != config::ROLE_NODE) {
    w.Fail({{"pipeline"}, {"answer"}}, "answer must name a role node, got '" + spec.answer() + "'");
  }
  p.answer = it->second;
}

}  // namespace troupe
