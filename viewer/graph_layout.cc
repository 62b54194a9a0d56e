// Building and laying out the workflow graph.
#include "viewer/graph_layout.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/fruchterman_reingold.hpp>
#include <boost/graph/random_layout.hpp>
#include <boost/graph/topology.hpp>
#include <boost/random/linear_congruential.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace troupe::view {

WorkflowGraph BuildWorkflowGraph(const session::RunStart& run, const config::Workflow& w) {
  WorkflowGraph g;
  std::map<std::string, int> role_node;
  std::map<std::string, int> model_users;
  for (const auto& r : w.role()) model_users[r.model()]++;
  for (int i = 0; i < w.role_size(); ++i) {
    const config::RoleSpec& r = w.role(i);
    GraphNode n;
    n.label = r.name();
    n.role = i;
    n.model = i < run.role_model_size() ? run.role_model(i) : -1;
    n.adapter = r.adapter() != config::ADAPTER_NONE;
    if (r.model().empty()) {
      n.detail = "scripted: " + r.scripted();
    } else {
      const int users = model_users[r.model()];
      n.detail =
          "model " + r.model() + (users > 1 ? (n.adapter ? " (shared trunk + adapter)" : " (shared)") : " (own)");
    }
    role_node[r.name()] = static_cast<int>(g.nodes.size());
    g.nodes.push_back(n);
  }
  if (w.has_game()) {
    GraphNode game;
    game.label = w.game().name();
    game.detail = "game";
    const int id = static_cast<int>(g.nodes.size());
    g.nodes.push_back(game);
    for (int i = 0; i < w.role_size(); ++i) g.edges.push_back({i, id, -1, false});
  }
  if (w.has_pipeline()) {
    std::map<std::string, int> node_id;
    for (const auto& n : w.pipeline().node()) {
      if (n.kind() == config::ROLE_NODE && role_node.count(n.role())) {
        node_id[n.name()] = role_node[n.role()];
        continue;
      }
      GraphNode t;
      t.label = n.name();
      t.detail = n.kind() == config::TOOL_NODE ? "tool " + n.tool() : "end";
      node_id[n.name()] = static_cast<int>(g.nodes.size());
      g.nodes.push_back(t);
    }
    for (const auto& e : w.pipeline().edge()) {
      if (node_id.count(e.from()) && node_id.count(e.to()))
        g.edges.push_back({node_id[e.from()], node_id[e.to()], -1, true});
    }
  }
  for (const auto& c : w.channel()) {
    if (role_node.count(c.from()) && role_node.count(c.to())) {
      g.edges.push_back({role_node[c.from()], role_node[c.to()], static_cast<int>(c.mode()), true});
    }
  }
  const size_t n = g.nodes.size();
  if (n == 0) return g;
  if (n <= 2) {
    for (size_t i = 0; i < n; ++i) {
      g.nodes[i].x = n == 1 ? 0.5f : 0.25f + 0.5f * i;
      g.nodes[i].y = 0.5f;
    }
    return g;
  }
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  using Topology = boost::rectangle_topology<boost::minstd_rand>;
  Graph graph(n);
  for (const auto& e : g.edges) {
    if (e.from != e.to) boost::add_edge(e.from, e.to, graph);
  }
  boost::minstd_rand gen(7);
  Topology topology(gen, -1.0, -1.0, 1.0, 1.0);
  std::vector<Topology::point_type> pos(n);
  auto position = boost::make_iterator_property_map(pos.begin(), boost::get(boost::vertex_index, graph));
  boost::random_graph_layout(graph, position, topology);
  boost::fruchterman_reingold_force_directed_layout(graph, position, topology);
  double xmin = 1e9, xmax = -1e9, ymin = 1e9, ymax = -1e9;
  for (const auto& p : pos) {
    xmin = std::min(xmin, p[0]);
    xmax = std::max(xmax, p[0]);
    ymin = std::min(ymin, p[1]);
    ymax = std::max(ymax, p[1]);
  }
  for (size_t i = 0; i < n; ++i) {
    g.nodes[i].x = static_cast<float>(xmax > xmin ? (pos[i][0] - xmin) / (xmax - xmin) : 0.5);
    g.nodes[i].y = static_cast<float>(ymax > ymin ? (pos[i][1] - ymin) / (ymax - ymin) : 0.5);
  }
  return g;
}

}  // namespace troupe::view
