// Scripted Sugarscape negotiators: opponents and teachers for trained ones.
//   mrs_negotiator  the MRS rule as a negotiator: it proposes what rule T
//                   would trade between the two (Epstein & Axtell's price,
//                   sqrt(MRS_a * MRS_b), repeated while both gain, in whole
//                   units) and accepts an offer exactly when it raises its own
//                   welfare; it declines when rule T would not trade.
//   always_decline  declines, and walks away if asked to negotiate.
//   fraudster       proposes as mrs_negotiator, accepts every offer that gives
//                   it something, and sends nothing when fraud is possible.
//   haggler         the MRS rule from one side: it sees only its own holdings
//                   and metabolism (what a model's observation shows), buys
//                   the good it values more at the price halfway (geometric)
//                   between its own MRS and 1, in the whole-unit bundle best
//                   for itself, accepts an offer exactly when it raises its own
//                   welfare and otherwise answers with its own offer. A teacher
//                   a student can imitate exactly, whose encounters hold both
//                   good offers accepted and bad ones countered.
#include <algorithm>
#include <cmath>

#include "games/sugarscape/encounter_view.h"
#include "games/sugarscape/sugarscape_game.h"

namespace troupe::sugarscape {

namespace {

class Negotiator : public ScriptedStrategy {
 public:
  std::string GameName() const override { return "sugarscape"; }
  std::vector<std::string> Act(const State& state, const Decision& d, Rng& rng) const override {
    const auto* s = dynamic_cast<const SugarscapeState*>(&state);
    if (s == nullptr) throw GameError("a sugarscape negotiator was given a state of another game");
    const Encounter* e = s->EncounterOf(d.seat);
    if (e == nullptr) throw GameError("sugarscape: seat " + std::to_string(d.seat) + " is in no encounter");
    const int side = s->SideOf(d.seat);
    if (d.phase == "chat") return Chat(*s, *e, side, rng);
    if (d.phase == "intent") return {Intent(*s, *e, side) ? "trade" : "decline"};
    if (d.phase == "send") return {std::to_string(Send(*e, side))};
    return Negotiate(*s, *e, side);
  }

 protected:
  virtual std::vector<std::string> Chat(const SugarscapeState& s, const Encounter& e, int side, Rng&) const {
    const int t = e.trader(side);
    return {"hello", "i", "need", s.world().Mrs(t) > 1 ? "sugar" : "spice"};
  }
  virtual bool Intent(const SugarscapeState& s, const Encounter& e, int side) const {
    return Proposal(s, e, side).has_value();
  }
  // This side's offer; none: it would not trade.
  virtual std::optional<Offer> Proposal(const SugarscapeState& s, const Encounter& e, int side) const {
    return RuleOffer(s, e, side);
  }
  virtual bool Accepts(const SugarscapeState& s, const Encounter& e, int side, const Offer& o) const {
    const int t = e.trader(side);
    return WelfareIfAccepted(s.world(), t, o) > s.world().Welfare(t);
  }
  virtual int Send(const Encounter& e, int side) const { return e.Owed(side); }

  // What rule T would trade between the two in whole units (g1mt's exchanges,
  // repeated while both gain), as this side's offer; none when it would not
  // trade, or when the bundle exceeds the largest amount an offer may name.
  std::optional<Offer> RuleOffer(const SugarscapeState& s, const Encounter& e, int side) const {
    const World& w = s.world();
    const int t = e.trader(side), u = e.trader(1 - side);
    double h[4] = {w.sugar(t), w.spice(t), w.sugar(u), w.spice(u)};
    if (w.Exchanges(t, u, h, /*whole=*/true) == 0) return std::nullopt;
    const double dsugar = h[0] - w.sugar(t), dspice = h[1] - w.spice(t);
    Offer o;
    o.by = side;
    o.good = dsugar > 0 ? Good::kSpice : Good::kSugar;  // it gives what it has more use to part with
    o.give = static_cast<int>(std::lround(dsugar > 0 ? -dspice : -dsugar));
    o.receive = static_cast<int>(std::lround(dsugar > 0 ? dsugar : dspice));
    const int max = s.game().rules().max_amount;
    if (o.give > max || o.receive > max) {  // the same price, scaled down to fit
      const double scale = static_cast<double>(max) / std::max(o.give, o.receive);
      o.give = static_cast<int>(std::floor(o.give * scale));
      o.receive = static_cast<int>(std::floor(o.receive * scale));
      if (o.give < 1 || o.receive < 1) return std::nullopt;
    }
    return o;
  }

