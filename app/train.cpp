// `petra train`: the trainer loop of training/ with the runtime runtime.mode names.
#include "actors/coordinator.hpp"
#include "app/commands.hpp"
#include "training/simulate_runtime.hpp"
#include "training/train_loop.hpp"

namespace petra::app {

int train_command(const train_options& options) {
  return run_training(options,
                      [](const config::run_config& c, training_data& data, const optimizer_settings& opt) {
                        if (c.runtime.mode == config::runtime_mode::simulate)
                          return make_simulate_runtime(c, data, opt);
                        return make_actor_runtime(c, data, opt);
                      });
}

}  // namespace petra::app
