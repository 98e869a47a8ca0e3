#!/usr/bin/env bash
# On the build machine (no GPU needed): packs what bench/gpu/run.sh needs on a GPU machine that
# has the CUDA toolkit, cuDNN and cuBLAS but none of our Debian packages: petra_tests_cuda,
# bench_gpu_step and the shared libraries they load, except glibc, libstdc++/libgcc_s (the GPU
# image's are newer) and cuBLAS/cuDNN (large; the GPU machine's own match its driver).
# Output: gpu-bundle/petra-gpu-bundle.tar.xz (git-ignored), small enough to carry (< 64 MiB).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-cuda}
out=${BUNDLE_DIR:-$root/gpu-bundle}

cmake --build "$build" --target petra_tests_cuda bench_gpu_step -j"${JOBS:-2}"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$out"
cp "$build/petra_tests_cuda" "$build/bench/bench_gpu_step" "$stage/bin/"
for lib in $(ldd "$stage/bin/petra_tests_cuda" "$stage/bin/bench_gpu_step" | awk '/=> \//{print $3}' | sort -u); do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libstdc++* | libgcc_s*) ;;
    libcublas* | libcudnn*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
tar -C "$stage" -cf - bin lib | xz -T"${JOBS:-2}" -6 > "$out/petra-gpu-bundle.tar.xz"
ls -la "$out/petra-gpu-bundle.tar.xz"
echo "carry gpu-bundle/petra-gpu-bundle.tar.xz and run: bash bench/gpu/run.sh"