  virtual std::vector<std::string> Negotiate(const SugarscapeState& s, const Encounter& e, int side) const {
    if (e.pending() && e.pending()->by != side && Accepts(s, e, side, *e.pending())) return {"accept"};
    const std::optional<Offer> mine = Proposal(s, e, side);
    if (!mine) return {"walk"};
    return OfferWords(*mine);
  }
};

class MrsNegotiator : public Negotiator {};

class AlwaysDecline : public Negotiator {
 protected:
  std::vector<std::string> Chat(const SugarscapeState&, const Encounter&, int, Rng&) const override {
    return {"no", "thanks"};
  }
  bool Intent(const SugarscapeState&, const Encounter&, int) const override { return false; }
  bool Accepts(const SugarscapeState&, const Encounter&, int, const Offer&) const override { return false; }
  std::vector<std::string> Negotiate(const SugarscapeState&, const Encounter&, int) const override { return {"walk"}; }
};

class Fraudster : public Negotiator {
 protected:
  bool Intent(const SugarscapeState&, const Encounter&, int) const override { return true; }
  bool Accepts(const SugarscapeState&, const Encounter&, int, const Offer& o) const override { return o.give > 0; }
  int Send(const Encounter&, int) const override { return 0; }
};

class Haggler : public Negotiator {
 protected:
  // Buys the good it values more (sugar when its MRS, spice per sugar, is above
  // 1) at sqrt(MRS) spice per sugar: `receive` units for `give` = receive x
  // price rounded (at least 1), the receive in 1..max_amount that leaves it
  // best off; none when no bundle raises its welfare.
  std::optional<Offer> Proposal(const SugarscapeState& s, const Encounter& e, int side) const override {
    const World& w = s.world();
    const int t = e.trader(side);
    const double mrs = w.Mrs(t);
    if (!(mrs > 0) || !std::isfinite(mrs) || mrs == 1.0) return std::nullopt;
    const bool buys_sugar = mrs > 1;
    const double price = buys_sugar ? std::sqrt(mrs) : 1.0 / std::sqrt(mrs);  // what it pays per unit bought
    const int max = s.game().rules().max_amount;
    std::optional<Offer> best;
    double best_welfare = w.Welfare(t);
    for (int receive = 1; receive <= max; ++receive) {
      const int give = std::max(1, static_cast<int>(std::lround(receive * price)));
      if (give > max) break;
      const double sugar = w.sugar(t) + (buys_sugar ? receive : -give);
      const double spice = w.spice(t) + (buys_sugar ? -give : receive);
      if (sugar <= 0 || spice <= 0) break;
      const double welfare = w.Welfare(t, sugar, spice);
      if (welfare > best_welfare) {
        best_welfare = welfare;
        best = Offer{side, give, receive, buys_sugar ? Good::kSpice : Good::kSugar};
      }
    }
    return best;
  }
};

}  // namespace

TROUPE_REGISTER_STRATEGY("mrs_negotiator", MrsNegotiator);
TROUPE_REGISTER_STRATEGY("haggler", Haggler);
TROUPE_REGISTER_STRATEGY("always_decline", AlwaysDecline);
TROUPE_REGISTER_STRATEGY("fraudster", Fraudster);

}  // namespace troupe::sugarscape
