// A stage's record of its epoch.
#include "training/stage_record.hpp"

#include <algorithm>

namespace petra::training {

void stage_record::begin_phase(time_point now) {
  phase_busy_seconds_ = 0;
  if (epoch_start_ == time_point{}) epoch_start_ = now;
}

void stage_record::fill(stage_report& r, stage_timeline& timeline, time_point now) const {
  timeline.split_idle(now);
  r.mailbox_peak = mailbox_peak_;
  r.busy_seconds = busy_seconds_;
  r.wait_input_seconds = timeline.wait_input_seconds;
  r.wait_gradient_seconds = timeline.wait_gradient_seconds;
  r.upstream_messages = upstream_messages_;
  r.upstream_bytes = upstream_bytes_;
  r.phase_busy_seconds = phase_busy_seconds_;
  r.wall_seconds = std::chrono::duration<double>(now - epoch_start_).count();
}

void stage_record::restart_epoch(stage_timeline& timeline, time_point now) {
  mailbox_peak_ = 0;
  busy_seconds_ = 0;
  timeline.wait_input_seconds = timeline.wait_gradient_seconds = 0;
  upstream_messages_ = upstream_bytes_ = 0;
  epoch_start_ = now;
}

void stage_record::continue_from(const stage_report& earlier, stage_timeline& timeline, time_point now) {
  mailbox_peak_ = std::max(mailbox_peak_, earlier.mailbox_peak);
  busy_seconds_ += earlier.busy_seconds;
  timeline.wait_input_seconds += earlier.wait_input_seconds;
  timeline.wait_gradient_seconds += earlier.wait_gradient_seconds;
  upstream_messages_ += earlier.upstream_messages;
  upstream_bytes_ += earlier.upstream_bytes;
  epoch_start_ = now - std::chrono::duration_cast<time_point::duration>(
                           std::chrono::duration<double>(earlier.wall_seconds));
}

}  // namespace petra::training
