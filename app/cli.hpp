// The `petra` command line: train, eval, model-info, memory-model.
#pragma once

namespace petra::app {

/// Parses argv, runs the sub-command, returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace petra::app
