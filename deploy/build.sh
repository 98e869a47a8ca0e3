#!/usr/bin/env bash
# Configures and builds petra into build/ (Release; the CUDA backend when the toolkit is found).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPETRA_CUDA=AUTO "$@"
cmake --build build -j"$(nproc)"
