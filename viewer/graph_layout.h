// The workflow graph the viewer draws: roles, a game node or pipeline tool
// nodes, and channels, laid out with Boost.Graph's Fruchterman-Reingold
// force-directed layout (from a seeded random start, so the picture is stable).
#pragma once

#include <string>
#include <vector>

#include "comms/proto/session.pb.h"
#include "comms/proto/workflow.pb.h"

namespace troupe::view {

struct GraphNode {
  std::string label;
  std::string detail;    // model and sharing, or "scripted: tit_for_tat"
  int role = -1;         // role index, or -1 for game/tool nodes
  int model = -1;        // physical model index (colour), -1 scripted or tool
  bool adapter = false;  // partial sharing: a per-role adapter on a shared trunk
  float x = 0, y = 0;    // in [0, 1]
};

struct GraphEdge {
  int from = 0, to = 0;
  int mode = -1;  // config::ChannelMode for channels, -1 for plays/flow edges
  bool directed = true;
};

struct WorkflowGraph {
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
};

WorkflowGraph BuildWorkflowGraph(const session::RunStart& run, const config::Workflow& workflow);

}  // namespace troupe::view
