// The Sugarscape episode view: the grid as a heatmap of sugar (gold) and spice
// (rust), traders as dots shaded by wealth (tinted by identity when traders
// negotiate), the step's trades as lines between partners, a step slider, and
// curves of population, Gini, trades and mean wealth (and trade success) over
// the recorded steps. With negotiation, a click on a trader shows its
// encounter's dialogue. It reads the picture the game puts in each snapshot
// (SugarscapeState::Serialize).
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "viewer/episode_renderers.h"

namespace troupe::view {

namespace {

struct Picture {
  int w = 0, h = 0;
  std::string sugar, spice;  // one digit per cell
  struct Trader {
    int x, y;
    double wealth;
    int identity;  // -1: none given
  };
  std::vector<Trader> traders;
  std::vector<std::array<int, 4>> trades;  // x1 y1 x2 y2
  struct Encounter {
    std::array<int, 4> at{};  // x1 y1 x2 y2
    std::string outcome;
    std::vector<std::string> lines;  // "A chat hello", "B negotiate offer 3 sugar for 2 spice", ...
  };
  std::vector<Encounter> encounters;
};

// The world step a snapshot shows (its first line: "SEED STEPS ...").
long long StepOf(const std::string& state) {
  long long seed = 0, steps = -1;
  std::sscanf(state.c_str(), "%lld %lld", &seed, &steps);
  return steps;
}

double Gini(const std::vector<Picture::Trader>& traders) {
  std::vector<double> w;
  for (const auto& t : traders) w.push_back(t.wealth);
  if (w.empty()) return 0.0;
  std::sort(w.begin(), w.end());
  double weighted = 0, total = 0;
  for (size_t i = 0; i < w.size(); ++i) weighted += static_cast<double>(i + 1) * w[i], total += w[i];
  const double n = static_cast<double>(w.size());
  return total > 0 ? 2.0 * weighted / (n * total) - (n + 1.0) / n : 0.0;
}

// False when the snapshot holds no picture (a world too large to draw, or another game).
bool Parse(const std::string& state, Picture* p) {
  std::istringstream in(state);
  std::string line, word;
  std::getline(in, line);  // seed, steps
  if (!(in >> word >> p->w >> p->h) || word != "picture" || p->w <= 0 || p->h <= 0) return false;
  in >> p->sugar >> p->spice;
  const size_t cells = static_cast<size_t>(p->w) * p->h;
  if (p->sugar.size() != cells || p->spice.size() != cells) return false;
  size_t n = 0;
  if (!(in >> word >> n) || word != "traders") return false;
  for (size_t i = 0; i < n; ++i) {
    int x, y, id = -1;
    long long s, q;
    if (!(in >> word) || std::sscanf(word.c_str(), "%d,%d,%lld,%lld,%d", &x, &y, &s, &q, &id) < 4) return false;
    p->traders.push_back({x, y, static_cast<double>(s + q), id});
  }
  if (in >> word >> n && word == "trades") {
    for (size_t i = 0; i < n && in >> word; ++i) {
      std::array<int, 4> t{};
      if (std::sscanf(word.c_str(), "%d,%d,%d,%d", &t[0], &t[1], &t[2], &t[3]) == 4) p->trades.push_back(t);
    }
  }
  // Negotiation: "encounters K", then per line "x1,y1,x2,y2 OUTCOME|SIDE PHASE WORDS|...".
  if (in >> word >> n && word == "encounters") {
    std::string line;
    std::getline(in, line);
    for (size_t i = 0; i < n && std::getline(in, line); ++i) {
      Picture::Encounter e;
      std::istringstream parts(line);
      std::string part;
      std::getline(parts, part, '|');
      char outcome[32] = {0};
      if (std::sscanf(part.c_str(), "%d,%d,%d,%d %31s", &e.at[0], &e.at[1], &e.at[2], &e.at[3], outcome) != 5) break;
      e.outcome = outcome;
      while (std::getline(parts, part, '|')) e.lines.push_back((part[0] == '0' ? "A" : "B") + part.substr(1));
      p->encounters.push_back(std::move(e));
    }
  }
  return true;
}

class SugarscapeRenderer : public EpisodeRenderer {
 public:
  void Draw(const SessionModel&, const EpisodeRecord& ep, size_t) override {
    if (ep.snapshots.empty()) {
      ImGui::TextDisabled("no snapshots of this episode (only the first runtime.detail_episodes are recorded)");
      return;
    }
    const int last = static_cast<int>(ep.snapshots.size()) - 1;
    if (&ep != episode_ || ep.snapshots.size() != seen_) {  // another episode, or a live run's new steps
      if (&ep != episode_ || step_ == static_cast<int>(seen_) - 1) step_ = last;  // follow the newest
      episode_ = &ep;
      seen_ = ep.snapshots.size();
      Curves(ep);
    }
    step_ = std::clamp(step_, 0, last);
    ImGui::SetNextItemWidth(320);
    ImGui::SliderInt("step", &step_, 0, last, "%d");
    const session::StateSnapshot& snap = ep.snapshots[step_];
    ImGui::SameLine();
    ImGui::TextUnformatted(snap.text().c_str());
    Picture p;
    if (!Parse(snap.state(), &p)) {
      ImGui::TextDisabled("this snapshot holds no picture (worlds over 500 x 500 are not drawn)");
      return;
    }
    DrawGrid(p, &selected_);
    ImGui::SameLine(0, 16);
    ImGui::BeginGroup();
    const ImVec2 plot(260, 60);
    ImGui::PlotLines("population", population_.data(), static_cast<int>(population_.size()), 0, nullptr, 0.0f, FLT_MAX,
                     plot);
    ImGui::PlotLines("gini", gini_.data(), static_cast<int>(gini_.size()), 0, nullptr, 0.0f, 1.0f, plot);
    ImGui::PlotLines("trading pairs", trades_.data(), static_cast<int>(trades_.size()), 0, nullptr, 0.0f, FLT_MAX, plot);
    if (!success_.empty()) {
      ImGui::PlotLines("trade success", success_.data(), static_cast<int>(success_.size()), 0, nullptr, 0.0f, 1.0f,
                       plot);
    }
    ImGui::PlotLines("mean wealth", wealth_.data(), static_cast<int>(wealth_.size()), 0, nullptr, 0.0f, FLT_MAX, plot);
    ImGui::TextDisabled("gold: sugar, rust: spice; dots: traders,\nbrighter = wealthier; lines: this step's trades");
    if (ep.ended) {
      for (const char* key : {"population_end", "trades", "mean_price", "gini_end", "trade_success_rate"}) {
        auto it = ep.metrics.find(key);
        if (it != ep.metrics.end()) ImGui::Text("%s %.3f", key, it->second);
      }
    }
    DrawDialogue(p);
    ImGui::EndGroup();
  }

