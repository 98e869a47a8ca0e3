#!/usr/bin/env bash
# On the build machine (no GPU needed): a portable build (-DPETRA_PORTABLE=ON: x86-64-v3, as the GPU
# host may lack this host's AVX-512) with the CUDA backend, in its own folder, and the bundle that
# bench/gpu/run.sh runs on a bare GPU machine (driver, CUDA toolkit, PyTorch; none of our Debian
# packages). Two parts:
#   <build>/bundle/   the bundle, unpacked (usable here: source its env.sh, run its bin/petra):
#     bin/        petra, petra_tests_{cuda,actors,sim}, bench_gpu_step, bench_handoff,
#                 bench_overlap_rebuild (stripped)
#     lib/        every shared library they load that the GPU machine may lack (via
#                 /work/shared/tools/bundle-for-gpu; never the CUDA, cuDNN or cuBLAS ones)
#     env.sh      `source` it: loader path, PETRA_PRESETS, PETRA_BINARY, PETRA_FASHION_MNIST, PATH
#     presets/    config/presets/*.yaml (the binary's compiled-in path does not exist there)
#     data/fashion-mnist -> the carried copy (a link, made again where the bundle is unpacked)
#     bench/gpu/, bench/peer/   run.sh, the PyTorch peer and the synthetic CIFAR writer
#     BUILD_INFO  commit, flags, date
#   <repo>/gpu-bundle/   what the device tool carries (git-ignored, < 60 MiB with the working tree):
#     petra-gpu-bundle.tar.xz   the bundle above without its data (oneDNN and OpenBLAS alone are
#                               76 MB unpacked, 11 MB in xz)
#     fashion-mnist/            the four .gz files of /usr/share/datasets/fashion-mnist (30 MB)
# bench/gpu/run.sh unpacks the archive to /tmp on the GPU machine and links the data in.
# Environment: BUILD_DIR (default <repo>/build-gpu), BUNDLE_DIR (default <repo>/gpu-bundle), JOBS (2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
out=${BUNDLE_DIR:-$root/gpu-bundle}
jobs=${JOBS:-2}
bundler=${BUNDLER:-/work/shared/tools/bundle-for-gpu}
fashion=/usr/share/datasets/fashion-mnist
limit_mib=60  # the device tool carries 64 MiB with the working tree

fail() {
  echo "bundle.sh: $*" >&2
  exit 2
}
[ -x /usr/local/cuda/bin/nvcc ] || fail "no /usr/local/cuda/bin/nvcc: the bundle needs the CUDA backend"
[ -x "$bundler" ] || fail "no $bundler (set BUNDLER)"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [ -f "$fashion/$f" ] || fail "$fashion/$f is missing (apt-get install dataset-fashion-mnist)"
done

targets=(petra petra_tests_cuda petra_tests_actors petra_tests_sim bench_gpu_step bench_handoff bench_overlap_rebuild)
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPETRA_CUDA=ON -DPETRA_PORTABLE=ON >"$build/configure.log" 2>&1 ||
  fail "configure failed: see $build/configure.log"
nice -n 10 cmake --build "$build" -j"$jobs" --target "${targets[@]}"

stage=$build/bundle
rm -rf "$stage" "$out"
"$bundler" "$stage" "$build/petra" "$build/petra_tests_cuda" "$build/petra_tests_actors" "$build/petra_tests_sim" \
  "$build/bench/bench_gpu_step" "$build/bench/bench_handoff" "$build/bench/bench_overlap_rebuild"
strip --strip-unneeded "$stage"/bin/*
mkdir -p "$stage/presets" "$stage/data" "$stage/bench/gpu" "$stage/bench/peer" "$out/fashion-mnist"
cp "$root"/config/presets/*.yaml "$stage/presets/"
cp "$root"/bench/gpu/run.sh "$root"/bench/gpu/*.py "$stage/bench/gpu/"
cp "$root"/bench/peer/revnet_peer.py "$stage/bench/peer/"
cat >>"$stage/env.sh" <<'ENV'
# petra: where the bundle's binaries find presets, themselves (tests start `petra node`) and data
export PETRA_PRESETS="$_b/presets"
export PETRA_BINARY="$_b/bin/petra"
export PETRA_FASHION_MNIST="$_b/data/fashion-mnist"
export PATH="$_b/bin:$PATH"
ENV
{
  echo "commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . || echo ' with uncommitted changes')"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC'): Release, PETRA_PORTABLE=ON (-march=x86-64-v3), CUDA arch 90, nvcc $(/usr/local/cuda/bin/nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)"
} >"$stage/BUILD_INFO"
tar -C "$stage" -cf - . | xz -T"$jobs" -6 >"$out/petra-gpu-bundle.tar.xz"
cp "$fashion"/*-ubyte.gz "$out/fashion-mnist/"
ln -s "$out/fashion-mnist" "$stage/data/fashion-mnist"  # after the archive: only here

size_kib=$(du -sk "$out" | cut -f1)
tree_kib=$(git -C "$root" ls-files -z | xargs -0 du -ckL 2>/dev/null | tail -1 | cut -f1)
echo "bundle: $stage ($(du -sh "$stage" | cut -f1) unpacked)"
echo "carried: $out, $((size_kib / 1024)) MiB ($size_kib KiB); with the tracked files ($tree_kib KiB): $(((size_kib + tree_kib) / 1024)) MiB"
ls -l "$out" "$out/fashion-mnist" | sed 's/^/  /'
[ $((size_kib + tree_kib)) -le $((limit_mib * 1024)) ] ||
  fail "the bundle and the working tree are over $limit_mib MiB: the device tool carries 64 MiB"
echo "here: source $stage/env.sh && petra --help"
echo "there: run(command=\"bash bench/gpu/run.sh parity\", carry=[\"gpu-bundle\"])"
