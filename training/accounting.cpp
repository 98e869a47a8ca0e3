// Run accounting.
#include "training/accounting.hpp"

#include <cstdio>

namespace petra {

fault_counts total(const std::vector<fault_counts>& per_stage) {
  fault_counts sum;
  for (const fault_counts& f : per_stage) sum += f;
  return sum;
}

void accounting::add_phase(int64_t completed_micro_batches, const std::vector<fault_counts>& faults) {
  completed += completed_micro_batches;
  const fault_counts sum = total(faults);
  faults_injected += sum.injected();
  duplicates_discarded += sum.duplicates_discarded;
}

void accounting::add_failure(const run_failure& failure, int64_t kept, int64_t undone, int64_t count,
                             double seconds) {
  completed += kept;
  const fault_counts sum = total(failure.faults);
  faults_injected += sum.injected();
  duplicates_discarded += sum.duplicates_discarded;
  rolled_back += undone;
  replayed += count;
  restarts += 1;
  recovery_seconds += seconds;
}

void accounting::add_given_up(const run_failure& failure, int64_t kept) {
  completed += kept;
  const fault_counts sum = total(failure.faults);
  faults_injected += sum.injected();
  duplicates_discarded += sum.duplicates_discarded;
}

void accounting::add_local(const local_recovery& r) {
  lost += r.lost;
  reissued += r.reissued;
  local_recoveries += 1;
  recovery_seconds += r.seconds;
}

nlohmann::json local_recovery_line(const local_recovery& r, int epoch, int64_t position) {
  std::printf("\n%s; rebuilt %zu stage(s) from the %s, %lld micro-batches lost, %lld re-issued\n",
              r.what.c_str(), r.stages.size(), r.from.c_str(), static_cast<long long>(r.lost),
              static_cast<long long>(r.reissued));
  std::fflush(stdout);
  local_recovery_record line;
  line.epoch = epoch;
  line.position = position;
  line.kind = to_string(r.kind);
  line.stage = r.stage + 1;
  line.what = r.what;
  for (int32_t j : r.stages) line.stages_rebuilt.push_back(j + 1);
  line.restored_from = r.from;
  line.lost_micro_batches = r.lost;
  line.reissued_micro_batches = r.reissued;
  line.recovery_seconds = r.seconds;
  return json_record::write(line);
}

rollback_record rollback_line(const run_failure& failure, int epoch, int64_t position, int attempt) {
  rollback_record line;
  line.epoch = epoch;
  line.position = position;
  line.kind = to_string(failure.kind());
  if (failure.stage() >= 0) line.stage = failure.stage() + 1;
  line.tick = failure.tick();
  line.what = failure.what();
  line.attempt = attempt;
  if (failure.completed >= 0) line.completed_before_failure = failure.completed;
  line.faults_injected = total(failure.faults).injected();
  line.duplicates_discarded = total(failure.faults).duplicates_discarded;
  return line;
}

void accounting::print() const {
  if (restarts || local_recoveries || faults_injected || duplicates_discarded)
    std::printf(
        "micro-batches: %lld completed, %lld lost and %lld re-issued in %lld stage-local recoveries, %lld "
        "replayed after %lld rollbacks (%lld undone), %.2f s recovering; %lld faults injected, %lld "
        "duplicates "
        "discarded\n",
        static_cast<long long>(completed), static_cast<long long>(lost), static_cast<long long>(reissued),
        static_cast<long long>(local_recoveries), static_cast<long long>(replayed),
        static_cast<long long>(restarts), static_cast<long long>(rolled_back), recovery_seconds,
        static_cast<long long>(faults_injected), static_cast<long long>(duplicates_discarded));
}

nlohmann::json accounting::json() const { return json_record::write(*this); }

}  // namespace petra
