// The language model's commands: per-token log-probabilities, continuations.
#include "workflows/cli/lm_commands.h"

#include <cmath>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include "core/base/errors.h"
#include "core/models/language_model.h"
#include "core/models/model_pool.h"
#include "core/text/tokenizer_folder.h"
#include "workflows/run/reading_probes.h"

namespace troupe::cli {

namespace {

int Score(const TextArgs& a) {
  const Tokenizer tokenizer = LoadTokenizer(a.tokenizer.empty() ? a.model : a.tokenizer);
  const auto model = LanguageModel::Load(a.model, a.device);
  const std::vector<int> ids = tokenizer.Encode(ReadTextInput(a.file), !a.no_special);
  const std::vector<float> logp = model->Score(ids);
  double total = 0;
  for (float v : logp) total += v;
  const double mean = logp.empty() ? 0.0 : total / logp.size();
  if (a.json) {
    nlohmann::json tokens = nlohmann::json::array();
    for (size_t i = 0; i < ids.size(); ++i) {
      tokens.push_back({{"id", ids[i]},
                        {"text", tokenizer.Decode({ids[i]})},
                        {"logprob", i == 0 ? nlohmann::json(nullptr) : nlohmann::json(logp[i - 1])}});
    }
    std::cout << nlohmann::json{{"tokens", tokens},
                                {"sum_logprob", total},
                                {"mean_logprob", mean},
                                {"perplexity", std::exp(-mean)}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << std::fixed << std::setprecision(3);
  for (size_t i = 1; i < ids.size(); ++i) {
    std::cout << std::setw(8) << ids[i] << std::setw(10) << logp[i - 1] << "  "
              << nlohmann::json(tokenizer.Decode({ids[i]})).dump() << "\n";
  }
  std::cout << ids.size() << " tokens, mean log-probability " << mean << ", perplexity " << std::exp(-mean) << "\n";
  return 0;
}

int Generate(const TextArgs& a) {
  const Tokenizer tokenizer = LoadTokenizer(a.tokenizer.empty() ? a.model : a.tokenizer);
  const auto model = LanguageModel::Load(a.model, a.device);
  std::vector<int> stops;
  for (const char* s : {"<|endoftext|>", "<|im_end|>"}) {
    if (auto id = tokenizer.TokenId(s)) stops.push_back(*id);
  }
  const std::vector<int> prompt = tokenizer.Encode(a.prompt, !a.no_special);
  const std::vector<int> out = model->Generate(prompt, a.max_new, a.greedy, a.temperature, a.seed, stops);
  if (a.json) {
    std::cout << nlohmann::json{{"prompt_ids", prompt}, {"ids", out}, {"text", tokenizer.Decode(out)}}.dump() << "\n";
  } else {
    std::cout << a.prompt << tokenizer.Decode(out) << "\n";
  }
  return 0;
}

int Probe(const TextArgs& a) {
  const Tokenizer tokenizer = LoadTokenizer(a.tokenizer.empty() ? a.model : a.tokenizer);
  const auto model = LanguageModel::Load(a.model, a.device);
  const std::vector<ProbeScore> probes = ProbeReading(*model, tokenizer);
  if (a.json) {
    nlohmann::json j = nlohmann::json::object();
    for (const ProbeScore& p : probes) {
      j[p.name] = {
          {"score", p.score}, {"count", p.count}, {"evidence_gain", p.evidence_gain}, {"examples", p.examples}};
    }
    // Examples hold model text, which may stop inside a UTF-8 character.
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << "probe        score   count   evidence gain (nats/token)\n" << std::fixed << std::setprecision(3);
  for (const ProbeScore& p : probes) {
    std::cout << std::left << std::setw(10) << p.name << std::right << std::setw(8) << p.score << std::setw(8)
              << p.count << std::setw(11) << std::showpos << p.evidence_gain << std::noshowpos << "\n";
  }
  for (const ProbeScore& p : probes) {
    for (const std::string& e : p.examples) {
      std::cout << p.name << ": " << nlohmann::json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    }
  }
  return 0;
}

}  // namespace

void AddLmCommands(CLI::App& app, TextArgs& a) {
  CLI::App* lm = app.add_subcommand("lm", "score a text or continue a prompt with a Hugging Face model folder");
  lm->require_subcommand(1);
  CLI::App* score = lm->add_subcommand("score", "token ids and per-token log-probabilities of a text");
  CLI::App* generate = lm->add_subcommand("generate", "continue a prompt");
  CLI::App* probe = lm->add_subcommand(
      "probe", "in-context reading: induction, copying a name, answering from invented passages (scores in [0, 1])");
  for (CLI::App* c : {score, generate, probe}) {
    c->add_option("--model", a.model, "a folder with config.json, model.safetensors and tokenizer.json")->required();
    c->add_option("--tokenizer", a.tokenizer, "a tokenizer.json elsewhere than the model folder");
    c->add_option("--threads", a.threads, "LibTorch threads (default 2)");
    c->add_option("--device", a.device, "cpu (default) or cuda:N");
    c->add_flag("--json", a.json, "print one JSON object");
    c->add_flag("--no-special", a.no_special, "read special tokens (<|im_start|>, ...) as plain text");
  }
  score->add_option("--file", a.file, "the text (default: standard input)");
  generate->add_option("--prompt", a.prompt, "the text to continue")->required();
  generate->add_flag("--greedy", a.greedy, "the most likely token each step (default: sample)");
  generate->add_option("--max-new", a.max_new, "tokens to add at most (default 32)");
  generate->add_option("--temperature", a.temperature, "sampling temperature (default 1)");
  generate->add_option("--seed", a.seed, "sampling seed (default 1)");
}

int RunLmCommand(CLI::App& command, const TextArgs& a) {
  SetTorchThreads(a.threads);
  if (command.get_name() == "score") return Score(a);
  if (command.get_name() == "probe") return Probe(a);
  return Generate(a);
}

}  // namespace troupe::cli
