// Progress line.
#include "training/progress.hpp"

#include <unistd.h>

#include <algorithm>

namespace petra {

progress::progress(bool enabled, std::FILE* out, int terminal)
    : enabled_(enabled),
      out_(out ? out : stdout),
      terminal_(terminal >= 0 ? terminal != 0 : isatty(fileno(out ? out : stdout)) != 0) {}

void progress::begin_phase(int epochs, int64_t per_epoch, int64_t phase_start, bool resumed) {
  epochs_ = epochs;
  per_epoch_ = per_epoch;
  phase_start_ = phase_start;
  epoch_ = 0;  // the first update starts a line
  resumed_ = resumed;
  prev_ = run_totals{};
  prev_time_ = clock::now();
}

void progress::start_line(int epoch, int64_t first, const run_totals& base, clock::time_point since) {
  break_line();
  epoch_ = epoch;
  first_ = first;
  base_ = base;
  last_printed_ = first * 10 / per_epoch_;
  start_ = since;
  last_draw_ = clock::time_point{};
}

void progress::update(const run_totals& phase_totals) {
  if (!enabled_ || per_epoch_ <= 0) return;
  const auto now = clock::now();
  const int64_t end = static_cast<int64_t>(std::max(epochs_, 1)) * per_epoch_;
  // The epoch of the last micro-batch that reached the loss, and how far into it the stream is.
  auto locate = [&](int64_t position) {
    position = std::clamp<int64_t>(position, 0, end);
    const int epoch = epoch_at(position, per_epoch_);
    return std::make_pair(epoch, position - static_cast<int64_t>(epoch - 1) * per_epoch_);
  };
  const auto [epoch, done] = locate(phase_start_ + phase_totals.micro_batches);
  if (resumed_ || phase_totals.micro_batches < prev_.micro_batches) {
    // A phase resumed from a snapshot, or an attempt replaying from a restore point: the totals
    // do not follow the previous ones, so the line starts here.
    resumed_ = false;
    start_line(epoch, done, phase_totals, now);
  } else if (epoch != epoch_) {
    const auto [prev_epoch, prev_done] = locate(phase_start_ + prev_.micro_batches);
    start_line(epoch, prev_epoch == epoch ? prev_done : 0, prev_, prev_time_);
  }
  prev_ = phase_totals;
  prev_time_ = now;
  draw(done, phase_totals, now);
}

void progress::draw(int64_t done, const run_totals& totals, clock::time_point now) {
  const run_totals line = totals.since(base_);
  if (line.micro_batches <= 0 || done <= first_) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(line.samples) / elapsed : 0.0;
  const double eta = elapsed * static_cast<double>(per_epoch_ - done) / static_cast<double>(done - first_);
  if (terminal_) {
    if (done < per_epoch_ && std::chrono::duration<double>(now - last_draw_).count() < 0.25) return;
    last_draw_ = now;
  } else {
    const int64_t decile = done * 10 / per_epoch_;
    if (decile == last_printed_) return;
    last_printed_ = decile;
  }
  std::fprintf(out_, "%sepoch %d/%d  micro-batch %lld/%lld  %.0f img/s  loss %.4f  acc %.2f%%  ETA %s%s",
               terminal_ ? "\r" : "", epoch_, epochs_, static_cast<long long>(done),
               static_cast<long long>(per_epoch_), rate, line.mean_loss(), 100 * line.accuracy(),
               format_duration(eta).c_str(), terminal_ ? "   " : "\n");
  drawn_ = terminal_;
  std::fflush(out_);
}

void progress::break_line() {
  if (drawn_) std::fprintf(out_, "\n");
  drawn_ = false;
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
