// Negotiated trade in Sugarscape: the encounter protocol stage by stage on
// hand-built pairs, strict parsing, execution with and without fraud, and
// the game's seats, pending decisions, rewards and metrics.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "core/base/errors.h"
#include "games/sugarscape/encounter.h"
#include "games/sugarscape/encounter_view.h"
#include "games/sugarscape/sugarscape_game.h"

using namespace troupe;
using namespace troupe::sugarscape;

namespace {

using Words = std::vector<std::string>;

// Two traders side by side on an empty 5 x 5 classic world: a holds lots of
// spice and needs sugar, b the other way round.
struct Pair {
  World world;
  int a, b;
  Pair() : world(Params(), Flat(), 1) {
    a = world.AddTrader(1, 1, 5, 30, 2, 2, 1);
    b = world.AddTrader(2, 1, 30, 5, 2, 2, 1);
  }
  static WorldParams Params() {
    WorldParams p = SeedStudyPreset();
    p.population = 0;
    p.torus = false;
    return p;
  }
  static Landscape Flat() {
    Landscape l;
    l.width = l.height = 5;
    l.sugar.assign(25, 0);
    l.spice = l.sugar;
    return l;
  }
};

NegotiationRules Protocol(int chat = 0, bool fraud = false) {
  NegotiationRules r;
  r.chat_rounds = chat;
  r.fraud = fraud;
  return r;
}

// Both sides answer this round (as Sides() lists them), then the round closes.
void Round(Encounter& e, World& w, const std::vector<Words>& answers) {
  const std::vector<int> sides = e.Sides();
  REQUIRE(sides.size() == answers.size());
  for (size_t k = 0; k < sides.size(); ++k) e.Answer(sides[k], answers[k]);
  e.Close(&w);
}

std::unique_ptr<Game> NegotiationGame(std::map<std::string, ParamValue> extra = {}) {
  std::map<std::string, ParamValue> p = {{"preset", std::string("seed_study")}, {"size", int64_t{20}},
                                         {"population", int64_t{60}},          {"steps", int64_t{6}},
                                         {"trade_mode", std::string("negotiate")}};
  for (auto& [k, v] : extra) p[k] = v;
  return MakeGame("sugarscape", p);
}

}  // namespace

TEST_CASE("offers are parsed strictly", "[sugarscape][negotiation]") {
  const auto offer = ParseMove({"offer", "3", "sugar", "for", "5", "spice"}, 20);
  REQUIRE(offer);
  CHECK(offer->kind == Move::kOffer);
  CHECK(offer->offer.give == 3);
  CHECK(offer->offer.receive == 5);
  CHECK(offer->offer.good == Good::kSugar);
  CHECK(ParseMove({"accept", "it"}, 20)->kind == Move::kAccept);
  CHECK(ParseMove({"walk", "away"}, 20)->kind == Move::kWalk);
  CHECK_FALSE(ParseMove({"offer", "3", "sugar", "for", "5", "sugar"}, 20));   // the same good
  CHECK_FALSE(ParseMove({"offer", "3", "sugar", "to", "5", "spice"}, 20));    // not "for"
  CHECK_FALSE(ParseMove({"offer", "30", "sugar", "for", "5", "spice"}, 20));  // above max_amount
  CHECK_FALSE(ParseMove({"offer", "0", "sugar", "for", "0", "spice"}, 20));   // nothing at all
  CHECK_FALSE(ParseMove({"offer", "three", "sugar", "for", "5", "spice"}, 20));
  CHECK_FALSE(ParseMove({"offer", "3", "sugar"}, 20));
  CHECK_FALSE(ParseMove({"please"}, 20));
  CHECK_FALSE(ParseMove({}, 20));
}

