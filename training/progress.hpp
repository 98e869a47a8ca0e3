// Progress reporting: a rewritten line on a terminal, plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace petra {

class progress {
 public:
  /// `enabled` false prints nothing; on a non-terminal, one line per ~10% of an epoch.
  explicit progress(bool enabled);

  void start_epoch(int epoch, int epochs, int64_t micro_batches);
  /// After micro-batch `done` of the epoch; images/s over the epoch so far.
  void update(int64_t done, int64_t images, double mean_loss, double accuracy);
  void end_epoch();

 private:
  bool enabled_;
  bool terminal_;
  int epoch_ = 0, epochs_ = 0;
  int64_t total_ = 0;
  int64_t last_printed_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

/// "1h02m", "3m12s", "45s".
std::string format_duration(double seconds);

}  // namespace petra
