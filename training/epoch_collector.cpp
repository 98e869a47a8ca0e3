// Epochs put together.
#include "training/epoch_collector.hpp"

#include <stdexcept>

#include "training/report_codec.hpp"

namespace petra {

epoch_collector::epoch_collector(std::size_t stages, int64_t wave_size,
                                 std::function<void(epoch_result&)> on_complete)
    : stages_(stages), wave_size_(wave_size), on_complete_(std::move(on_complete)) {}

epoch_collector::partial& epoch_collector::at(int epoch) {
  partial& p = open_[epoch];
  if (p.result.stages.empty()) {
    p.result.epoch = epoch;
    p.result.stages.resize(stages_);
  }
  return p;
}

void epoch_collector::add_stage(int epoch, const stage_report& r) {
  partial& p = at(epoch);
  p.result.stages.at(static_cast<std::size_t>(r.stage)) = r;
  ++p.stages_in;
  complete_if_done(epoch);
}

void epoch_collector::add_loss(int epoch, const run_totals& totals) {
  partial& p = at(epoch);
  p.result.train = totals;
  p.loss_in = true;
  complete_if_done(epoch);
}

void epoch_collector::add_eval(int epoch, double loss_sum, int64_t correct, int64_t samples, int64_t items) {
  at(epoch).wave += eval_sums{loss_sum, correct, samples, items};
  complete_if_done(epoch);
}

void epoch_collector::complete_if_done(int epoch) {
  auto it = open_.find(epoch);
  partial& p = it->second;
  if (p.stages_in < stages_ || !p.loss_in || p.wave.batches < wave_size_) return;
  if (wave_size_ > 0) {
    p.result.evaluated = true;
    p.result.test = p.wave.result();
  }
  epoch_result done = std::move(p.result);
  open_.erase(it);
  ++completed_;
  done_.insert(done.epoch);
  on_complete_(done);
}

bool epoch_collector::done(int first, int last) const {
  for (int e = first; e <= last; ++e)
    if (done_.count(e) == 0) return false;
  return true;
}

void epoch_collector::load_done(const nlohmann::json* done, int ended) {
  try {
    if (done) {
      for (int e : done->get<std::vector<int>>()) done_.insert(e);
      return;
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("the snapshot's whole epochs are damaged: ") + e.what());
  }
  for (int e = 1; e <= ended; ++e)
    if (open_.count(e) == 0) done_.insert(e);
}

nlohmann::json epoch_collector::save() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [epoch, p] : open_) out.push_back(json_record::write(p));
  return out;
}

void epoch_collector::load(const nlohmann::json& open) {
  try {
    std::vector<partial> saved;
    json_record::reader::from_json(open, saved, "epochs", "");
    for (partial& p : saved) {
      if (p.result.stages.size() != stages_)
        throw std::runtime_error("epoch " + std::to_string(p.result.epoch) + " holds " +
                                 std::to_string(p.result.stages.size()) + " stages, the pipeline " +
                                 std::to_string(stages_));
      open_[p.result.epoch] = std::move(p);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the snapshot's open epochs are damaged: ") + e.what());
  }
}

}  // namespace petra