TEST_CASE("an encounter runs small talk, intent and alternating offers to an executed deal", "[sugarscape][negotiation]") {
  Pair p;
  const NegotiationRules rules = Protocol(/*chat=*/2);
  Encounter e(p.a, p.b, p.world, rules);
  CHECK(e.stage() == Stage::kChat);
  CHECK(e.Options(0).empty());
  Round(e, p.world, {{"hello"}, {"hi", "there", "friend", "of", "mine"}});  // cut at chat_words
  CHECK(e.dialogue().back().words.size() == 4);
  Round(e, p.world, {{"i", "need", "sugar"}, {"ok"}});
  REQUIRE(e.stage() == Stage::kIntent);
  CHECK(e.Options(0) == Words{"trade", "decline"});
  Round(e, p.world, {{"trade"}, {"trade"}});
  REQUIRE(e.stage() == Stage::kNegotiate);
  CHECK(e.Sides() == std::vector<int>{0});        // the picker opens
  CHECK(e.Options(0) == Words{"offer", "walk"});  // nothing to accept yet
  Round(e, p.world, {{"offer", "6", "spice", "for", "6", "sugar"}});
  CHECK(e.Sides() == std::vector<int>{1});
  CHECK(e.Options(1) == Words{"offer", "accept", "reject", "walk"});
  Round(e, p.world, {{"accept"}});
  REQUIRE(e.done());
  CHECK(e.outcome() == Outcome::kCompleted);
  CHECK(p.world.sugar(p.a) == 11);
  CHECK(p.world.spice(p.a) == 24);
  CHECK(p.world.sugar(p.b) == 24);
  CHECK(p.world.spice(p.b) == 11);
  CHECK(e.WelfareGain(0) > 0);
  CHECK(e.WelfareGain(1) > 0);
  CHECK(e.Price() == 1.0);
  CHECK(p.world.last_trades().size() == 1);
}

TEST_CASE("encounters end as both_declined, reject, walk_away, timeout or error", "[sugarscape][negotiation]") {
  Pair p;
  const NegotiationRules rules = Protocol();
  {
    Encounter e(p.a, p.b, p.world, rules);
    Round(e, p.world, {{"decline"}, {"decline"}});
    CHECK(e.outcome() == Outcome::kBothDeclined);
  }
  {  // one side declining does not end it: the one who wants to trade opens
    Encounter e(p.a, p.b, p.world, rules);
    Round(e, p.world, {{"decline"}, {"trade"}});
    CHECK(e.Sides() == std::vector<int>{1});
    Round(e, p.world, {{"offer", "2", "sugar", "for", "2", "spice"}});
    Round(e, p.world, {{"reject"}});
    CHECK(e.outcome() == Outcome::kReject);
  }
  {
    Encounter e(p.a, p.b, p.world, rules);
    Round(e, p.world, {{"trade"}, {"trade"}});
    Round(e, p.world, {{"walk", "away"}});
    CHECK(e.outcome() == Outcome::kWalkAway);
  }
  {
    Encounter e(p.a, p.b, p.world, rules);
    Round(e, p.world, {{"trade"}, {"trade"}});
    for (int turn = 0; turn < rules.turns; ++turn) {
      REQUIRE_FALSE(e.done());
      Round(e, p.world, {{"offer", "1", "spice", "for", "9", "sugar"}});
    }
    CHECK(e.outcome() == Outcome::kTimeout);
    CHECK(p.world.sugar(p.a) == 5);  // nothing moved
  }
  {
    Encounter e(p.a, p.b, p.world, rules);
    Round(e, p.world, {{"trade"}, {"trade"}});
    CHECK_FALSE(e.Answer(0, {"accept"}));  // nothing to accept
    CHECK(e.outcome() == Outcome::kError);
  }
  {
    Encounter e(p.a, p.b, p.world, rules);
    CHECK_FALSE(e.Answer(0, {"maybe"}));
    CHECK(e.Answer(1, {"trade"}));  // the other side's answer no longer matters
    e.Close(&p.world);
    CHECK(e.outcome() == Outcome::kError);
  }
}

