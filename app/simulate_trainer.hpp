// The reference simulator behind the trainer interface (runtime: simulate).
#pragma once

#include <memory>

#include "actors/trainer.hpp"
#include "compute/optimizer.hpp"
#include "config/config.hpp"

namespace petra::app {

std::unique_ptr<trainer> make_simulate_trainer(const config::run_config& c, training_data& data,
                                               const optimizer_settings& optimizer);

}  // namespace petra::app
