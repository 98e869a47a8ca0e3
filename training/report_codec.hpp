// Measurements as JSON and back, exactly: what a snapshot keeps of a stage's record, of the
// epochs still open and of the totals so far, so that a resumed run reports as the uninterrupted one.
#pragma once

#include <nlohmann/json.hpp>

#include "compute/pipeline/stage_report.hpp"
#include "training/simulator.hpp"

namespace petra {

nlohmann::json stats_to_json(const stage_stats& s);
/// Throws std::runtime_error naming the field that is missing or of the wrong type.
stage_stats stats_from_json(const nlohmann::json& j);

nlohmann::json report_to_json(const stage_report& r);
stage_report report_from_json(const nlohmann::json& j);

nlohmann::json totals_to_json(const run_totals& t);
run_totals totals_from_json(const nlohmann::json& j);

}  // namespace petra