TEST_CASE("deals are clamped to holdings, and with fraud each side sends what it commits", "[sugarscape][negotiation]") {
  Pair p;
  {
    const NegotiationRules rules = Protocol();
    Encounter e(p.a, p.b, p.world, rules);
    Round(e, p.world, {{"trade"}, {"trade"}});
    Round(e, p.world, {{"offer", "20", "spice", "for", "20", "sugar"}});  // b holds 30 sugar, a 30 spice
    Round(e, p.world, {{"accept"}});
    CHECK(e.sent(0) == 20);
    CHECK(e.sent(1) == 20);
  }
  {
    const NegotiationRules rules = Protocol();
    Encounter e(p.a, p.b, p.world, rules);  // a now holds 25 sugar, 10 spice
    Round(e, p.world, {{"trade"}, {"trade"}});
    Round(e, p.world, {{"offer", "15", "spice", "for", "1", "sugar"}});
    Round(e, p.world, {{"accept"}});
    CHECK(e.sent(0) == 10);  // all a had
    CHECK(p.world.spice(p.a) == 0);
  }
  Pair q;
  const NegotiationRules fraud = Protocol(0, /*fraud=*/true);
  Encounter e(q.a, q.b, q.world, fraud);
  Round(e, q.world, {{"trade"}, {"trade"}});
  Round(e, q.world, {{"offer", "6", "spice", "for", "6", "sugar"}});
  Round(e, q.world, {{"accept"}});
  REQUIRE(e.stage() == Stage::kSend);
  CHECK(e.Owed(0) == 6);
  CHECK(e.OwedGood(0) == Good::kSpice);
  CHECK(e.Options(1).size() == 7);  // 0..6
  Round(e, q.world, {{"6"}, {"0"}});
  CHECK(e.outcome() == Outcome::kCompleted);
  CHECK(e.defrauded_by(1));
  CHECK_FALSE(e.defrauded_by(0));
  CHECK(q.world.spice(q.b) == 11);
  CHECK(q.world.sugar(q.a) == 5);
}

TEST_CASE("a trader sees its status in small talk and its holdings from the intent on", "[sugarscape][negotiation]") {
  Pair p;
  const NegotiationRules rules = Protocol(1);
  Encounter e(p.a, p.b, p.world, rules);
  CHECK(ObservationWords(e, 0, p.world, "altruist", rules) == Words{"you", "altruist", "critical", "chat"});  // 5 / 2: 2.5 ticks of sugar
  Round(e, p.world, {{"hello"}, {"hi"}});
  const Words w = ObservationWords(e, 0, p.world, "altruist", rules);
  CHECK(w == Words{"you", "altruist", "critical", "have", "5", "sugar", "30", "spice", "need", "2", "sugar", "2", "spice",
                   "me", "hello", "them", "hi", "intent"});
  const std::string text = ObservationText(e, 1, p.world, "exploiter", rules);
  CHECK_THAT(text, Catch::Contains("exploiter"));
  CHECK_THAT(text, Catch::Contains("You hold 30 sugar and 5 spice"));
  CHECK_THAT(text, Catch::Contains("Neighbour: hello"));
  CHECK_THAT(text, Catch::Contains("Answer TRADE or DECLINE"));
  CHECK(std::string(StatusWord(2.9)) == "critical");
  CHECK(std::string(StatusWord(14)) == "stable");
  CHECK(std::string(StatusWord(15)) == "rich");
}

TEST_CASE("with offer_value a partner's pending offer shows what accepting it does to the answerer's welfare",
          "[sugarscape][negotiation]") {
  NegotiationRules rules = Protocol(0);
  rules.offer_value = true;
  // b (30 sugar, 5 spice, welfare sqrt(150)) is offered by a; side 0 (a) moves first.
  const auto offered = [&](const Words& offer, const NegotiationRules& r) {
    Pair p;
    Encounter e(p.a, p.b, p.world, r);
    Round(e, p.world, {{"trade"}, {"trade"}});
    Round(e, p.world, {offer});
    REQUIRE(e.stage() == Stage::kNegotiate);
    return std::make_tuple(ObservationWords(e, 1, p.world, "survivor", r), ObservationText(e, 1, p.world, "survivor", r),
                           ObservationWords(e, 0, p.world, "altruist", r));
  };
  const auto ends_with = [](const Words& w, const Words& tail) {
    return w.size() >= tail.size() && std::equal(tail.begin(), tail.end(), w.end() - static_cast<long>(tail.size()));
  };
  {  // 25 sugar and 10 spice: sqrt(250) = 15.81, up 29%
    const auto [words, text, own] = offered({"offer", "5", "spice", "for", "5", "sugar"}, rules);
    CHECK(ends_with(words, {"turn", "2", "worth", "gain", "29", "negotiate"}));
    CHECK_THAT(text, Catch::Contains("Accepting it would raise your welfare by 29%."));
    CHECK(std::find(own.begin(), own.end(), "worth") == own.end());  // the offerer is not told about its own offer
  }
  {  // 10 sugar and 6 spice: sqrt(60) = 7.75, down 37%
    const auto [words, text, own] = offered({"offer", "1", "spice", "for", "20", "sugar"}, rules);
    CHECK(ends_with(words, {"worth", "loss", "37", "negotiate"}));
    CHECK_THAT(text, Catch::Contains("lower your welfare by 37%"));
  }
  {  // 6 spice asked of a trader holding 5: it could not pay
    const auto [words, text, own] = offered({"offer", "1", "sugar", "for", "6", "spice"}, rules);
    CHECK(ends_with(words, {"worth", "loss", "99", "negotiate"}));
    CHECK_THAT(text, Catch::Contains("would leave you without one of the goods"));
  }
  {  // without the rule nothing is shown, and the vocabulary has no such words
    const auto [words, text, own] = offered({"offer", "5", "spice", "for", "5", "sugar"}, Protocol(0));
    CHECK(ends_with(words, {"turn", "2", "negotiate"}));
    CHECK_THAT(text, !Catch::Contains("welfare by"));
    const Words plain = NegotiationVocabulary({"survivor"}, Protocol(0));
    const Words shown = NegotiationVocabulary({"survivor"}, rules);
    CHECK(std::find(plain.begin(), plain.end(), "worth") == plain.end());
    CHECK(shown.size() == plain.size() + 3);
    for (const std::string& w : words) CHECK(std::find(plain.begin(), plain.end(), w) != plain.end());
  }
  const Words shown = NegotiationVocabulary({"survivor"}, rules);
  const Words seen = std::get<0>(offered({"offer", "1", "spice", "for", "20", "sugar"}, rules));
  for (const std::string& w : seen) {
    INFO(w);
    CHECK(std::find(shown.begin(), shown.end(), w) != shown.end());
  }
}

