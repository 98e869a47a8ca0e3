// Measurements as JSON and back.
#include "training/report_codec.hpp"

namespace petra {

nlohmann::json stats_to_json(const stage_stats& s) { return json_record::write(s); }

stage_stats stats_from_json(const nlohmann::json& j) {
  return json_record::read<stage_stats>(j, "saved measurements");
}

nlohmann::json totals_to_json(const run_totals& t) { return json_record::write(t); }

run_totals totals_from_json(const nlohmann::json& j) {
  return json_record::read<run_totals>(j, "saved totals");
}

}  // namespace petra
