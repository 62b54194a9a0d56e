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

namespace troupe {

using Digraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

namespace {

// A LATENT/HYBRID channel of a reinforcement-learning run: the sender's message
// mode and sizes, and the reader's adapter when the widths differ.
void CompileLatentChannel(const LoadedWorkflow& w, int i, CompiledWorkflow& c) {
  const config::ChannelSpec& ch = w.proto.channel(i);
  RoleInfo& from = c.roles[c.RoleIndex(ch.from())];
  const int k = ch.latent_vectors() > 0 ? ch.latent_vectors() : kDefaultLatentVectors;
  const int words = ch.mode() != config::HYBRID ? 0 : ch.text_words() > 0 ? ch.text_words() : kDefaultTextWords;
  if (ch.latent_vectors() < 0 || k > 64) {
    w.Fail({{"channel", i}, {"latent_vectors"}}, "latent_vectors must be 1..64 (default " + std::to_string(kDefaultLatentVectors) + ")");
  }
  if (ch.text_words() < 0 || (ch.mode() == config::LATENT && ch.text_words() > 0)) {
    w.Fail({{"channel", i}, {"text_words"}}, "text_words is for HYBRID channels, at least 1 (default 1)");
  }
  if (from.message_mode != config::TEXT &&
      (from.message_mode != ch.mode() || from.latent_vectors != k || from.text_words != words)) {
    w.Fail({{"channel", i}}, "role '" + from.name + "' already sends " + config::ChannelMode_Name(from.message_mode) +
                                 " messages of " + std::to_string(from.latent_vectors) +
                                 " vectors on another channel: a message is made once, so every channel from a "
                                 "role has one mode and size");
  }
  from.message_mode = ch.mode();
  from.latent_vectors = k;
  from.text_words = words;
  // A reader's prompts carry vectors of one width (its own, or one adapter's).
  ModelConfig& reader = c.models[c.roles[c.RoleIndex(ch.to())].model];
  const int width = c.models[from.model].d_model;
  if (reader.latent_in_width != 0 && reader.latent_in_width != width) {
    w.Fail({{"channel", i}}, "model '" + reader.name + "' would read latent vectors of widths " +
                                 std::to_string(reader.latent_in_width) + " and " + std::to_string(width) +
                                 ": give the models that send to it one width");
  }
  reader.latent_in_width = width;  // equal to its own width: no adapter
}

}  // namespace

void ValidateChannels(const LoadedWorkflow& w, CompiledWorkflow& c) {
  std::map<std::string, int> names;
  if (c.pipeline) {
    for (size_t i = 0; i < c.pipeline->nodes.size(); ++i) names[c.pipeline->nodes[i].name] = static_cast<int>(i);
  }
  const size_t offset = c.pipeline ? c.pipeline->nodes.size() : 0;
  for (size_t i = 0; i < c.roles.size(); ++i) names[c.roles[i].name] = static_cast<int>(offset + i);
  Digraph g(offset + c.roles.size());
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    for (const auto* end : {&ch.from(), &ch.to()}) {
      if (names.count(*end) == 0) {
        w.Fail({{"channel", i}, {end == &ch.from() ? "from" : "to"}},
               "channel endpoint '" + *end + "' is not a role" + (c.pipeline ? " or node" : ""));
      }
    }
    if (ch.mode() != config::TEXT) {
      const bool rl = !w.proto.trainer().has_hybrid();
      if (rl && (!c.game || c.game->MessagePhases().empty())) {
        w.Fail({{"channel", i}, {"mode"}},
               "channel mode " + config::ChannelMode_Name(ch.mode()) + " needs a game whose seats send messages " +
                   "(red_black's speak phase) or trainer.hybrid { }" +
                   (c.game ? "; game '" + c.game->Name() + "' has no message phase" : ""));
      }
      for (const auto* end : {&ch.from(), &ch.to()}) {
        const int r = c.RoleIndex(*end);
        if (r < 0 || !c.roles[r].trained()) {
          w.Fail({{"channel", i}, {end == &ch.from() ? "from" : "to"}},
                 "a " + config::ChannelMode_Name(ch.mode()) + " channel joins roles that run on models; '" + *end +
                     "' does not");
        }
        c.models[c.roles[r].model].latent = true;
      }
      if (rl) {
        CompileLatentChannel(w, i, c);
      } else if (ch.latent_vectors() != 0 || ch.text_words() != 0) {
        w.Fail({{"channel", i}, {ch.latent_vectors() != 0 ? "latent_vectors" : "text_words"}},
               "with trainer.hybrid the message sizes are trainer.hybrid.latent_vectors and text_words");
      }
    }
    boost::add_edge(names[ch.from()], names[ch.to()], g);
  }
  for (int i = 0; i < w.proto.channel_size(); ++i) {
    const config::ChannelSpec& ch = w.proto.channel(i);
    const int r = c.RoleIndex(ch.from());
    if (ch.mode() == config::TEXT && r >= 0 && c.roles[r].message_mode != config::TEXT) {
      w.Fail({{"channel", i}, {"mode"}}, "role '" + ch.from() + "' sends " +
                                             config::ChannelMode_Name(c.roles[r].message_mode) +
                                             " messages on another channel: a message is made once, in one mode");
    }
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
    node.max_tokens = n.max_tokens() > 0 ? n.max_tokens() : 4;
    std::unique_ptr<PipelineTool> tool;
    if (n.kind() == config::ROLE_NODE) {
      node.role = c.RoleIndex(n.role());
      if (node.role < 0) {
        w.Fail({{"pipeline"}, {"node", i}, {"role"}}, "node '" + n.name() + "' names undefined role '" + n.role() + "'");
      }
      if (!c.roles[node.role].trained()) {
        w.Fail({{"pipeline"}, {"node", i}, {"role"}}, "node '" + n.name() + "': pipeline roles must map to a model");
      }
      used_roles.insert(node.role);
    } else if (n.kind() == config::TOOL_NODE) {
      if (!PipelineToolFactory::Get().Has(n.tool())) {
        w.Fail({{"pipeline"}, {"node", i}, {"tool"}}, "node '" + n.name() + "': unknown tool '" + n.tool() +
                                                         "' (registered: " + JoinNames(PipelineToolFactory::Get().Names()) + ")");
      }
      node.tool = n.tool();
      tool = PipelineToolFactory::Get().Create(n.tool());
    }
    for (int j = 0; j < n.inputs_size(); ++j) {
      auto it = index.find(n.inputs(j));
      if (it == index.end()) {
        w.Fail({{"pipeline"}, {"node", i}, {"inputs", j}}, "node '" + n.name() + "' reads unknown node '" + n.inputs(j) + "'");
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
        w.Fail({{"pipeline"}, {"edge", i}, {end == &e.from() ? "from" : "to"}}, "edge endpoint '" + *end + "' is not a node");
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
        w.Fail({{"pipeline"}, {"edge", i}, {"when"}, {"node"}}, "condition reads unknown node '" + e.when().node() + "'");
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
  const int count = boost::strong_components(g, boost::make_iterator_property_map(component.begin(),
                                                                                  boost::get(boost::vertex_index, g)));
  p.has_cycle = count < static_cast<int>(p.nodes.size());
  for (const auto& e : p.edges) p.has_cycle = p.has_cycle || e.from == e.to;
  if (p.has_cycle && spec.max_steps() <= 0) {
    w.Fail({{"pipeline"}}, "pipeline graph has a cycle but no max_steps bound");
  }
  p.max_steps = spec.max_steps() > 0 ? spec.max_steps() : static_cast<int>(p.nodes.size());

  auto it = index.find(spec.answer());
  if (it == index.end() || p.nodes[it->second].kind != config::ROLE_NODE) {
    w.Fail({{"pipeline"}, {"answer"}}, "answer must name a role node, got '" + spec.answer() + "'");
  }
  p.answer = it->second;
}

}  // namespace troupe