TEST_CASE("negotiation makes every trader a seat and all of a tick's encounters pending together",
          "[sugarscape][negotiation]") {
  auto game = NegotiationGame({{"identities", std::string("altruist,exploiter,survivor")}});
  const auto seats = game->SeatNames();
  REQUIRE(seats.size() == 60);
  CHECK(seats[0] == "altruist_0");
  CHECK(seats[4] == "exploiter_4");
  CHECK(game->RendersText());
  auto state = game->NewInitialState(3);
  CHECK(state->PendingDecisions().empty());
  REQUIRE(state->Advance());
  const auto* s = dynamic_cast<const SugarscapeState*>(state.get());
  const size_t pairs = s->encounters().size();
  REQUIRE(pairs > 3);
  const auto pending = state->PendingDecisions();
  CHECK(pending.size() == 2 * pairs);  // small talk: both sides of every pair at once
  for (const Decision& d : pending) {
    CHECK(d.phase == "chat");
    CHECK(s->EncounterOf(d.seat) != nullptr);
    CHECK(d.observation[1] == game->SeatNames()[d.seat].substr(0, game->SeatNames()[d.seat].find('_')));
    CHECK_FALSE(d.text.empty());
  }
  CHECK_THROWS_AS(state->Apply({}), GameError);  // an output for every pending decision
}

TEST_CASE("scripted MRS negotiators trade only when both gain, and rewards are each side's welfare change",
          "[sugarscape][negotiation]") {
  auto game = NegotiationGame();
  auto mrs = StrategyFactory::Get().Create("mrs_negotiator");
  Rng rng(1);
  auto state = game->NewInitialState(5);
  int64_t encounters = 0;
  double gains = 0;
  while (!state->IsTerminal()) {
    const auto pending = state->PendingDecisions();
    if (pending.empty()) {
      REQUIRE(state->Advance());
      encounters += static_cast<int64_t>(dynamic_cast<const SugarscapeState&>(*state).encounters().size());
      continue;
    }
    std::vector<SeatOutput> out;
    for (const Decision& d : pending) out.push_back({d.seat, mrs->Act(*state, d, rng)});
    const auto valid = state->Apply(out);
    for (bool v : valid) CHECK(v);
  }
  const auto m = state->Metrics();
  CHECK(m.at("encounters") == encounters);
  CHECK(m.at("trade_success_rate") > 0.2);
  CHECK(m.at("outcome_completed") == m.at("trade_success_rate"));
  CHECK(m.at("outcome_error") == 0);
  CHECK(m.at("outcome_walk_away") == 0);  // both see what rule T would do: they agree or both decline
  CHECK(m.at("welfare_gain_per_encounter") > 0);
  CHECK(m.count("mean_price") == 1);
  // The per-turn rewards sum to the metric: each side's gain, both sides' for pair_welfare_gain.
  for (int turn = 0; turn < state->Turn(); ++turn) {
    for (int seat = 0; seat < 60; ++seat) {
      gains += state->TurnSignal("welfare_gain", seat, turn);
      CHECK(state->TurnSignal("pair_welfare_gain", seat, turn) >= state->TurnSignal("welfare_gain", seat, turn));
    }
  }
  CHECK(gains == Approx(m.at("welfare_gain_per_encounter") * 2 * m.at("encounters")).epsilon(1e-4));
  CHECK(state->Signal("survival", 0) >= 0);
  CHECK(state->Signal("survival", 0) <= 1);
  CHECK_THROWS_AS(state->Signal("score", 0), GameError);
}

