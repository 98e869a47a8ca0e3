#!/usr/bin/env bash
# On the GPU machine, from anywhere in the repository: the CUDA parity tests, then
#  (a) one RevNet-18 training step (3×32×32, micro-batch 128, backprop): petra vs the PyTorch peer,
#  (b) the reversible backward with/without two-stream overlap (not implemented yet),
#  (c) PETRA with J = 10 stages vs backprop on one GPU, in images/s.
# Binaries come from gpu-bundle/petra-gpu-bundle.tar.xz (made by bench/gpu/bundle.sh on the build
# machine) or, without it, from $BUILD_DIR (default build-cuda). Results go to $OUT (the device
# tool's output folder) or /tmp/petra-gpu-bench. Options: TF32=1, ITERS, BATCH, MICRO_BATCHES, PYTHON.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
results=${OUT:-/tmp/petra-gpu-bench}
mkdir -p "$results"
bundle=${BUNDLE:-$root/gpu-bundle/petra-gpu-bundle.tar.xz}
python=${PYTHON:-python3}
tf32=${TF32:-0}

if [ -f "$bundle" ]; then
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$bundle"
  tests=$unpacked/bin/petra_tests_cuda
  bench=$unpacked/bin/bench_gpu_step
  export LD_LIBRARY_PATH=$unpacked/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  tests=${BUILD_DIR:-$root/build-cuda}/petra_tests_cuda
  bench=${BUILD_DIR:-$root/build-cuda}/bench/bench_gpu_step
fi
# cuDNN and cuBLAS on the loader path: the toolkit's or the pip nvidia-* packages'.
for l in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
  if ! ldconfig -p 2>/dev/null | grep -q "$l"; then
    d=$(find /usr/local /usr/lib /opt /root /home -name "$l" -not -path '*/proc/*' 2>/dev/null | head -1)
    [ -n "$d" ] && export LD_LIBRARY_PATH=$(dirname "$d"):${LD_LIBRARY_PATH:-}
  fi
done

nvidia-smi -L 2>&1 | tee "$results/gpus.txt"
echo "== CUDA parity tests ($tests)"
"$tests" 2>&1 | tee "$results/parity.txt"
tests_rc=${PIPESTATUS[0]}

echo "== benchmarks"
"$bench" --batch "${BATCH:-128}" --iters "${ITERS:-20}" --warmup 5 \
  --micro-batches "${MICRO_BATCHES:-60}" --tf32 "$tf32" 2> "$results/bench_stderr.txt" | tee "$results/ours.jsonl"
peer_flags=()
[ "$tf32" = 1 ] && peer_flags+=(--tf32)
"$python" "$root/bench/gpu/revnet_peer_gpu.py" --arch revnet18 --batch "${BATCH:-128}" --iters "${ITERS:-20}" \
  --warmup 5 "${peer_flags[@]}" 2> "$results/peer_stderr.txt" | tee "$results/peer.jsonl"

"$python" - "$results/ours.jsonl" "$results/peer.jsonl" <<'PY'
import json, sys
rows = []
for path in sys.argv[1:]:
    try:
        rows += [json.loads(l) for l in open(path) if l.startswith("{")]
    except OSError:
        pass
ours = next((r for r in rows if r.get("bench") == "step" and r.get("impl") == "petra"), None)
peer = next((r for r in rows if r.get("bench") == "step" and r.get("impl") == "torch" and "median_ms" in r), None)
print("\n(a) RevNet-18 training step, 3x32x32, micro-batch 128, backprop (median ms)")
if ours:
    print("    petra %.2f ms (min %.2f)" % (ours["median_ms"], ours["min_ms"]))
if peer:
    print("    torch %.2f ms (min %.2f)  [%s, %s]" % (peer["median_ms"], peer["min_ms"], peer["torch"], peer["gpu"]))
if ours and peer:
    print("    ratio petra/torch = %.2f" % (ours["median_ms"] / peer["median_ms"]))
print("(b) reversible backward with/without two-stream overlap: not implemented")
print("(c) images/s on one GPU (fill and drain included)")
for r in rows:
    if r.get("bench") == "method":
        print("    %-10s J=%-2d %8.1f images/s  (%d micro-batches, %d ticks, mean loss %.3f)" %
              (r["method"], r["stages"], r["images_per_s"], r["micro_batches"], r["ticks"], r["mean_loss"]))
PY
echo "results in $results"
exit "$tests_rc"
