// A stage's measurements as the JSON object of metrics.jsonl (both runtimes write the same).
#pragma once

#include <nlohmann/json.hpp>

#include "messages/messages.hpp"

namespace petra {

nlohmann::json to_json(const messages::stage_report& r, std::size_t stage_count);

}  // namespace petra
