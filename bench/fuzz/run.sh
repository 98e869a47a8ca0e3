#!/usr/bin/env bash
# Long fuzzing run of one target: bench/fuzz/run.sh TARGET SECONDS [LIBFUZZER FLAGS...]
# Builds the clang fuzz build (build-fuzz/, CUDA off) if needed, fuzzes (one process, no -jobs) a copy of
# tests/fuzz/corpus/TARGET for SECONDS with one job, and leaves new inputs and crash files in
# bench/fuzz/out/TARGET/ (add a crash to the corpus once it is fixed: it is replayed by ctest).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 TARGET SECONDS [LIBFUZZER FLAGS...]   (targets: idx cifar10 imagenet32 jpeg safetensors checkpoint config set messages)" >&2
  exit 2
fi
target=$1
seconds=$2
shift 2  # what is left goes to libFuzzer, e.g. -fork=1 -ignore_ooms=1 to go on past a known finding
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${PETRA_FUZZ_BUILD:-$root/build-fuzz}
clang=${PETRA_FUZZ_CXX:-clang++-14}
if [[ ! -d $root/tests/fuzz/corpus/$target ]]; then
  echo "$0: no corpus tests/fuzz/corpus/$target: unknown target '$target'" >&2
  exit 2
fi
if ! command -v "$clang" >/dev/null; then
  echo "$0: $clang not found: apt-get install -y clang-14 libclang-rt-14-dev" >&2
  exit 2
fi
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPETRA_FUZZ=ON -DPETRA_CUDA=OFF \
    -DCMAKE_CXX_COMPILER="$clang" -DPETRA_NATIVE=OFF
fi
cmake --build "$build" --target "petra_fuzz_$target" -j "${PETRA_FUZZ_BUILD_JOBS:-2}"

# LeakSanitizer stops the process under ptrace at exit, which hangs in containers that forbid it;
# set ASAN_OPTIONS=detect_leaks=1 where ptrace is allowed.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
out=$root/bench/fuzz/out/$target
mkdir -p "$out/corpus" "$out/crashes"
cp -n "$root/tests/fuzz/corpus/$target"/* "$out/corpus/"
echo "fuzzing $target for $seconds s; new inputs in $out/corpus, crashes in $out/crashes"
cd "$out"
"$build/petra_fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=4096 -artifact_prefix="$out/crashes/" -print_final_stats=1 "$@" "$out/corpus"
