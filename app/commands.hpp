// The sub-commands of `petra`. Each returns the process exit code:
// 0 success, 1 failure while running, 2 bad input (config, data, flags).
#pragma once

#include <string>
#include <vector>

#include "training/train_loop.hpp"

namespace petra::app {

int train_command(const train_options& options);
/// The signal (SIGINT, SIGTERM) that arrived after the last train_command's run completed, else 0;
/// reading it clears it. The run lost nothing; a caller with more to do (a sweep) stops there.
int signal_after_completed_run();

struct node_options {
  std::string listen = "127.0.0.1:0";     // host:port; port 0 picks a free one (printed)
  int threads = 0;                        // scheduler threads; 0: node_scheduler_threads's default
  std::string tls_cert, tls_key, tls_ca;  // PEM files; required to listen beyond loopback
  double silence_timeout = 300;           // seconds a connection may stay silent before it is closed
};
/// Hosts stage actors for coordinators until SIGINT/SIGTERM.
int node_command(const node_options& options);

struct sweep_options {
  std::string config;             // file or preset
  std::vector<std::string> sets;  // fixed overrides for every run
  std::vector<std::string> grid;  // "key=v1,v2,..." (several: the cartesian product)
  std::string output = "sweeps";  // parent directory of the sweep's directory
  std::string name;               // "" = sweep-<UTC time>
};
/// Runs a config over a grid of values; writes a table (Markdown and CSV) and a plot (PNG).
int sweep_command(const sweep_options& options);

struct report_options {
  std::vector<std::string> runs;  // run directories; several overlay their curves
  std::string output;             // "" = <first run directory>/report
};
/// Plots and report.html of one or more run directories (their config.yaml and metrics.jsonl).
int report_command(const report_options& options);

/// Evaluates a checkpoint (a file, or the latest one in a run directory) on the test set.
/// `recalibrate` > 0: the running BN statistics re-estimated first from that many training micro-batches.
int eval_command(const std::string& target, const std::vector<std::string>& sets, int recalibrate = 0);

struct migrate_options {
  std::string run;               // the run directory of a running `petra train`
  int stage = 0;                 // 1-based
  std::string to;                // DEVICE[/THREADS][@NODE]
  double timeout_seconds = 600;  // how long to wait for the trainer's answer
};
/// Asks the training running in a run directory to move a stage at its next drained point and waits
/// for its answer: 0 moved, 2 refused or a bad request (nothing asked), 1 no answer in time.
int migrate_command(const migrate_options& options);

/// Model flags of model-info and memory-model: they replace the config's model without
/// tying it to a dataset (e.g. RevNet-50 on 3×224×224 with 1000 classes).
struct model_flags {
  std::string arch;        // "" = the config's
  int classes = 0;         // 0 = the config's
  std::vector<int> input;  // C,H,W; empty = the config's
  std::string stem;        // cifar | imagenet; "" = the config's
  int micro_batch = 0;     // 0 = the config's
  int accumulation = 0;    // 0 = the config's
};

/// Per-stage parameters and activation sizes of the model a config describes.
int model_info_command(const std::string& config, const std::vector<std::string>& sets,
                       const model_flags& flags);

/// The paper's memory table (and our runtime's bytes) for the model and batch of a config.
int memory_model_command(const std::string& config, const std::vector<std::string>& sets,
                         const model_flags& flags);

}  // namespace petra::app
