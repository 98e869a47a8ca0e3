// The `petra` command line: train, node, migrate, sweep, report, eval, model-info, memory-model.
#include "app/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "app/commands.hpp"

#ifndef PETRA_VERSION
#define PETRA_VERSION "unknown"
#endif

namespace petra::app {
namespace {

/// A flag's number within [low, high]: CLI11's own range check prints its bounds as doubles
/// ("Value 0 not in range 0.000000 to 1797693134..."); this says what the flag takes.
CLI::Validator number_in(double low, double high, bool integer) {
  std::string wanted = integer ? "an integer" : "a number";
  if (high == std::numeric_limits<double>::max())
    wanted +=
        low > 0 && !integer ? " above 0" : " of at least " + std::to_string(static_cast<long long>(low));
  else
    wanted += " from " + std::to_string(static_cast<long long>(low)) + " to " +
              std::to_string(static_cast<long long>(high));
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        std::size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        const bool whole = integer ? value == std::floor(value) : true;
        const bool in = integer || low > 0 ? value >= low : value > low;
        if (used != text.size() || text.empty() || !std::isfinite(value) || !whole || !in || value > high)
          return "expected " + wanted + ", got '" + text + "'";
        return std::string();
      },
      wanted);
}

CLI::Validator positive_integer() { return number_in(1, std::numeric_limits<double>::max(), true); }
CLI::Validator positive_seconds() {
  return number_in(std::numeric_limits<double>::min(), std::numeric_limits<double>::max(), false);
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App cli{"petra: PETRA training of reversible networks (RevNets)"};
  cli.require_subcommand(1);
  cli.set_version_flag("--version", std::string("petra ") + PETRA_VERSION, "Print petra's version and exit");

  train_options train;
  auto* train_cmd = cli.add_subcommand("train", "Train a model from a config file or preset name");
  auto* config_opt = train_cmd->add_option("config", train.config,
                                           "YAML config file, or a preset: default, backprop, ci_smoke, ...");
  auto* resume_opt =
      train_cmd->add_option("--resume", train.resume, "Continue the run in this run directory");
  config_opt->excludes(resume_opt);
  auto* stop_opt = train_cmd->add_option("--stop-after-epoch", train.stop_after_epoch,
                                         "Stop after this epoch (checkpointed; continue with --resume)");
  train_cmd->add_option("--set", train.sets, "Override a config value, e.g. --set training.epochs=10")
      ->allow_extra_args(false);
  std::string choices = "Named choices of the config (--set KEY=NAME):\n";
  for (const auto& [key, names] : config::choice_keys()) choices += "  " + key + ": " + names + "\n";
  train_cmd->footer(choices);
  bool trace = false;
  train_cmd->add_flag(
      "--trace", trace,
      "Write trace.json, the run's timeline (same as --set output.trace=true; see output.trace_steps)");

  node_options node;
  auto* node_cmd = cli.add_subcommand("node", "Host stage actors for a coordinator (pipeline.nodes)");
  node_cmd->add_option("--listen", node.listen, "host:port to listen on (default 127.0.0.1:0, a free port)");
  node_cmd
      ->add_option(
          "--threads", node.threads,
          "Scheduler threads (default: one per core, at least 2; CPU stages that take turns compute on them)")
      ->check(positive_integer());
  node_cmd->add_option("--tls-cert", node.tls_cert, "PEM certificate of this node (TLS)");
  node_cmd->add_option("--tls-key", node.tls_key, "PEM private key of this node (TLS)");
  node_cmd->add_option("--tls-ca", node.tls_ca, "PEM CA certificate that must sign every peer (TLS)");
  node_cmd
      ->add_option("--silence-timeout", node.silence_timeout,
                   "Seconds a connection (a coordinator's, another node's) may be silent before this node "
                   "closes it and stops the stages of a coordinator gone that way (default 300)")
      ->check(number_in(1.0, 86400.0, false));

  sweep_options sweep;
  auto* sweep_cmd = cli.add_subcommand("sweep", "Train a config over a grid of values; table and plot");
  sweep_cmd->add_option("config", sweep.config, "YAML config file or preset")->required();
  sweep_cmd->add_option("--grid", sweep.grid, "key=v1,v2,... (repeat for a product grid)")
      ->required()
      ->allow_extra_args(false);
  sweep_cmd->add_option("--set", sweep.sets, "Override a config value for every run")
      ->allow_extra_args(false);
  sweep_cmd->add_option("--output", sweep.output, "Parent directory (default: sweeps)");
  sweep_cmd->add_option("--name", sweep.name, "Sweep directory name (default: sweep-<time>)");

  report_options report;
  auto* report_cmd =
      cli.add_subcommand("report", "Plots and report.html of run directories (several overlay)");
  report_cmd->add_option("runs", report.runs, "Run directories written by petra train")->required();
  report_cmd->add_option("--output", report.output,
                         "Directory for report.html and the plots (default: <first run>/report)");

  migrate_options migrate;
  auto* migrate_cmd =
      cli.add_subcommand("migrate", "Move a stage of a running training at its next drained point");
  migrate_cmd->add_option("run", migrate.run, "Run directory of the running `petra train`")->required();
  migrate_cmd->add_option("--stage", migrate.stage, "The stage to move (1-based)")->required();
  migrate_cmd
      ->add_option("--to", migrate.to, "Where: DEVICE[/THREADS][@NODE], e.g. sim:0, cpu/2, cpu@HOST:PORT")
      ->required();
  migrate_cmd
      ->add_option("--timeout", migrate.timeout_seconds, "Seconds to wait for the answer (default 600)")
      ->check(positive_seconds());

  std::string eval_target;
  std::vector<std::string> eval_sets;
  auto* eval_cmd = cli.add_subcommand("eval", "Evaluate a checkpoint on the test set");
  eval_cmd->add_option("target", eval_target, "Run directory or checkpoint .safetensors file")->required();
  eval_cmd->add_option("--set", eval_sets, "Override a config value (e.g. data.path=...)")
      ->allow_extra_args(false);
  int eval_recalibrate = 0;
  eval_cmd
      ->add_option("--bn-recalibrate", eval_recalibrate,
                   "First re-estimate the BN running statistics from N training micro-batches")
      ->check(positive_integer());

  std::string info_config = "default";
  std::vector<std::string> info_sets;
  model_flags flags;
  auto add_model_flags = [&](CLI::App* cmd) {
    cmd->add_option("config", info_config, "YAML config file or preset (default: default)");
    cmd->add_option("--set", info_sets, "Override a config value")->allow_extra_args(false);
    cmd->add_option("--arch", flags.arch, "Model preset: " + config::choice_list<config::model_arch>());
    cmd->add_option("--classes", flags.classes, "Number of classes")->check(positive_integer());
    cmd->add_option("--input", flags.input, "Input C,H,W, e.g. 3,224,224")
        ->delimiter(',')
        ->expected(3)
        ->check(positive_integer());
    cmd->add_option("--stem", flags.stem, "Stem: cifar or imagenet");
    cmd->add_option("--micro-batch", flags.micro_batch, "Micro-batch size")->check(positive_integer());
    cmd->add_option("--k", flags.accumulation, "Gradient accumulation k")->check(positive_integer());
  };
  auto* info_cmd = cli.add_subcommand("model-info", "Per-stage parameter counts and activation sizes");
  add_model_flags(info_cmd);
  auto* memory_cmd = cli.add_subcommand("memory-model", "The paper's memory table and petra's bytes");
  add_model_flags(memory_cmd);

  // A first word that is no flag and no subcommand: CLI11 would say only that one is required.
  std::vector<std::string> names;
  for (const CLI::App* sub : cli.get_subcommands({})) names.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    std::cerr << "petra: unknown subcommand '" << argv[1] << "'; the subcommands are: " << list
              << " (petra --help)\n";
    return 2;
  }
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (*train_cmd) {
    if (train.config.empty() && train.resume.empty()) {
      std::cerr << "petra train: give a config (file or preset) or --resume <run-dir>\n";
      return 2;
    }
    // 0 would mean no stop (the option left out): a value given must name an epoch.
    if (stop_opt->count() > 0 && train.stop_after_epoch < 1) {
      std::cerr << "petra train: --stop-after-epoch " << train.stop_after_epoch
                << ": expected an epoch (1 or more); leave the flag out to train to the end\n";
      return 2;
    }
    if (trace) {
      train.sets.push_back("output.trace=true");
      train.trace_flag = true;
    }
    return train_command(train);
  }
  if (*eval_cmd) return eval_command(eval_target, eval_sets, eval_recalibrate);
  if (*node_cmd) return node_command(node);
  if (*migrate_cmd) return migrate_command(migrate);
  if (*sweep_cmd) return sweep_command(sweep);
  if (*report_cmd) return report_command(report);
  if (*info_cmd) return model_info_command(info_config, info_sets, flags);
  if (*memory_cmd) return memory_model_command(info_config, info_sets, flags);
  return 2;
}

}  // namespace petra::app
