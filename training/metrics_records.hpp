// The epoch and summary lines of metrics.jsonl, described once for whoever writes or reads them:
// an epoch's training and test figures, timing and stages (stage_metrics.hpp); a run's end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "training/accounting.hpp"
#include "training/json_record.hpp"
#include "training/stage_metrics.hpp"

namespace petra {

/// A `{"event":"epoch"}` line. Optional where a reader may find a field absent (petra writes them all).
struct epoch_record {
  int epoch = 0;
  std::string runtime;    // runtime.mode
  std::string evaluated;  // on what weights the test figures were taken
  std::optional<double> train_loss, train_accuracy, test_loss, test_accuracy, images_per_s, epoch_seconds, lr,
      loader_wait_seconds;
  std::optional<int64_t> bad_images;
  std::vector<stage_record> stages;
  // Actor runtimes (pipeline_balance.hpp): the busiest stage by compute, the rate it allows, the
  // measured rate's share of it, and Σ busy / max busy.
  std::optional<int> busiest_stage;
  std::optional<double> ideal_images_per_s, pipeline_efficiency, compute_over_busiest;
};

template <class Fields>
void describe(Fields& f, epoch_record& e) {
  using json_record::presence;
  f.tag("event", "epoch");
  f("epoch", e.epoch);
  f("runtime", e.runtime, presence::optional);
  f("evaluated", e.evaluated, presence::optional);
  f("train_loss", e.train_loss, presence::optional);
  f("train_accuracy", e.train_accuracy, presence::optional);
  f("test_loss", e.test_loss, presence::optional);
  f("test_accuracy", e.test_accuracy, presence::optional);
  f("images_per_s", e.images_per_s, presence::optional);
  f("epoch_seconds", e.epoch_seconds, presence::optional);
  f("lr", e.lr, presence::optional);
  f("loader_wait_seconds", e.loader_wait_seconds, presence::optional);
  f("bad_images", e.bad_images, presence::optional);
  f("stages", e.stages, presence::optional);
  f("busiest_stage", e.busiest_stage, presence::omitted);
  f("ideal_images_per_s", e.ideal_images_per_s, presence::omitted);
  f("pipeline_efficiency", e.pipeline_efficiency, presence::omitted);
  f("compute_over_busiest", e.compute_over_busiest, presence::omitted);
}

/// The `{"event":"summary"}` line that ends a finished run.
struct summary_record {
  std::optional<double> test_accuracy;  // of the last epoch
  std::optional<accounting> micro_batches;
  std::optional<double> wall_seconds, train_seconds, images_per_s;
};

template <class Fields>
void describe(Fields& f, summary_record& s) {
  using json_record::presence;
  f.tag("event", "summary");
  f("test_accuracy", s.test_accuracy, presence::optional);
  f("micro_batches", s.micro_batches, presence::optional);
  f("wall_seconds", s.wall_seconds, presence::optional);
  f("train_seconds", s.train_seconds, presence::optional);
  f("images_per_s", s.images_per_s, presence::optional);
}

}  // namespace petra
