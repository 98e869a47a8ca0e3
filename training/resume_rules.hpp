// What `petra train --resume <run> --set ...` may change of the config the run was started with:
// how long it trains, where and how it runs, what it writes; never what it trains (the model, the
// data, the method and its batch, optimizer, schedule and seed), which would make the weights so far
// those of another run. Plain functions: the trainer checks them before anything is written.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace petra {

/// Why a resumed run may not change `key` (a YAML path, "training.micro_batch"); "" when it may.
std::string resume_change_refusal(const std::string& key);

/// The keys whose value `resumed` (the run's config.yaml with the --set overrides) changes from
/// `saved` (config.yaml as it is). Throws config::config_error naming the first key a resume may not
/// change, with both values and why.
std::vector<config::key_change> check_resume_changes(const config::run_config& saved,
                                                     const config::run_config& resumed);

}  // namespace petra
