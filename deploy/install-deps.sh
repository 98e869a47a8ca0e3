#!/usr/bin/env bash
# Installs every Debian package petra builds, tests and benchmarks with; idempotent.
# Never installs CUDA: the toolkit, when present, lives at /usr/local/cuda.
set -euo pipefail

packages=(
  build-essential cmake git
  libeigen3-dev libdnnl-dev
  libcaf-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev
  doctest-dev zlib1g-dev libssl-dev openssl gnuplot-nox clang-format libturbojpeg0-dev
  dataset-fashion-mnist
  chromium  # the report test opens report.html in headless Chromium
)
# The PyTorch peer is needed by bench/ only: PETRA_WITH_PEER=1 adds it.
if [ "${PETRA_WITH_PEER:-0}" = 1 ]; then packages+=(python3-torch); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
