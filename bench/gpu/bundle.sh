#!/usr/bin/env bash
# Builds petra with the CUDA backend for another machine and packs what bench/gpu/run.sh needs there.
# Run it where petra builds (deploy/install-deps.sh's packages, the CUDA toolkit with cuDNN); no GPU
# needed. The GPU machine needs only the NVIDIA driver, CUDA and cuDNN (and, for some sub-commands of
# run.sh, PyTorch, compute-sanitizer and ncu): none of petra's other libraries.
#
#   <build>/            a portable build (-DPETRA_PORTABLE=ON: -march=x86-64-v3, since the GPU machine's
#                       CPU may lack this one's AVX-512) with -DPETRA_CUDA=ON, in its own folder
#   <build>/bundle/     the bundle, unpacked (usable here too: source its env.sh, run bin/petra):
#     bin/              petra, petra_tests_{cuda,actors,sim}, bench_gpu_step, bench_handoff,
#                       bench_overlap_rebuild (stripped)
#     lib/, lib-fallback/, env.sh   the shared libraries they load, but for glibc and the CUDA ones
#                       (bench/gpu/collect_libs.sh); `source env.sh` sets LD_LIBRARY_PATH,
#                       PETRA_PRESETS, PETRA_BINARY, PETRA_FASHION_MNIST and PATH
#     presets/          config/presets/*.yaml (the binary's compiled-in path does not exist there)
#     data/fashion-mnist -> the data beside the archive (a link, made again where it is unpacked)
#     bench/gpu/, bench/peer/   run.sh, the PyTorch peer and the synthetic CIFAR writer
#     BUILD_INFO        commit, build flags, CUDA and glibc versions, date
#   <out>/              what to copy to the GPU machine:
#     petra-gpu-bundle.tar.xz   the bundle without its data
#     fashion-mnist/            the four .gz files of Fashion-MNIST (30 MB)
#
# Environment: BUILD_DIR (default <repo>/build-gpu), BUNDLE_DIR (<out>, default <repo>/gpu-bundle, which
# git ignores), JOBS (parallel build jobs, default 2), CUDA_HOME (default /usr/local/cuda),
# FASHION_MNIST (default /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
out=${BUNDLE_DIR:-$root/gpu-bundle}
jobs=${JOBS:-2}
cuda=${CUDA_HOME:-/usr/local/cuda}
fashion=${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}

fail() {
  echo "bundle.sh: $*" >&2
  exit 2
}
[ -x "$cuda/bin/nvcc" ] || fail "no $cuda/bin/nvcc: the bundle needs the CUDA backend (set CUDA_HOME)"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [ -f "$fashion/$f" ] || fail "$fashion/$f is missing (apt-get install dataset-fashion-mnist, or set FASHION_MNIST)"
done

targets=(petra petra_tests_cuda petra_tests_actors petra_tests_sim bench_gpu_step bench_handoff bench_overlap_rebuild)
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPETRA_CUDA=ON -DPETRA_PORTABLE=ON \
  -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" >"$build/configure.log" 2>&1 || fail "configure failed: see $build/configure.log"
nice -n 10 cmake --build "$build" -j"$jobs" --target "${targets[@]}"

stage=$build/bundle
rm -rf "$stage" "$out"
bash "$here/collect_libs.sh" "$stage" "$build/petra" "$build/petra_tests_cuda" "$build/petra_tests_actors" \
  "$build/petra_tests_sim" "$build/bench/bench_gpu_step" "$build/bench/bench_handoff" "$build/bench/bench_overlap_rebuild"
strip --strip-unneeded "$stage"/bin/*
mkdir -p "$stage/presets" "$stage/data" "$stage/bench/gpu" "$stage/bench/peer" "$out/fashion-mnist"
cp "$root"/config/presets/*.yaml "$stage/presets/"
cp "$root"/bench/gpu/run*.sh "$root"/bench/gpu/*.py "$stage/bench/gpu/"
cp "$root"/bench/peer/revnet_peer.py "$stage/bench/peer/"
cat >>"$stage/env.sh" <<'ENV'
# petra: where the bundle's binaries find presets, themselves (tests start `petra node`) and data
export PETRA_PRESETS="$_b/presets"
export PETRA_BINARY="$_b/bin/petra"
export PETRA_FASHION_MNIST="$_b/data/fashion-mnist"
export PATH="$_b/bin:$PATH"
ENV
{
  echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '(not a git checkout)')$(git -C "$root" diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes')"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC'): Release, PETRA_PORTABLE=ON (-march=x86-64-v3), CUDA arch 90," \
    "nvcc $("$cuda/bin/nvcc" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)"
  echo "needs on the GPU machine: glibc $(ldd --version | head -1 | grep -o '[0-9.]*$') or newer, the NVIDIA driver," \
    "and $(sed -n 's/^_gpu_libs="\(.*\)"$/\1/p' "$stage/env.sh")"
} >"$stage/BUILD_INFO"
tar -C "$stage" -cf - . | xz -T"$jobs" -6 >"$out/petra-gpu-bundle.tar.xz"
cp "$fashion"/*-ubyte.gz "$out/fashion-mnist/"
ln -s "$out/fashion-mnist" "$stage/data/fashion-mnist" # after the archive: only here

echo "bundle: $stage ($(du -sh "$stage" | cut -f1) unpacked)"
echo "to copy: $out ($(du -sh "$out" | cut -f1)):"
ls -l "$out" "$out/fashion-mnist" | sed 's/^/  /'
echo "here: source $stage/env.sh && petra --help"
echo "there, with the checkout and $(basename "$out")/ copied: bash bench/gpu/run.sh parity (bench/gpu/README.md)"
