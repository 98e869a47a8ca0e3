// The `petra` command line: train, eval, model-info, memory-model.
#include "app/cli.hpp"

#include <iostream>

namespace petra::app {

int run_cli(int, char**) {
  std::cerr << "petra: not built yet\n";
  return 1;
}

}  // namespace petra::app
