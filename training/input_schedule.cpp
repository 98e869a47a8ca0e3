// The input schedule.
#include "training/input_schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "training/tick_schedule.hpp"

namespace petra {

input_schedule::input_schedule(data_feed& train, data_feed* test, int64_t spacing)
    : train_(train), test_(test), spacing_(spacing), per_epoch_(train.micro_batches_per_epoch()) {}

void input_schedule::start(int epoch, int64_t position, int64_t count) {
  epoch_ = epoch;
  position_ = position;
  count_ = count;
  fed_ = 0;
  waves_.clear();
  wave_open_ = false;
  train_ticket_ = train_.start_epoch(epoch, position);
}

bool input_schedule::next(int64_t tick, tick_input& in) { return step(tick, &in); }

std::vector<micro_batch> input_schedule::reload(const std::vector<int64_t>& ids) {
  std::vector<micro_batch> out;
  uint64_t ticket = 0;
  int64_t at = -1;  // the id the feed serves next
  for (int64_t id : ids) {
    if (id != at) ticket = train_.start_epoch(static_cast<int>(id / per_epoch_), id % per_epoch_);
    micro_batch mb;
    if (!train_.next(mb, ticket) || mb.id != id)
      throw std::logic_error("input_schedule: micro-batch " + std::to_string(id) + " cannot be made again");
    out.push_back(std::move(mb));
    at = (id + 1) % per_epoch_ == 0 ? -1 : id + 1;  // an epoch's last: the next one starts the feed again
  }
  // Back to where the stream stands (at an epoch's end the next step starts the next epoch).
  if (!ids.empty() && position_ < per_epoch_) train_ticket_ = train_.start_epoch(epoch_, position_);
  return out;
}

void input_schedule::skip_to(int64_t tick) {
  for (int64_t t = 0; t < tick; ++t) step(t, nullptr);
  train_ticket_ = train_.start_epoch(epoch_, position_);
  if (wave_open_) test_ticket_ = test_->start_epoch(0, wave_index_);
}

bool input_schedule::step(int64_t tick, tick_input* in) {
  if (fed_ < count_ && tick % spacing_ == 0) {
    if (position_ >= per_epoch_) {  // the stream crosses epochs
      ++epoch_, position_ = 0;
      if (in) train_ticket_ = train_.start_epoch(epoch_, 0);
    }
    if (in) {
      if (!train_.next(in->train, train_ticket_)) return false;  // another schedule took over the feed
      in->has_train = true;
    }
    ++fed_;
    if (++position_ == per_epoch_ && test_) {  // the epoch's last micro-batch: its wave follows
      if (waves_.empty()) wave_from_tick_ = tick + 1;
      waves_.push_back(epoch_);
    }
  }
  if (!waves_.empty() && tick >= wave_from_tick_) {
    if (!wave_open_) {
      if (in) test_ticket_ = test_->start_epoch(0);
      wave_open_ = true;
      wave_index_ = 0;
    }
    if (in) {
      micro_batch mb;
      if (test_->next(mb, test_ticket_)) {
        in->has_eval = true;
        in->eval.epoch = waves_.front();
        in->eval.index = wave_index_;
        in->eval.images = std::move(mb.images);
        in->eval.labels = std::move(mb.labels);
      }
    }
    if (++wave_index_ >= test_->micro_batches_per_epoch()) {  // this wave is all in
      waves_.pop_front();
      wave_open_ = false;
    }
  }
  return fed_ < count_ || !waves_.empty();
}

input_schedule::shape input_schedule::plan(int64_t per_epoch, int64_t wave, int64_t spacing, int64_t position,
                                           int64_t count, std::size_t stages) {
  // The same walk as next(), counting instead of loading.
  const int64_t J = static_cast<int64_t>(stages);
  shape out;
  int64_t fed = 0, pending = 0, from = 0, last_train = -1, last_eval = -1;
  for (int64_t t = 0; fed < count || pending > 0; ++t) {
    if (fed < count && t % spacing == 0) {
      if (position >= per_epoch) position = 0;
      ++fed;
      last_train = t;
      if (++position == per_epoch && wave > 0) {
        if (pending == 0) from = t + 1;
        pending += wave;
        out.eval_items += wave;
      }
    }
    if (pending > 0 && t >= from) {
      --pending;
      last_eval = t;
    }
  }
  int64_t need = last_train >= 0 ? last_train + round_trip_ticks(0, stages) : 0;  // back at stage 1
  if (last_eval >= 0) need = std::max(need, last_eval + (J - 1));  // scored after the last stage
  out.ticks = need + 1;
  return out;
}

}  // namespace petra
