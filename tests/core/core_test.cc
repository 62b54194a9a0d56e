// Torch-free core pieces: typed params, vocabulary, credit assignment, record files.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/base/record_file.h"
#include "core/credit.h"
#include "core/params.h"
#include "core/vocab.h"

using namespace troupe;

namespace {
CallRecord Rec(int group, int role, int turn, double reward) {
  CallRecord r;
  r.group = group;
  r.role = role;
  r.turn = turn;
  r.reward = reward;
  return r;
}
std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("troupe-test-" + name)).string();
}
}  // namespace

TEST_CASE("params check names, types and ranges", "[params]") {
  Params p({{"n", ParamType::kInt, int64_t{3}, "", 1, 5}, {"x", ParamType::kReal, 0.5, ""}});
  CHECK(p.Int("n") == 3);
  p.Set("x", int64_t{2});  // ints are accepted for reals
  CHECK(p.Real("x") == 2.0);
  CHECK_THROWS_WITH(p.Set("n", int64_t{9}), Catch::Contains("outside [1, 5]"));
  CHECK_THROWS_WITH(p.Set("n", std::string("3")), Catch::Contains("takes a int"));
  CHECK_THROWS_WITH(p.Set("m", int64_t{1}), Catch::Contains("unknown parameter 'm'"));
}

TEST_CASE("vocabulary encodes words and decodes up to end of sequence", "[vocab]") {
  Vocab v({"red", "black", "red"}, {"team_a", "team_b"});
  CHECK(v.size() == 4 + 2 + 2);
  CHECK(v.Id("red") != v.Id("black"));
  CHECK(v.Id("purple") == Vocab::kUnk);
  CHECK(v.RoleToken(1) == 5);
  CHECK(v.Decode({v.Id("black"), v.RoleToken(0), v.Id("red"), Vocab::kEos, v.Id("red")}) ==
        std::vector<std::string>{"black", "red"});
}

TEST_CASE("GRPO normalises rewards within (group, role, turn) groups", "[credit]") {
  std::vector<CallRecord> recs = {Rec(0, 0, 0, 1.0),  Rec(0, 0, 0, 3.0), Rec(0, 0, 1, 10.0),
                                  Rec(0, 0, 1, 10.0), Rec(1, 0, 0, 5.0), Rec(1, 0, 0, 7.0)};
  CreditAssigner grpo({Estimator::kGrpo});
  auto stats = grpo.Assign(recs);
  CHECK(stats.groups == 3);
  CHECK(recs[0].advantage == Approx(-1.0 / std::sqrt(2.0)).epsilon(1e-4));
  CHECK(recs[1].advantage == Approx(1.0 / std::sqrt(2.0)).epsilon(1e-4));
  CHECK(recs[2].advantage == Approx(0.0));                // equal rewards carry no signal
  CHECK(recs[4].advantage == Approx(recs[0].advantage));  // groups are separate
}

TEST_CASE("grouping by role keeps roles apart", "[credit]") {
  std::vector<CallRecord> recs = {Rec(0, 0, 0, 1.0), Rec(0, 1, 0, 100.0), Rec(0, 0, 0, 3.0), Rec(0, 1, 0, 300.0)};
  CreditAssigner by_role({Estimator::kGrpo, {GroupKey::kEpisodeGroup, GroupKey::kRole}});
  by_role.Assign(recs);
  CHECK(recs[0].advantage == Approx(recs[1].advantage).epsilon(1e-4));
  CreditAssigner pooled({Estimator::kGrpo, {GroupKey::kEpisodeGroup}});
  pooled.Assign(recs);
  CHECK(recs[0].advantage < 0);
  CHECK(recs[2].advantage < 0);  // role 0's good call looks bad next to role 1
}

TEST_CASE("RLOO subtracts the mean of the other members", "[credit]") {
  std::vector<CallRecord> recs = {Rec(0, 0, 0, 1.0), Rec(0, 0, 0, 2.0), Rec(0, 0, 0, 6.0)};
  CreditAssigner rloo({Estimator::kRloo});
  rloo.Assign(recs);
  CHECK(recs[0].advantage == Approx(1.0 - 4.0));
  CHECK(recs[2].advantage == Approx(6.0 - 1.5));
}

TEST_CASE("REINFORCE keeps a running baseline per (role, turn) and saves it", "[credit]") {
  CreditAssigner rf({Estimator::kReinforce, {GroupKey::kRole, GroupKey::kTurn}, 1e-6, 0.5});
  std::vector<CallRecord> first = {Rec(0, 0, 0, 2.0), Rec(1, 0, 0, 4.0)};
  rf.Assign(first);
  CHECK(first[0].advantage == Approx(-1.0));  // first baseline: the batch mean 3
  std::vector<CallRecord> second = {Rec(0, 0, 0, 5.0)};
  CreditAssigner restored({Estimator::kReinforce, {GroupKey::kRole, GroupKey::kTurn}, 1e-6, 0.5});
  restored.LoadState(rf.SaveState());
  std::vector<CallRecord> second_copy = second;
  rf.Assign(second);
  restored.Assign(second_copy);
  CHECK(second[0].advantage == Approx(2.0));  // baseline still 3
  CHECK(second_copy[0].advantage == Approx(second[0].advantage));
}

