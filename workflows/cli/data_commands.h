// `troupe data qa`: builds the Factbook QA dataset (passages, train and test
// questions) from the cached sources and reports its counts. `troupe data
// reading` and `troupe data renamed`: print the reading documents and the
// renamed prose that pretraining mixes in.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace troupe::cli {

struct DataArgs {
  std::string out;                   // default: the data cache's qa/factbook folder
  std::vector<std::string> regions;  // Factbook region folders; empty: all
  double test_share = 0.25;
  int comparisons = 4;
  unsigned long long seed = 1;
  bool index = false;  // also build the search index
  int count = 3;       // reading documents (or renamed prose windows) to print
  int seq_len = 256;   // reading documents: the training sequence they must fit
  double facts = 0.0;  // reading documents: the share that are fact lists (pretrain.reading_fact_share)
  int countries = 3;   // reading documents: countries per passage document (pretrain.reading_countries)
  bool short_passages = false;  // reading documents: each passage its answer's clause (pretrain.reading_short_passages)
  double echo = 0.0;   // renamed prose: share of windows with one of their sentences said again
  std::string corpus = "moby_dick";  // renamed prose: the corpus its windows come from
};

void AddDataCommands(CLI::App& app, DataArgs& args);

// Runs the data command `app` parsed; its exit status, or -1 when it is not one.
int RunDataCommand(CLI::App& app, const DataArgs& args);

}  // namespace troupe::cli
