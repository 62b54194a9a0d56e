// Red-Black scenarios (reskins): the words agents see, never the rules. A
// scenario names the two teams, labels the two options neutrally in its own
// order (which label is the cooperative one differs from scenario to
// scenario), says what each option means and what points stand for, and tells
// a story of two or three sentences. The payoffs, multipliers and rules are
// the game's alone.
//
// Scenarios are JSON files (games/red_black/scenarios/ holds the built-in
// ones, the reference study's five training and three held-out scenarios):
//   {"name": "climate", "split": "training", "title": "Climate accord",
//    "story": "Two regions share one sky. ...",
//    "teams": ["the northern region", "the southern region"],
//    "options": [{"label": "A", "means": "joint emission cuts", "cooperative": true},
//                {"label": "B", "means": "cheap fossil output"}],
//    "points": "billions in shared prosperity"}
// A malformed file is refused with its file:line:col.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/base/errors.h"

namespace troupe::red_black {

// A team's choice in a round, whatever a scenario calls it: kBlack is the
// cooperative option (both +3), kRed the other (it gains against kBlack).
enum class Choice { kBlack = 0, kRed = 1 };

struct Scenario {
  std::string name;                     // how workflows name it ("plain", "climate")
  std::string split;                    // "training", "held_out" or "" (a user's own)
  std::string title;                    // the game's name in the text view ("Red-Black")
  std::string story;                    // two or three sentences before the rules ("" for the plain game)
  std::array<std::string, 2> teams;     // team A's and team B's names in the text view
  std::array<std::string, 2> labels;    // by Choice: [kBlack] the cooperative option's label, [kRed] the other's
  std::array<std::string, 2> meanings;  // by Choice: what each option stands for ("" for the plain game)
  Choice listed_first = Choice::kRed;   // the option shown first wherever both are shown
  std::string points;                   // what points stand for ("" for the plain game)

  const std::string& Label(Choice c) const { return labels[static_cast<int>(c)]; }
  // Both labels in the scenario's order: the options of a recommendation or a vote.
  std::vector<std::string> OrderedLabels() const;
  // The words a word-vocabulary model reads before the history: each label in
  // order followed by its meaning's words ({} for the plain game).
  std::vector<std::string> Preamble() const;
  bool plain() const { return story.empty(); }
};

// The plain game: options red and black, teams A and B, no story.
const Scenario& PlainScenario();

// A scenario from a JSON text; `source` names it in errors (file:line:col: ...).
// Throws GameError.
Scenario ParseScenario(const std::string& json_text, const std::string& source);

// The built-in scenarios, the plain game first.
const std::vector<Scenario>& BuiltInScenarios();

// The scenarios a `scenario` game param names: a comma-separated list of
// built-in names, "training" or "held_out" (the built-in ones of that split),
// or paths of JSON files ("my_world.json"). "" is the plain game alone.
// Throws GameError naming the param.
std::vector<Scenario> ResolveScenarios(const std::string& param);

}  // namespace troupe::red_black
