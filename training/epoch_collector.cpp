// Epochs put together.
#include "training/epoch_collector.hpp"

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
  partial& p = at(epoch);
  p.loss_sum += loss_sum;
  p.correct += correct;
  p.result.test.samples += samples;
  p.items_in += items;
  complete_if_done(epoch);
}

void epoch_collector::complete_if_done(int epoch) {
  auto it = open_.find(epoch);
  partial& p = it->second;
  if (p.stages_in < stages_ || !p.loss_in || p.items_in < wave_size_) return;
  if (wave_size_ > 0) {
    p.result.evaluated = true;
    const auto n = static_cast<double>(p.result.test.samples);
    p.result.test.loss = n > 0 ? p.loss_sum / n : 0;
    p.result.test.accuracy = n > 0 ? static_cast<double>(p.correct) / n : 0;
  }
  epoch_result done = std::move(p.result);
  open_.erase(it);
  ++completed_;
  on_complete_(done);
}

nlohmann::json epoch_collector::save() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [epoch, p] : open_) {
    nlohmann::json stages = nlohmann::json::array();
    for (const stage_report& r : p.result.stages) stages.push_back(report_to_json(r));
    out.push_back({{"epoch", epoch},
                   {"train", totals_to_json(p.result.train)},
                   {"stages", stages},
                   {"stages_in", p.stages_in},
                   {"loss_in", p.loss_in},
                   {"items_in", p.items_in},
                   {"loss_sum", p.loss_sum},
                   {"correct", p.correct},
                   {"samples", p.result.test.samples}});
  }
  return out;
}

void epoch_collector::load(const nlohmann::json& open) {
  try {
    for (const nlohmann::json& e : open) {
      partial& p = at(e.at("epoch").get<int>());
      p.result.train = totals_from_json(e.at("train"));
      std::size_t j = 0;
      for (const nlohmann::json& r : e.at("stages")) p.result.stages.at(j++) = report_from_json(r);
      p.stages_in = e.at("stages_in").get<std::size_t>();
      p.loss_in = e.at("loss_in").get<bool>();
      p.items_in = e.at("items_in").get<int64_t>();
      p.loss_sum = e.at("loss_sum").get<double>();
      p.correct = e.at("correct").get<int64_t>();
      p.result.test.samples = e.at("samples").get<int64_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("the snapshot's open epochs are damaged: ") + e.what());
  }
}

}  // namespace petra
