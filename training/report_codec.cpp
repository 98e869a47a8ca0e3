// Measurements as JSON and back.
#include "training/report_codec.hpp"

#include <stdexcept>

namespace petra {
namespace {

using nlohmann::json;

template <class T>
T field(const json& j, const char* name) {
  try {
    return j.at(name).get<T>();
  } catch (const std::exception&) {
    throw std::runtime_error(std::string("saved measurement field '") + name + "' is missing or malformed");
  }
}

json histogram(const std::map<int64_t, int64_t>& h) {
  json out = json::array();
  for (const auto& [k, n] : h) out.push_back({k, n});
  return out;
}

std::map<int64_t, int64_t> histogram_from(const json& j, const char* name) {
  std::map<int64_t, int64_t> out;
  for (const auto& pair : field<json>(j, name)) out[pair.at(0).get<int64_t>()] = pair.at(1).get<int64_t>();
  return out;
}

}  // namespace

json stats_to_json(const stage_stats& s) {
  return {{"forwards", s.forwards},
          {"backwards", s.backwards},
          {"delay_ticks", histogram(s.delay_ticks)},
          {"staleness_steps", histogram(s.staleness_steps)},
          {"fifo_peak", s.fifo_peak},
          {"fifo_peak_bytes", s.fifo_peak_bytes},
          {"stash_peak", s.stash_peak},
          {"stash_peak_bytes", s.stash_peak_bytes},
          {"inversion_samples", s.inversion_samples},
          {"inversion_error_sum", s.inversion_error_sum},
          {"inversion_error_max", s.inversion_error_max}};
}

stage_stats stats_from_json(const json& j) {
  stage_stats s;
  s.forwards = field<int64_t>(j, "forwards");
  s.backwards = field<int64_t>(j, "backwards");
  s.delay_ticks = histogram_from(j, "delay_ticks");
  s.staleness_steps = histogram_from(j, "staleness_steps");
  s.fifo_peak = field<std::size_t>(j, "fifo_peak");
  s.fifo_peak_bytes = field<std::size_t>(j, "fifo_peak_bytes");
  s.stash_peak = field<std::size_t>(j, "stash_peak");
  s.stash_peak_bytes = field<std::size_t>(j, "stash_peak_bytes");
  s.inversion_samples = field<int64_t>(j, "inversion_samples");
  s.inversion_error_sum = field<double>(j, "inversion_error_sum");
  s.inversion_error_max = field<double>(j, "inversion_error_max");
  return s;
}

json report_to_json(const stage_report& r) {
  return {{"stage", r.stage},
          {"weight_version", r.weight_version},
          {"stats", stats_to_json(r.stats)},
          {"mailbox_peak", r.mailbox_peak},
          {"busy_seconds", r.busy_seconds},
          {"wall_seconds", r.wall_seconds},
          {"device_bytes", r.device_bytes}};
}

stage_report report_from_json(const json& j) {
  stage_report r;
  r.stage = field<int32_t>(j, "stage");
  r.weight_version = field<int64_t>(j, "weight_version");
  r.stats = stats_from_json(field<json>(j, "stats"));
  r.mailbox_peak = field<int64_t>(j, "mailbox_peak");
  r.busy_seconds = field<double>(j, "busy_seconds");
  r.wall_seconds = field<double>(j, "wall_seconds");
  r.device_bytes = field<int64_t>(j, "device_bytes");
  return r;
}

json totals_to_json(const run_totals& t) {
  return {{"micro_batches", t.micro_batches},
          {"samples", t.samples},
          {"correct", t.correct},
          {"loss_sum", t.loss_sum},
          {"ticks", t.ticks}};
}

run_totals totals_from_json(const json& j) {
  run_totals t;
  t.micro_batches = field<int64_t>(j, "micro_batches");
  t.samples = field<int64_t>(j, "samples");
  t.correct = field<int64_t>(j, "correct");
  t.loss_sum = field<double>(j, "loss_sum");
  t.ticks = field<int64_t>(j, "ticks");
  return t;
}

}  // namespace petra
