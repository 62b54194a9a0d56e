// A tiny language model that reads games as text, for tests: a small BPE
// vocabulary learnt on the text views of played Red-Black and split_facts
// games, and a one-layer Llama that reads through it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/game.h"
#include "core/text/bpe_trainer.h"
#include "core/text/tokenizer_folder.h"
#include "tests/test_support.h"

namespace troupe::testing {

// Every text view a few played games of both kinds show.
inline std::string GameTexts() {
  std::string text;
  auto play = [&](const Game& game, uint64_t seed, auto answer) {
    auto s = game.NewInitialState(seed);
    while (!s->IsTerminal()) {
      std::vector<SeatOutput> out;
      for (const Decision& d : s->PendingDecisions()) {
        text += d.text + "\n";
        out.push_back({d.seat, answer(d, seed)});
      }
      s->Apply(out);
    }
  };
  auto red_black = MakeGame("red_black", {{"team_size", int64_t{3}}, {"rounds", int64_t{3}}});
  auto split_facts = MakeGame("split_facts", {{"entities", int64_t{4}}, {"values", int64_t{4}}, {"asks", int64_t{1}}});
  for (uint64_t seed = 0; seed < 8; ++seed) {
    play(*red_black, seed, [](const Decision& d, uint64_t s) -> std::vector<std::string> {
      if (d.phase == "will") return {std::to_string(s % 4)};
      return {s % 2 ? "red" : "black", "we", "trust"};
    });
    play(*split_facts, seed, [](const Decision&, uint64_t) -> std::vector<std::string> { return {"gold"}; });
  }
  return text;
}

// A small BPE vocabulary learnt on those texts (ChatML's tokens included), as a folder.
inline const std::string& TinyTokenizer() {
  static const std::string dir = [] {
    BpeTrainerOptions o;
    o.vocab_size = 600;
    BpeTrainer trainer(o);
    trainer.Add(GameTexts());
    const std::string d = FreshTempPath("troupe-text-tokenizer");
    std::filesystem::create_directories(d);
    WriteTokenizerFolder(Tokenizer(trainer.Train()), d);
    return d;
  }();
  return dir;
}

inline constexpr char kTinyLlama[] =
    "llama { hidden_size: 32 heads: 2 kv_heads: 1 layers: 1 intermediate_size: 64 max_len: 512 }";

// `workflow` with every model written `transformer` made the tiny Llama reading text.
inline std::string ReadingText(std::string workflow, const std::string& transformer) {
  const std::string llama = std::string(kTinyLlama) + " tokenizer: \"" + TinyTokenizer() + "\"";
  for (size_t at = workflow.find(transformer); at != std::string::npos; at = workflow.find(transformer, at)) {
    workflow.replace(at, transformer.size(), llama);
    at += llama.size();
  }
  return workflow;
}

}  // namespace troupe::testing
