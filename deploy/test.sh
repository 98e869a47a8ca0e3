#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine: install what is missing, build, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
bash deploy/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
