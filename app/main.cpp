// The `petra` command line.
#include "app/cli.hpp"

int main(int argc, char** argv) { return petra::app::run_cli(argc, argv); }
