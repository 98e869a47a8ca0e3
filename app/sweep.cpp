// `petra sweep`: placeholder until the sweep lands.
#include <iostream>

#include "app/commands.hpp"

namespace petra::app {

int sweep_command(const sweep_options&) {
  std::cerr << "petra sweep: not built yet\n";
  return 1;
}

}  // namespace petra::app
