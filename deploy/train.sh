#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: install what is missing, build, and train
# the default config (PETRA, small RevNet, Fashion-MNIST, 3 epochs) into runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
bash deploy/build.sh
./build/petra train default "$@"
