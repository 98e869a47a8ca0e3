// `petra train`'s process around the trainer loop: the run checked before anything is written, its
// directory made (or reopened, with what the resume changes recorded), and how it ended said.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "compute/serialize/atomic_file.hpp"
#include "datasets/imagenet.hpp"
#include "training/conv_algorithm_file.hpp"
#include "training/metrics_records.hpp"
#include "training/prepared_run.hpp"
#include "training/restore_points.hpp"
#include "training/run_dir.hpp"
#include "training/setup.hpp"

namespace petra {
namespace {

struct bad_output_place : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// config.yaml: the resolved config without output.name, so that `petra train <run>/config.yaml`
/// repeats the run into a new directory.
void write_config(const run_dir& dir, config::run_config c) {
  c.output.name.clear();
  write_file_atomically(dir.file("config.yaml"), [&](std::ostream& out) { out << config::to_yaml(c); });
}

/// A resumed process's first line: where it continues from and what its overrides changed; those
/// changes are config.yaml's from here on.
void record_resume(const prepared_run& p, run_dir& dir) {
  if (!p.resume_changes.empty()) write_config(dir, p.resumed_config);
  resume_record line;
  line.epoch = p.epoch;
  line.position = p.position;
  line.from = p.resume_cut ? "snapshot" : "checkpoint";
  line.micro_batch = p.resume_cut ? p.resume_position : (p.epoch - 1) * p.per_epoch + p.position;
  line.completed_before = p.completed_before;
  for (const config::key_change& c : p.resume_changes) {
    line.changed.push_back({c.key, c.before, c.after});
    std::printf("resume changes %s: %s -> %s (config.yaml updated)\n", c.key.c_str(), c.before.c_str(),
                c.after.c_str());
  }
  dir.log(json_record::write(line));
}

}  // namespace

int run_training(const train_options& options, const runtime_factory& make_runtime) {
  prepared_run p;
  try {
    p = prepare(options, make_runtime);
  } catch (const std::exception& e) {
    std::string what = e.what();
    // --trace is output.trace=true: a refusal of the key names the flag the user typed.
    if (options.trace_flag && what.rfind("output.trace:", 0) == 0)
      what = "--trace (output.trace)" + what.substr(12);
    std::cerr << "petra train: " << what << "\n";
    return 2;
  }
  std::string made;  // the run directory, once it exists
  try {
    run_dir dir = [&] {
      if (!options.resume.empty()) return run_dir::reopen(p.run_path);
      try {
        return run_dir::create(p.run_path);
      } catch (const run_dir_refused& e) {  // bad input: output.dir or output.name
        throw bad_output_place(
            std::string("output.dir '") + p.cfg.output.dir + "', output.name '" +
            (p.cfg.output.name.empty() ? std::string("(a generated name)") : p.cfg.output.name) +
            "': " + e.what());
      }
    }();
    made = dir.path();
    if (options.on_run_dir) options.on_run_dir(dir.path());
    if (options.resume.empty()) {
      write_config(dir, p.cfg);
      if (auto names = p.data.train->class_names(); !names.empty())
        data::write_class_index(names, dir.path());
    } else {
      record_resume(p, dir);
    }
    std::printf(
        "petra train: %s, %s, runtime %s, J = %zu stages, %lld micro-batches of %d per epoch, k = %d, lr "
        "%.4g%s -> %s\n",
        config::to_string(p.cfg.model.arch).c_str(), p.method.str().c_str(),
        config::to_string(p.cfg.runtime.mode).c_str(), stage_sizes(p.cfg).size(),
        static_cast<long long>(p.per_epoch), p.cfg.training.micro_batch, p.cfg.training.accumulation,
        p.opt.lr,
        options.resume.empty() ? ""
        : p.resume_cut         ? (" (resuming inside epoch " +
                          std::to_string((p.resume_position - 1) / p.per_epoch + 1) + " from its snapshot)")
                             .c_str()
                       : (" (resuming epoch " + std::to_string(p.epoch) + " at micro-batch " +
                          std::to_string(p.position) + ")")
                             .c_str(),
        dir.path().c_str());
    std::fflush(stdout);
    const int status = train_prepared(p, options, dir);
    // The algorithms this process's GPU stages chose, so that a run can repeat them
    // (runtime.cudnn_algorithms); nothing without a GPU stage here.
    write_conv_algorithms(p.cfg, dir.path());
    return status;
  } catch (const bad_output_place& e) {
    std::cerr << "petra train: " << e.what() << "\n";
    return 2;
  } catch (const stopped_at_snapshot& s) {
    std::printf("\nstopped after the snapshot before micro-batch %lld as asked\n",
                static_cast<long long>(s.position));
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "\npetra train: failed: " << e.what() << "\n";
    // Every file of the run directory is written atomically: what a resume needs is whole.
    if (!made.empty() && std::filesystem::exists(made + "/checkpoint.safetensors"))
      std::cerr
          << "petra train: " << made
          << ": its last checkpoint (and snapshot, if any) is whole; continue with: petra train --resume "
          << made << "\n";
    return 1;
  }
}

}  // namespace petra
