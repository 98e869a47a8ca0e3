// Progress line.
#include "training/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace petra {

progress::progress(bool enabled) : enabled_(enabled), terminal_(isatty(STDOUT_FILENO) != 0) {}

void progress::start_epoch(int epoch, int epochs, int64_t micro_batches) {
  epoch_ = epoch;
  epochs_ = epochs;
  total_ = micro_batches;
  last_printed_ = -1;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void progress::update(int64_t done, int64_t images, double mean_loss, double accuracy) {
  if (!enabled_ || total_ <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? images / elapsed : 0.0;
  const double eta =
      done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0;
  if (terminal_) {
    if (done < total_ && std::chrono::duration<double>(now - last_draw_).count() < 0.25) return;
    last_draw_ = now;
    std::printf("\repoch %d/%d  step %lld/%lld  %.0f img/s  loss %.4f  acc %.2f%%  ETA %s   ", epoch_,
                epochs_, static_cast<long long>(done), static_cast<long long>(total_), rate, mean_loss,
                100 * accuracy, format_duration(eta).c_str());
    std::fflush(stdout);
    return;
  }
  const int64_t decile = done * 10 / total_;
  if (decile == last_printed_ || decile == 0) return;
  last_printed_ = decile;
  std::printf("epoch %d/%d  step %lld/%lld  %.0f img/s  loss %.4f  acc %.2f%%  ETA %s\n", epoch_, epochs_,
              static_cast<long long>(done), static_cast<long long>(total_), rate, mean_loss, 100 * accuracy,
              format_duration(eta).c_str());
  std::fflush(stdout);
}

void progress::end_epoch() {
  if (enabled_ && terminal_) std::printf("\n");
}

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

}  // namespace petra
