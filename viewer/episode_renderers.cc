// Episode renderers: Red-Black (rounds table, deliberation, votes),
// split_facts (facts and hybrid messages), and the generic message list.
#include "viewer/episode_renderers.h"

#include <imgui.h>

#include <map>
#include <sstream>

#include "core/base/words.h"

namespace troupe::view {

void DrawLatentSummary(const MessageRow& row) {
  if (row.latent_vectors == 0) return;
  ImGui::PlotLines("##norms", row.latent_norms.data(), static_cast<int>(row.latent_norms.size()), 0, nullptr, 0.0f,
                   FLT_MAX, ImVec2(60, 16));
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::Text("%d latent vectors of width %d (norms)", row.latent_vectors, row.latent_width);
    const int cols = row.latent_vectors > 0 ? static_cast<int>(row.latent_preview.size()) / row.latent_vectors : 0;
    // Heatmap of the first values of each vector.
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    for (int k = 0; k < row.latent_vectors; ++k) {
      for (int j = 0; j < cols; ++j) {
        const float v = std::max(-1.0f, std::min(1.0f, row.latent_preview[k * cols + j] / 2.0f));
        const ImU32 c = v >= 0 ? IM_COL32(40 + static_cast<int>(200 * v), 60, 60, 255)
                               : IM_COL32(60, 60, 40 + static_cast<int>(-200 * v), 255);
        dl->AddRectFilled(ImVec2(p.x + j * 10, p.y + k * 10), ImVec2(p.x + j * 10 + 9, p.y + k * 10 + 9), c);
      }
    }
    ImGui::Dummy(ImVec2(cols * 10.0f, row.latent_vectors * 10.0f));
    ImGui::EndTooltip();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%dx%d", row.latent_vectors, row.latent_width);
}

void DrawMessageList(const SessionModel& m, const EpisodeRecord& ep, size_t shown) {
  const size_t n = std::min(shown, ep.messages.size());
  if (ImGui::BeginTable("episode_messages", 5,
                        ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableSetupColumn("turn", ImGuiTableColumnFlags_WidthFixed, 36);
    ImGui::TableSetupColumn("who", ImGuiTableColumnFlags_WidthFixed, 90);
    ImGui::TableSetupColumn("phase", ImGuiTableColumnFlags_WidthFixed, 60);
    ImGui::TableSetupColumn("message", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("latent", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < n; ++i) {
      const MessageRow& r = m.messages[ep.messages[i]];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", r.turn + 1);
      ImGui::TableNextColumn();
      ImGui::Text("%s (%s)", m.SeatName(r.seat).c_str(), m.RoleName(r.role).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r.phase.c_str());
      ImGui::TableNextColumn();
      if (r.valid) ImGui::TextWrapped("%s", r.text.empty() ? "(no text)" : r.text.c_str());
      else ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "%s  [unparseable]", r.text.c_str());
      ImGui::TableNextColumn();
      ImGui::PushID(static_cast<int>(i));
      DrawLatentSummary(r);
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
}

namespace {

class GenericRenderer : public EpisodeRenderer {
 public:
  void Draw(const SessionModel& m, const EpisodeRecord& ep, size_t shown) override {
    if (!ep.final_state.empty() && shown >= ep.messages.size()) ImGui::TextUnformatted(ep.final_state.c_str());
    DrawMessageList(m, ep, shown);
  }
};

struct RoundRow {
  int round = 0, mult = 1;
  std::string a, b;
  int a_pts = 0, b_pts = 0;
};

// Rows of Red-Black's text rendering: "round mult A B A pts B pts".
std::vector<RoundRow> ParseRounds(const std::string& text) {
  std::vector<RoundRow> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    RoundRow r;
    std::string mult;
    if (!(l >> r.round >> mult >> r.a >> r.b >> r.a_pts >> r.b_pts)) continue;
    if (mult.size() > 1 && mult[0] == 'x') r.mult = std::atoi(mult.c_str() + 1);
    rows.push_back(r);
  }
  return rows;
}

// The scenario's defecting label, from the state's "scenario NAME: cooperate X, defect Y" line ("red" without one).
std::string DefectLabel(const std::string& state) {
  const size_t at = state.find(", defect ");
  if (at == std::string::npos) return "red";
  const size_t from = at + 9;
  return state.substr(from, state.find_first_of(" \n", from) - from);
}

// Votes and recommendations: the defecting option in red, the cooperative one light.
ImVec4 ChoiceColor(const std::string& c, const std::string& defect) {
  return SameWordAnyCase(c, defect) ? ImVec4(0.95f, 0.35f, 0.35f, 1) : ImVec4(0.75f, 0.75f, 0.80f, 1);
}

// A seat's tint by the model that played it (scripted seats grey), so a seed
// among its population stands out.
ImU32 ModelTint(int model) {
  static const ImU32 palette[] = {IM_COL32(40, 110, 120, 255), IM_COL32(130, 95, 30, 255),
                                  IM_COL32(95, 60, 130, 255), IM_COL32(50, 110, 55, 255)};
  return model < 0 ? IM_COL32(60, 60, 64, 255) : palette[model % 4];
}

// The legend of the seat tints: each model of the workflow, and scripted seats.
void DrawModelLegend(const SessionModel& m) {
  ImGui::TextDisabled("seats by model:");
  for (int i = -1; i < m.workflow().model_size(); ++i) {
    ImGui::SameLine();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + h, p.y + h), ModelTint(i));
    ImGui::Dummy(ImVec2(h, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(i < 0 ? "scripted" : m.workflow().model(i).name().c_str());
  }
}

class RedBlackRenderer : public EpisodeRenderer {
 public:
  void Draw(const SessionModel& m, const EpisodeRecord& ep, size_t shown) override {
    const size_t n = std::min(shown, ep.messages.size());
    const int turn = n > 0 ? m.messages[ep.messages[n - 1]].turn : 0;
    // The state as of the shown message: the last snapshot taken in or before its round.
    const session::StateSnapshot* snap = nullptr;
    for (const auto& s : ep.snapshots) {
      if (n == ep.messages.size() || s.turn() <= turn) snap = &s;
    }
    ImGui::BeginGroup();
    ImGui::Text("Rounds");
    std::vector<RoundRow> rows = snap ? ParseRounds(snap->text()) : std::vector<RoundRow>{};
    const std::string defect = DefectLabel(snap ? snap->text() : ep.final_state);
    auto colour = [&](const std::string& choice) { return ChoiceColor(choice, defect); };
    if (ImGui::BeginTable("rounds", 7,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
      for (const char* h : {"round", "mult", "team A", "team B", "A pts", "B pts", "A : B"}) ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      int ta = 0, tb = 0;
      for (const auto& r : rows) {
        ta += r.a_pts;
        tb += r.b_pts;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%d", r.round);
        ImGui::TableNextColumn();
        ImGui::Text("x%d", r.mult);
        ImGui::TableNextColumn();
        ImGui::TextColored(colour(r.a), "%s", r.a.c_str());
        ImGui::TableNextColumn();
        ImGui::TextColored(colour(r.b), "%s", r.b.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%+d", r.a_pts);
        ImGui::TableNextColumn();
        ImGui::Text("%+d", r.b_pts);
        ImGui::TableNextColumn();
        ImGui::Text("%d : %d", ta, tb);
      }
      ImGui::EndTable();
    }
    if (ep.ended && n == ep.messages.size()) {
      for (const char* key : {"team_a_score", "team_b_score", "team_a_cooperation"}) {
        auto it = ep.metrics.find(key);
        if (it != ep.metrics.end()) ImGui::Text("%s %.2f", key, it->second);
      }
    }
    ImGui::EndGroup();
    ImGui::SameLine(0, 24);
    ImGui::BeginGroup();
    ImGui::Text("Round %d deliberation", turn + 1);
    // Per seat: willingness, recommendation + reasoning, vote; and who spoke in which order.
    struct SeatRow {
      std::string will, speak, vote;
      int vectors = 0;  // a latent message: its readers got these vectors (and, HYBRID, the text)
      bool valid = true;
      const MessageRow* vote_row = nullptr;
    };
    std::map<int, SeatRow> seats;
    std::vector<int> order;
    for (size_t i = 0; i < n; ++i) {
      const MessageRow& r = m.messages[ep.messages[i]];
      if (r.turn != turn) continue;
      SeatRow& s = seats[r.seat];
      if (r.phase == "will") s.will = r.text;
      if (r.phase == "speak") {
        s.speak = r.text;
        s.vectors = r.latent_vectors;
        order.push_back(r.seat);
      }
      if (r.phase == "vote") {
        s.vote = r.text;
        s.vote_row = &r;
      }
      s.valid = s.valid && r.valid;
    }
    // Who recommended what this round, for a persuaded vote's tooltip.
    auto recommenders = [&](const std::string& choice) {
      std::string who;
      for (int seat : order) {
        if (!SameWordAnyCase(FirstWord(seats[seat].speak), choice)) continue;
        who += (who.empty() ? "" : ", ") + m.SeatName(seat) + " (" + m.RoleName(m.RoleOfSeat(ep, seat)) + ")";
      }
      return who;
    };
    std::string spoke;
    for (int seat : order) spoke += (spoke.empty() ? "" : " > ") + m.SeatName(seat);
    ImGui::TextDisabled("speaking order: %s", spoke.empty() ? "-" : spoke.c_str());
    DrawModelLegend(m);
    int persuaded = 0, cases = 0;  // probed votes whose teammates recommended otherwise than the voter alone
    if (ImGui::BeginTable("deliberation", 4,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
      for (const char* h : {"seat", "willing", "recommends, because", "vote"}) ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      for (const auto& [seat, s] : seats) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const int role = m.RoleOfSeat(ep, seat);
        ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, ModelTint(m.ModelOfRole(role)));
        ImGui::Text("%s %s", m.SeatName(seat).c_str(), m.RoleName(role).c_str());
        if (seat < static_cast<int>(ep.seat_snapshot.size()) && !ep.seat_snapshot[seat].empty()) {
          ImGui::SameLine();
          ImGui::TextColored(ImVec4(0.75f, 0.65f, 1.0f, 1), "(%s)", ep.seat_snapshot[seat].c_str());
        }
        ImGui::TableNextColumn();
        ImGui::Text("%s", s.will.c_str());
        ImGui::TableNextColumn();
        if (s.vectors > 0) {
          ImGui::TextDisabled("[%d vectors]", s.vectors);
          if (!s.speak.empty()) ImGui::SameLine();
        }
        const std::string first = s.speak.substr(0, s.speak.find(' '));
        if (!s.speak.empty()) {
          ImGui::TextColored(colour(first), "%s", first.c_str());
          ImGui::SameLine();
          ImGui::TextDisabled("%s", s.speak.size() > first.size() ? s.speak.substr(first.size()).c_str() : "");
        }
        ImGui::TableNextColumn();
        ImGui::TextColored(colour(s.vote), "%s", s.vote.c_str());
        if (s.vote_row != nullptr && PersuasionCase(*s.vote_row)) {
          ++cases;
          if (Persuaded(*s.vote_row)) {
            ++persuaded;
            ImGui::SameLine();
            ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.2f, 1), "<- persuaded");
            if (ImGui::IsItemHovered()) {
              ImGui::SetTooltip("alone it would have voted %s; it followed %s, recommended by %s",
                                s.vote_row->unheard.empty() ? "nothing" : s.vote_row->unheard.c_str(),
                                s.vote_row->recommended.c_str(), recommenders(s.vote_row->recommended).c_str());
            }
          }
        }
      }
      ImGui::EndTable();
    }
    if (cases > 0) {
      ImGui::TextDisabled("persuaded: %d of the %d votes whose teammates recommended otherwise than the voter alone",
                          persuaded, cases);
    }
    ImGui::EndGroup();
    ImGui::Separator();
    DrawMessageList(m, ep, shown);
  }
};

class SplitFactsRenderer : public EpisodeRenderer {
 public:
  void Draw(const SessionModel& m, const EpisodeRecord& ep, size_t shown) override {
    if (!ep.final_state.empty()) ImGui::TextUnformatted(ep.final_state.c_str());
    double text = 0, bytes = 0, latents = 0;
    for (size_t i = 0; i < std::min(shown, ep.messages.size()); ++i) {
      const MessageRow& r = m.messages[ep.messages[i]];
      text += r.text_tokens;
      bytes += static_cast<double>(r.wire_bytes);
      latents += r.latent_vectors;
    }
    ImGui::Text("this episode: %.0f text tokens, %.0f latent vectors, %.0f bytes on the wire", text, latents, bytes);
    DrawMessageList(m, ep, shown);
  }
};

TROUPE_REGISTER_EPISODE_RENDERER("generic", GenericRenderer);
TROUPE_REGISTER_EPISODE_RENDERER("red_black", RedBlackRenderer);
TROUPE_REGISTER_EPISODE_RENDERER("split_facts", SplitFactsRenderer);

}  // namespace

}  // namespace troupe::view