 private:
  void Curves(const EpisodeRecord& ep) {
    population_.clear();
    trades_.clear();
    wealth_.clear();
    gini_.clear();
    success_.clear();
    // One point per world step: the first snapshot after it closed, which holds its trades and
    // encounters (negotiation sends one snapshot per decision round).
    for (size_t i = 0; i < ep.snapshots.size(); ++i) {
      const auto& s = ep.snapshots[i];
      if (i > 0 && StepOf(ep.snapshots[i - 1].state()) == StepOf(s.state())) continue;
      Picture p;
      if (!Parse(s.state(), &p)) continue;
      double total = 0;
      for (const auto& t : p.traders) total += t.wealth;
      population_.push_back(static_cast<float>(p.traders.size()));
      trades_.push_back(static_cast<float>(p.trades.size()));
      wealth_.push_back(p.traders.empty() ? 0.0f : static_cast<float>(total / p.traders.size()));
      gini_.push_back(static_cast<float>(Gini(p.traders)));
      int ended = 0, completed = 0;
      for (const auto& e : p.encounters) {
        ended += e.outcome != "open";
        completed += e.outcome == "completed";
      }
      if (ended > 0) success_.push_back(static_cast<float>(completed) / ended);
    }
  }

  // The dialogue of the selected trader's encounter (or the step's first one).
  void DrawDialogue(const Picture& p) const {
    if (p.encounters.empty()) return;
    const Picture::Encounter* shown = &p.encounters.front();
    for (const auto& e : p.encounters) {  // by default the first deal made
      if (e.outcome == "completed") {
        shown = &e;
        break;
      }
    }
    for (const auto& e : p.encounters) {
      if ((e.at[0] == selected_[0] && e.at[1] == selected_[1]) || (e.at[2] == selected_[0] && e.at[3] == selected_[1]))
        shown = &e;
    }
    ImGui::Separator();
    ImGui::Text("encounter (%d,%d) A - B (%d,%d): %s", shown->at[0], shown->at[1], shown->at[2], shown->at[3],
                shown->outcome.c_str());
    ImGui::TextDisabled("click a trader to see its encounter");
    for (const auto& line : shown->lines) ImGui::TextWrapped("%s", line.c_str());
  }