TEST_CASE("record files read back every complete record of a torn file", "[records]") {
  const std::string path = TempPath("records.bin");
  std::remove(path.c_str());
  {
    RecordWriter w(path);
    w.Write("first");
    w.Write(std::string(1000, 'x'));
    w.Write("third");
  }
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);  // tear the last record
  RecordReader r(path);
  CHECK(r.Next().value() == "first");
  CHECK(r.Next().value().size() == 1000);
  CHECK_FALSE(r.Next().has_value());
  CHECK(r.error() == "truncated record");
  std::remove(path.c_str());
}

TEST_CASE("record files detect a corrupted byte", "[records]") {
  const std::string path = TempPath("corrupt.bin");
  std::remove(path.c_str());
  {
    RecordWriter w(path);
    w.Write("hello world");
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(14);
    f.put('X');
  }
  RecordReader r(path);
  CHECK_FALSE(r.Next().has_value());
  CHECK(r.error() == "corrupt record data");
  std::remove(path.c_str());
}

TEST_CASE("inert calls get their group's mean outcome but keep their own format reward", "[credit]") {
  std::vector<CallRecord> recs = {Rec(0, 0, 0, 1.0), Rec(0, 0, 0, 3.0), Rec(0, 0, 0, 10.0)};
  recs[2].inert = true;
  recs[2].role_reward = -1.0;
  recs[2].reward += recs[2].role_reward;  // outcome 10, format -1
  CreditAssigner credit({Estimator::kRloo});
  credit.Assign(recs);
  CHECK(recs[2].reward == Approx(2.0 - 1.0));  // mean outcome of the pivotal calls, own format
  CreditConfig keep{Estimator::kRloo};
  keep.baseline_inert = false;
  std::vector<CallRecord> kept = {Rec(0, 0, 0, 1.0), Rec(0, 0, 0, 3.0), Rec(0, 0, 0, 10.0)};
  kept[2].inert = true;
  CreditAssigner(keep).Assign(kept);
  CHECK(kept[2].reward == Approx(10.0));
}

TEST_CASE("GRPO, RLOO and REINFORCE give their exact advantages on a hand-made batch", "[credit][estimators]") {
  // Group 0 (role 0, turn 0): rewards 1 2 3 6 (mean 3, sample std sqrt(14/3)); group 1: one call.
  const std::vector<CallRecord> batch = {Rec(0, 0, 0, 1.0), Rec(0, 0, 0, 2.0), Rec(0, 0, 0, 3.0), Rec(0, 0, 0, 6.0),
                                         Rec(1, 0, 0, 4.0)};
  const double sd = std::sqrt(14.0 / 3.0);
  auto assign = [&](CreditConfig config) {
    std::vector<CallRecord> recs = batch;
    CreditAssigner(config).Assign(recs);
    std::vector<double> a;
    for (const auto& r : recs) a.push_back(r.advantage);
    return a;
  };
  const auto grpo = assign({Estimator::kGrpo});
  const std::vector<double> grpo_expected = {-2 / sd, -1 / sd, 0.0, 3 / sd, 0.0};  // a lone call carries no signal
  const auto rloo = assign({Estimator::kRloo});
  const std::vector<double> rloo_expected = {1 - 11.0 / 3, 2 - 10.0 / 3, 3 - 9.0 / 3, 6 - 6.0 / 3, 0.0};
  for (size_t i = 0; i < batch.size(); ++i) {
    INFO("record " << i);
    CHECK(grpo[i] == Approx(grpo_expected[i]).margin(1e-6));
    CHECK(rloo[i] == Approx(rloo_expected[i]).margin(1e-12));
  }
  // REINFORCE pools episode groups: one key (role 0, turn 0), first baseline = the batch mean 16/5;
  // then baseline <- 0.9 baseline + 0.1 mean.
  CreditAssigner reinforce({Estimator::kReinforce});
  std::vector<CallRecord> first = batch;
  reinforce.Assign(first);
  for (size_t i = 0; i < batch.size(); ++i) CHECK(first[i].advantage == Approx(batch[i].reward - 3.2).margin(1e-12));
  std::vector<CallRecord> second = {Rec(0, 0, 0, 5.0), Rec(2, 0, 0, 7.0)};
  reinforce.Assign(second);
  CHECK(second[0].advantage == Approx(5.0 - 3.2).margin(1e-12));
  CHECK(second[1].advantage == Approx(7.0 - 3.2).margin(1e-12));
  std::vector<CallRecord> third = {Rec(0, 0, 0, 0.0)};
  reinforce.Assign(third);
  CHECK(third[0].advantage == Approx(-(0.9 * 3.2 + 0.1 * 6.0)).margin(1e-12));
}
