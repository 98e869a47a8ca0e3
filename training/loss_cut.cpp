// The loss side's part of a cut as JSON.
#include "training/loss_cut.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "training/report_codec.hpp"

namespace petra::training {

std::string encode(const loss_cut& part) {
  nlohmann::json labels = nlohmann::json::array(), epochs = nlohmann::json::array(),
                 waves = nlohmann::json::array();
  for (const auto& l : part.labels) labels.push_back({l.eval_epoch, l.id, l.labels});
  for (const auto& e : part.epochs)
    epochs.push_back({{"epoch", e.epoch}, {"totals", totals_to_json(e.totals)}});
  for (const auto& w : part.waves)
    waves.push_back({{"epoch", w.epoch},
                     {"loss_sum", w.loss_sum},
                     {"correct", w.correct},
                     {"samples", w.samples},
                     {"items", w.items}});
  return nlohmann::json{
      {"labels", labels}, {"waiting", part.waiting}, {"totals", totals_to_json(part.totals)},
      {"epochs", epochs}, {"waves", waves},          {"eval_scored", part.eval_scored}}
      .dump();
}

loss_cut decode_loss_cut(const std::string& text) {
  loss_cut out;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    for (const auto& l : j.at("labels"))
      out.labels.push_back(
          {l.at(0).get<int32_t>(), l.at(1).get<int64_t>(), l.at(2).get<std::vector<int32_t>>()});
    out.waiting = j.at("waiting").get<int64_t>();
    out.totals = totals_from_json(j.at("totals"));
    for (const auto& e : j.at("epochs"))
      out.epochs.push_back({e.at("epoch").get<int32_t>(), totals_from_json(e.at("totals"))});
    for (const auto& w : j.at("waves"))
      out.waves.push_back({w.at("epoch").get<int32_t>(), w.at("loss_sum").get<double>(),
                           w.at("correct").get<int64_t>(), w.at("samples").get<int64_t>(),
                           w.at("items").get<int64_t>()});
    out.eval_scored = j.value("eval_scored", int64_t{0});
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the loss side's part of the cut is damaged: ") + e.what());
  }
  return out;
}

}  // namespace petra::training
