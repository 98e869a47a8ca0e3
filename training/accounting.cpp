// Run accounting.
#include "training/accounting.hpp"

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

nlohmann::json accounting::json() const {
  return {{"completed", completed},
          {"replayed", replayed},
          {"rolled_back", rolled_back},
          {"restarts", restarts},
          {"faults_injected", faults_injected},
          {"duplicates_discarded", duplicates_discarded},
          {"recovery_seconds", recovery_seconds}};
}

}  // namespace petra
