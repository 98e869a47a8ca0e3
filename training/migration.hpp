// Live migration (pipeline.migrate, `petra migrate`): where a stage is placed and where it goes,
// the operator's request file in the run directory, and the trainer's side that makes the moves at
// drained points and answers in metrics.jsonl.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compute/pipeline/stage_state.hpp"
#include "config/config.hpp"
#include "training/prepared_run.hpp"
#include "training/run_dir.hpp"

namespace petra {

/// Where stage j (0-based) is placed by `c`: pipeline.devices, pipeline.threads (0 when not given)
/// and pipeline.nodes as written.
config::migration_target placement_of(const config::run_config& c, std::size_t j);

/// `c` with stage j placed at `to` (every per-stage list filled out to one entry per stage; a target
/// with no thread count keeps the stage's).
config::run_config placed_at(config::run_config c, std::size_t j, const config::migration_target& to);

/// Forward gradients: a stage's auxiliary head holds the gradients it accumulated since its last
/// step, which the moved state leaves out, so its stages move only where every stage has just
/// stepped (`position`, micro-batches into the run, a multiple of training.accumulation). The
/// reason it cannot move at `position`, or "".
std::string why_not_migrated_at(const config::run_config& c, int64_t position);

/// A checksum (64-bit FNV-1a) of a stage's state as a migration moves it: every tensor's name, shape
/// and bytes, in order, and the part's record (`meta`). The old actor's and, right after the move,
/// the new actor's must agree.
uint64_t state_checksum(const std::vector<named_tensor>& tensors, const std::string& meta);

/// Checks pipeline.migrate against the run (its stages, its node names, `end` micro-batches): throws
/// config::config_error naming the entry.
void check_scheduled_migrations(const config::run_config& c, int64_t end);

/// Checks an operator's migration of stage `stage` (1-based) to `to` against the run's config:
/// throws config::config_error saying what is wrong (unknown stage, unknown node, a bad target).
config::migration_target check_requested_migration(const config::run_config& c, int stage,
                                                   const std::string& to);

/// An operator's request, as `petra migrate` writes it into the run directory.
struct migration_request {
  std::string id;  // unique per request: the answer's line carries it
  int stage = 0;   // 1-based
  std::string to;  // a target as written
};

/// The request file of a run directory, written atomically (temp file + rename), and the file a
/// running trainer keeps its process id in (gone once the run ends).
std::string migration_request_path(const std::string& run);
std::string trainer_pid_path(const std::string& run);

/// Writes `r` as the run's pending request; false when one is pending already.
bool post_migration_request(const std::string& run, const migration_request& r);

/// The trainer, at a drained point: takes the pending request (claimed by a rename, so it is taken
/// once); nullopt when none. A request it cannot read comes back with id "" and `to` saying why.
std::optional<migration_request> take_migration_request(const std::string& run);

/// The process id of the trainer running in `run`, or 0 when none is (no pid file, or its process is
/// gone).
long running_trainer(const std::string& run);

/// The trainer's side: the scheduled migrations at their points and the operator's requests at
/// every drained point, each done or refused on a line of metrics.jsonl and of the terminal.
class migration_desk {
 public:
  /// Announces the running trainer (trainer_pid_path) until it is destroyed.
  migration_desk(prepared_run& p, run_dir& dir);
  ~migration_desk();
  migration_desk(const migration_desk&) = delete;
  migration_desk& operator=(const migration_desk&) = delete;

  /// At the drained point before micro-batch `position` of the run, after `ticks` ticks of its
  /// phases: the migrations pipeline.migrate schedules there, then a pending request.
  void at_point(int64_t position, int64_t ticks);
  /// The run ends: a request still pending is refused (no drained point is left).
  void at_end();

 private:
  /// Moves stage j; the event line says `why` ("scheduled" or the request's id).
  void migrate(std::size_t j, const config::migration_target& to, int64_t position, int64_t ticks,
               const std::string& why);
  void refuse(const migration_request& r, const std::string& reason);

  prepared_run& p_;
  run_dir& dir_;
};

}  // namespace petra
