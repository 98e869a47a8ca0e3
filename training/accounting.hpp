// What happened to the micro-batches and the injected faults over a run: counted from what the
// runtime observed, in every attempt, so that the summary and the metrics lines agree.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "training/faults.hpp"
#include "training/json_record.hpp"
#include "training/runtime.hpp"

namespace petra {

struct accounting {
  int64_t completed = 0;    // backward finished at stage 1, in attempts that were kept
  int64_t replayed = 0;     // micro-batches of phases rolled back and run again
  int64_t rolled_back = 0;  // completed in failed attempts, then undone by the rollback
  int64_t restarts = 0;
  int64_t faults_injected = 0;  // in every attempt, failed ones included
  int64_t duplicates_discarded = 0;
  double recovery_seconds = 0;  // from a failure to the pipeline ready again
  int64_t lost = 0;             // cancelled in stage-local recoveries: never completed
  int64_t reissued = 0;         // cancelled in stage-local recoveries, sent again and completed then
  int64_t local_recoveries = 0;
  // A resumed run: micro-batches of the run that earlier processes completed (the others count this
  // process's only).
  int64_t completed_before_resume = 0;

  /// A phase that succeeded, with its per-stage fault counts.
  void add_phase(int64_t completed_micro_batches, const std::vector<fault_counts>& faults);
  /// A failed attempt of a phase of `count` micro-batches, replayed after `seconds` of recovery.
  /// `kept` of its completed micro-batches precede the point it restarts from (a snapshot), the
  /// `undone` others are undone.
  void add_failure(const run_failure& failure, int64_t kept, int64_t undone, int64_t count, double seconds);
  /// A failed attempt after which the run gave up: its `kept` completed micro-batches precede the
  /// restore point a resume continues from.
  void add_given_up(const run_failure& failure, int64_t kept);
  /// A stage-local recovery (it ends no attempt).
  void add_local(const local_recovery& r);
  nlohmann::json json() const;
  /// The summary's line of it, when anything happened.
  void print() const;
};

/// The summary's "micro_batches" object; a reader takes what is there.
template <class Fields>
void describe(Fields& f, accounting& a) {
  using json_record::presence;
  f("completed", a.completed, presence::optional);
  f("replayed", a.replayed, presence::optional);
  f("rolled_back", a.rolled_back, presence::optional);
  f("restarts", a.restarts, presence::optional);
  f("faults_injected", a.faults_injected, presence::optional);
  f("duplicates_discarded", a.duplicates_discarded, presence::optional);
  f("recovery_seconds", a.recovery_seconds, presence::optional);
  f("lost", a.lost, presence::optional);
  f("reissued", a.reissued, presence::optional);
  f("local_recoveries", a.local_recoveries, presence::optional);
  f("completed_before_resume", a.completed_before_resume, presence::optional);
}

/// The `{"event":"failure"}` line of a stage-local recovery (it ends no attempt).
struct local_recovery_record {
  int epoch = 0;
  int64_t position = 0;  // the phase's first micro-batch in its epoch
  std::string kind;
  int stage = 0;  // 1-based: where it was noticed
  std::string what;
  std::vector<int32_t> stages_rebuilt;  // 1-based
  std::string restored_from;
  int64_t lost_micro_batches = 0;
  int64_t reissued_micro_batches = 0;
  double recovery_seconds = 0;
};

template <class Fields>
void describe(Fields& f, local_recovery_record& r) {
  f.tag("event", "failure");
  f.tag("recovery", "local");
  f("epoch", r.epoch);
  f("position", r.position);
  f("kind", r.kind);
  f("stage", r.stage);
  f("what", r.what);
  f("stages_rebuilt", r.stages_rebuilt);
  f("restored_from", r.restored_from);
  f("lost_micro_batches", r.lost_micro_batches);
  f("reissued_micro_batches", r.reissued_micro_batches, json_record::presence::optional);
  f("recovery_seconds", r.recovery_seconds);
}

/// The `{"event":"failure"}` line of a failed attempt that rolled every stage back and replays, or
/// after which the run gave up (faults.max_restarts reached, or the rollback itself failed).
struct rollback_record {
  int epoch = 0;
  int64_t position = 0;  // the phase's first micro-batch in its epoch
  std::string kind;
  std::optional<int> stage;  // 1-based; null when no stage was named
  int64_t tick = 0;
  std::string what;
  int attempt = 0;
  std::optional<int64_t> completed_before_failure;  // null when stage 1 was lost (not known)
  int64_t faults_injected = 0, duplicates_discarded = 0;
  double recovery_seconds = 0;
  std::optional<std::string> restored_from;  // snapshot | checkpoint; null when the run gave up
  std::string recovery;                      // "global", or "global (why not local)"; "none": gave up
  int64_t replayed_micro_batches = 0;
  std::optional<std::string> gave_up;  // why the run ended here instead of recovering
};

template <class Fields>
void describe(Fields& f, rollback_record& r) {
  using json_record::presence;
  f.tag("event", "failure");
  f("epoch", r.epoch);
  f("position", r.position);
  f("kind", r.kind);
  f("stage", r.stage, presence::optional);
  f("tick", r.tick);
  f("what", r.what);
  f("attempt", r.attempt);
  f("completed_before_failure", r.completed_before_failure, presence::optional);
  f("faults_injected", r.faults_injected);
  f("duplicates_discarded", r.duplicates_discarded);
  f("recovery_seconds", r.recovery_seconds);
  f("restored_from", r.restored_from, presence::optional);
  f("recovery", r.recovery);
  f("replayed_micro_batches", r.replayed_micro_batches);
  f("gave_up", r.gave_up, presence::omitted);
}

/// The failure line of attempt `attempt` of the phase that started at (epoch, position): what
/// `failure` says; how the run recovered (or gave up) is the caller's to fill in.
rollback_record rollback_line(const run_failure& failure, int epoch, int64_t position, int attempt);

/// The metrics line of a stage-local recovery in the phase that started at (epoch, position); the
/// terminal gets its line too.
nlohmann::json local_recovery_line(const local_recovery& r, int epoch, int64_t position);

/// Σ over stages.
fault_counts total(const std::vector<fault_counts>& per_stage);

}  // namespace petra
