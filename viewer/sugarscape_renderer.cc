// The Sugarscape episode view: the grid as a heatmap of sugar (gold) and spice
// (rust), traders as dots shaded by wealth, the step's trades as lines between
// partners, a step slider, and curves of population, trades and mean wealth
// over the recorded steps. It reads the picture the game puts in each
// snapshot (SugarscapeState::Serialize).
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
  };
  std::vector<Trader> traders;
  std::vector<std::array<int, 4>> trades;  // x1 y1 x2 y2
};

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
    int x, y;
    long long s, q;
    if (!(in >> word) || std::sscanf(word.c_str(), "%d,%d,%lld,%lld", &x, &y, &s, &q) != 4) return false;
    p->traders.push_back({x, y, static_cast<double>(s + q)});
  }
  if (in >> word >> n && word == "trades") {
    for (size_t i = 0; i < n && in >> word; ++i) {
      std::array<int, 4> t{};
      if (std::sscanf(word.c_str(), "%d,%d,%d,%d", &t[0], &t[1], &t[2], &t[3]) == 4) p->trades.push_back(t);
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
    DrawGrid(p);
    ImGui::SameLine(0, 16);
    ImGui::BeginGroup();
    const ImVec2 plot(260, 70);
    ImGui::PlotLines("population", population_.data(), static_cast<int>(population_.size()), 0, nullptr, 0.0f, FLT_MAX,
                     plot);
    ImGui::PlotLines("trading pairs", trades_.data(), static_cast<int>(trades_.size()), 0, nullptr, 0.0f, FLT_MAX, plot);
    ImGui::PlotLines("mean wealth", wealth_.data(), static_cast<int>(wealth_.size()), 0, nullptr, 0.0f, FLT_MAX, plot);
    ImGui::TextDisabled("gold: sugar, rust: spice; dots: traders,\nbrighter = wealthier; lines: this step's trades");
    if (ep.ended) {
      for (const char* key : {"population_end", "trades", "mean_price", "gini_end"}) {
        auto it = ep.metrics.find(key);
        if (it != ep.metrics.end()) ImGui::Text("%s %.3f", key, it->second);
      }
    }
    ImGui::EndGroup();
  }

 private:
  void Curves(const EpisodeRecord& ep) {
    population_.clear();
    trades_.clear();
    wealth_.clear();
    for (const auto& s : ep.snapshots) {
      Picture p;
      if (!Parse(s.state(), &p)) continue;
      double total = 0;
      for (const auto& t : p.traders) total += t.wealth;
      population_.push_back(static_cast<float>(p.traders.size()));
      trades_.push_back(static_cast<float>(p.trades.size()));
      wealth_.push_back(p.traders.empty() ? 0.0f : static_cast<float>(total / p.traders.size()));
    }
  }

  static void DrawGrid(const Picture& p) {
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
    for (const auto& t : p.traders) {
      const int v = static_cast<int>(90 + 165 * t.wealth / most);
      dl->AddCircleFilled(ImVec2(o.x + (t.x + 0.5f) * side, o.y + (t.y + 0.5f) * side), std::max(1.5f, side * 0.38f),
                          IM_COL32(v, v, v, 255));
    }
    ImGui::Dummy(ImVec2(p.w * side, p.h * side));
  }

  int step_ = 0;
  const EpisodeRecord* episode_ = nullptr;
  size_t seen_ = 0;
  std::vector<float> population_, trades_, wealth_;
};

TROUPE_REGISTER_EPISODE_RENDERER("sugarscape", SugarscapeRenderer);

}  // namespace

}  // namespace troupe::view
