// The pipeline episode view: the question, the answer with its F1 and EM, the
// workflow's graph with the nodes that ran (green) and the active frontier at
// the replay cursor (yellow), then each tick's calls: a role node's prompt and
// output, a tool's inputs (sub-queries) and what it returned (retrieved
// passages: title and matched text), and per-role credit of the episode.
#include <imgui.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "viewer/episode_renderers.h"

namespace troupe::view {

namespace {

const ImVec4 kActive(0.95f, 0.78f, 0.25f, 1.0f);
const ImVec4 kRan(0.40f, 0.80f, 0.45f, 1.0f);
const ImVec4 kIdle(0.50f, 0.50f, 0.50f, 1.0f);
const ImVec4 kBad(0.90f, 0.40f, 0.35f, 1.0f);

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "question: ...\nanswer: ..." (the pipeline rollout's final state) -> its two parts.
std::pair<std::string, std::string> QuestionAndAnswer(const std::string& final_state) {
  std::string q, a;
  for (const auto& line : Lines(final_state)) {
    if (line.rfind("question: ", 0) == 0) q = line.substr(10);
    if (line.rfind("answer: ", 0) == 0) a = line.substr(8);
  }
  return {q, a};
}

void Metric(const EpisodeRecord& ep, const char* key, const char* label) {
  auto it = ep.metrics.find(key);
  if (it == ep.metrics.end()) return;
  ImGui::SameLine();
  ImGui::Text("%s %.2f", label, it->second);
}

class PipelineRenderer : public EpisodeRenderer {
 public:
  void Draw(const SessionModel& m, const EpisodeRecord& ep, size_t shown) override {
    const config::PipelineSpec& spec = m.workflow().pipeline();
    const auto [question, answer] = QuestionAndAnswer(ep.final_state);
    ImGui::TextWrapped("Question: %s", question.empty() ? "(shown when the episode ends)" : question.c_str());
    ImGui::TextColored(kRan, "Answer: %s", ep.ended ? (answer.empty() ? "(none)" : answer.c_str()) : "...");
    Metric(ep, "score", "score");
    Metric(ep, "f1", "F1");
    Metric(ep, "em", "EM");
    Metric(ep, "recall_at_k", "recall");
    Metric(ep, "calls", "calls");

    // What ran up to the cursor, and the tick the cursor is at.
    std::set<std::string> ran, active;
    int tick = -1;
    for (size_t i = 0; i < shown; ++i) tick = std::max(tick, m.messages[ep.messages[i]].step);
    for (size_t i = 0; i < shown; ++i) {
      const MessageRow& r = m.messages[ep.messages[i]];
      (r.step == tick ? active : ran).insert(r.phase);
    }

    ImGui::BeginChild("pipeline_graph", ImVec2(250, 0), true);
    ImGui::TextDisabled("graph (tick %d)", tick);
    for (const auto& node : spec.node()) {
      const bool is_active = active.count(node.name()) > 0, did = ran.count(node.name()) > 0;
      const bool end_reached = node.kind() == config::END_NODE && ep.metrics.count("finished") && ep.metrics.at("finished") > 0 &&
                               shown == ep.messages.size() && ep.ended;
      const ImVec4 color = is_active ? kActive : did || end_reached ? kRan : kIdle;
      const char* kind = node.kind() == config::TOOL_NODE ? "tool" : node.kind() == config::END_NODE ? "end" : "role";
      ImGui::TextColored(color, "%s %s", is_active ? ">" : " ", node.name().c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("%s %s", kind,
                          node.kind() == config::TOOL_NODE ? node.tool().c_str() : node.role().c_str());
    }
    ImGui::Separator();
    for (const auto& edge : spec.edge()) {
      ImGui::TextDisabled("%s -> %s", edge.from().c_str(), edge.to().c_str());
      if (!edge.when().empty()) {
        ImGui::SameLine();
        ImGui::TextDisabled("[%s]", edge.when().c_str());
      }
    }
    // Per-role credit of the episode (the sum of each role's call rewards).
    bool header = false;
    for (const auto& [key, value] : ep.metrics) {
      if (key.rfind("credit/", 0) != 0) continue;
      if (!header) {
        ImGui::Separator();
        ImGui::TextDisabled("credit (episode reward by role)");
        header = true;
      }
      ImGui::Text("%-12s %+.3f", key.substr(7).c_str(), value);
    }
    ImGui::EndChild();
    ImGui::SameLine();

    ImGui::BeginChild("pipeline_calls", ImVec2(0, 0), true);
    int last_step = -1;
    for (size_t i = 0; i < shown; ++i) {
      const MessageRow& r = m.messages[ep.messages[i]];
      if (r.step != last_step) {
        ImGui::TextDisabled("tick %d", r.step);
        last_step = r.step;
      }
      const bool tool = r.channel == "TOOL";
      ImGui::PushID(static_cast<int>(i));
      std::string title = r.phase + (tool ? "  (tool)" : "  (" + m.RoleName(r.role) + ", turn " + std::to_string(r.turn) + ")");
      if (!r.valid) title += tool ? "  failed" : "  unparsed";
      ImGui::PushStyleColor(ImGuiCol_Text, r.valid ? (r.step == tick ? kActive : kRan) : kBad);
      const bool open = ImGui::CollapsingHeader(title.c_str(), i + 1 >= shown ? ImGuiTreeNodeFlags_DefaultOpen : 0);
      ImGui::PopStyleColor();
      if (open) {
        ImGui::Indent();
        if (tool) {
          ImGui::TextDisabled("inputs");
          for (const auto& q : Lines(r.prompt)) ImGui::BulletText("%s", q.c_str());
          ImGui::TextDisabled("retrieved");
          for (const auto& line : Lines(r.text)) {
            if (line.rfind("docs: ", 0) == 0) ImGui::BulletText("%s", line.substr(6).c_str());
            else if (line.find(": ") != std::string::npos && line.rfind("titles: ", 0) != 0 && line.rfind("ids: ", 0) != 0)
              ImGui::BulletText("%s", line.c_str());
          }
        } else {
          ImGui::TextDisabled("prompt");
          ImGui::TextWrapped("%s", r.prompt.size() > 1500 ? (r.prompt.substr(0, 1500) + " ...").c_str() : r.prompt.c_str());
          ImGui::TextDisabled("output");
          ImGui::TextWrapped("%s", r.text.c_str());
        }
        ImGui::Unindent();
      }
      ImGui::PopID();
    }
    ImGui::EndChild();
  }
};

TROUPE_REGISTER_EPISODE_RENDERER("pipeline", PipelineRenderer);

}  // namespace

}  // namespace troupe::view