TEST_CASE("hagglers, each seeing only its own holdings, make only deals both gain from and counter the rest",
          "[sugarscape][negotiation]") {
  auto game = NegotiationGame({{"offer_value", true}});
  auto haggler = StrategyFactory::Get().Create("haggler");
  Rng rng(3);
  auto state = game->NewInitialState(7);
  int accepted_gain = 0, countered_loss = 0;
  while (!state->IsTerminal()) {
    const auto pending = state->PendingDecisions();
    if (pending.empty()) {
      REQUIRE(state->Advance());
      continue;
    }
    std::vector<SeatOutput> out;
    for (const Decision& d : pending) {
      out.push_back({d.seat, haggler->Act(*state, d, rng)});
      // The calculator's word decides its answer to an offer.
      const auto worth = std::find(d.observation.begin(), d.observation.end(), "worth");
      if (worth != d.observation.end()) {
        const bool gain = *(worth + 1) == "gain" && *(worth + 2) != "0";
        if (gain) accepted_gain += out.back().words == Words{"accept"};
        else countered_loss += out.back().words.front() == "offer" || out.back().words.front() == "walk";
      }
    }
    for (bool v : state->Apply(out)) CHECK(v);
  }
  const auto m = state->Metrics();
  CHECK(m.at("trade_success_rate") > 0.1);
  CHECK(m.at("outcome_error") == 0);
  CHECK(m.at("outcome_timeout") + m.at("outcome_walk_away") > 0);  // some pairs found no deal both gain from
  CHECK(accepted_gain > 10);
  CHECK(countered_loss > 10);
  for (int turn = 0; turn < state->Turn(); ++turn) {
    for (int seat = 0; seat < 60; ++seat) CHECK(state->TurnSignal("welfare_gain", seat, turn) >= 0);
  }
}

TEST_CASE("always_decline and the fraudster play as their names say", "[sugarscape][negotiation]") {
  auto run = [](const std::string& a, const std::string& b, bool fraud) {
    auto game = NegotiationGame({{"identities", std::string("a,b")}, {"fraud", fraud}});
    auto sa = StrategyFactory::Get().Create(a), sb = StrategyFactory::Get().Create(b);
    Rng rng(2);
    auto state = game->NewInitialState(9);
    while (!state->IsTerminal()) {
      const auto pending = state->PendingDecisions();
      if (pending.empty()) {
        state->Advance();
        continue;
      }
      std::vector<SeatOutput> out;
      for (const Decision& d : pending) out.push_back({d.seat, (d.seat % 2 == 0 ? sa : sb)->Act(*state, d, rng)});
      state->Apply(out);
    }
    return state->Metrics();
  };
  const auto declined = run("always_decline", "always_decline", false);
  CHECK(declined.at("outcome_both_declined") == 1.0);
  CHECK(declined.at("trades") == 0);
  const auto fraud = run("fraudster", "fraudster", true);
  REQUIRE(fraud.at("trades") > 0);
  CHECK(fraud.at("fraud_rate") == 1.0);
  CHECK(fraud.at("volume") == 0);
  const auto honest = run("mrs_negotiator", "mrs_negotiator", true);
  CHECK(honest.at("fraud_rate") == 0.0);
}

TEST_CASE("bad negotiation parameters are refused naming the parameter", "[sugarscape][negotiation]") {
  auto refused = [](std::map<std::string, ParamValue> p) -> std::string {
    try {
      NegotiationGame(std::move(p));
    } catch (const GameError& e) {
      return e.param();
    }
    return "";
  };
  CHECK(refused({{"trade_mode", std::string("barter")}}) == "trade_mode");
  CHECK(refused({{"identities", std::string("good guy")}}) == "identities");
  CHECK(refused({{"identities", std::string("a,a")}}) == "identities");
}