  // `selected`: the cell clicked last.
  static void DrawGrid(const Picture& p, std::array<int, 2>* selected) {
    const float side = std::max(1.0f, std::min(560.0f / p.w, 560.0f / p.h));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 o = ImGui::GetCursorScreenPos();
    for (int y = 0; y < p.h; ++y) {
      for (int x = 0; x < p.w; ++x) {
        const size_t c = static_cast<size_t>(y) * p.w + x;
        const float s = (p.sugar[c] - '0') / 4.0f, q = (p.spice[c] - '0') / 4.0f;  // capacities are 0..4
        const float su = std::min(1.0f, s), sp = std::min(1.0f, q);
        const int r = static_cast<int>(25 + 115 * su + 110 * sp);  // gold for sugar, rust for spice
        const int g = static_cast<int>(25 + 125 * su + 30 * sp);
        const int b = static_cast<int>(30 + 10 * su + 15 * sp);
        dl->AddRectFilled(ImVec2(o.x + x * side, o.y + y * side), ImVec2(o.x + (x + 1) * side, o.y + (y + 1) * side),
                          IM_COL32(std::min(r, 255), std::min(g, 255), b, 255));
      }
    }
    double most = 1;
    for (const auto& t : p.traders) most = std::max(most, t.wealth);
    for (const auto& t : p.trades) {
      dl->AddLine(ImVec2(o.x + (t[0] + 0.5f) * side, o.y + (t[1] + 0.5f) * side),
                  ImVec2(o.x + (t[2] + 0.5f) * side, o.y + (t[3] + 0.5f) * side), IM_COL32(120, 220, 255, 220),
                  std::max(1.0f, side / 5));
    }
    for (const auto& e : p.encounters) {  // pairs negotiating this step: green when a deal was made
      const bool done = e.outcome == "completed";
      dl->AddLine(ImVec2(o.x + (e.at[0] + 0.5f) * side, o.y + (e.at[1] + 0.5f) * side),
                  ImVec2(o.x + (e.at[2] + 0.5f) * side, o.y + (e.at[3] + 0.5f) * side),
                  done ? IM_COL32(120, 255, 140, 230) : IM_COL32(200, 200, 200, 140), std::max(1.0f, side / 6));
    }
    // Identities tint the dots: blue, magenta, green, ... over the wealth shade.
    static const std::array<std::array<float, 3>, 4> kTint = {
        {{0.55f, 0.75f, 1.0f}, {1.0f, 0.55f, 0.9f}, {0.6f, 1.0f, 0.55f}, {1.0f, 0.85f, 0.5f}}};
    for (const auto& t : p.traders) {
      const float v = static_cast<float>(90 + 165 * t.wealth / most);
      const auto& tint = t.identity >= 0 ? kTint[t.identity % kTint.size()] : std::array<float, 3>{1, 1, 1};
      dl->AddCircleFilled(ImVec2(o.x + (t.x + 0.5f) * side, o.y + (t.y + 0.5f) * side), std::max(1.5f, side * 0.38f),
                          IM_COL32(static_cast<int>(v * tint[0]), static_cast<int>(v * tint[1]),
                                   static_cast<int>(v * tint[2]), 255));
    }
    ImGui::InvisibleButton("grid", ImVec2(p.w * side, p.h * side));
    if (ImGui::IsItemClicked()) {
      const ImVec2 m = ImGui::GetMousePos();
      (*selected)[0] = static_cast<int>((m.x - o.x) / side);
      (*selected)[1] = static_cast<int>((m.y - o.y) / side);
    }
  }

  int step_ = 0;
  const EpisodeRecord* episode_ = nullptr;
  size_t seen_ = 0;
  std::vector<float> population_, trades_, wealth_, gini_, success_;
  std::array<int, 2> selected_{-1, -1};
};

TROUPE_REGISTER_EPISODE_RENDERER("sugarscape", SugarscapeRenderer);

}  // namespace

}  // namespace troupe::view
