#!/usr/bin/env bash
# On a GPU machine that has the NVIDIA driver, CUDA and cuDNN (PyTorch, compute-sanitizer and ncu for
# some sub-commands) but not petra's other libraries: petra's GPU checks and measurements, from the
# bundle that bench/gpu/bundle.sh built (bench/gpu/README.md). Each sub-command ends with a summary
# table; each run inside it is capped by a time limit.
#
#   run.sh parity     every tests/cuda case, then the GPU actor-runtime tests (tests/actors/
#                     gpu_runtime_test.cpp), each case in its own process, each case's result listed
#   run.sh sanitize   the GPU actor-runtime tests and tests/cuda under compute-sanitizer memcheck
#                     (with stream-ordered race tracking), racecheck and synccheck; errors per tool
#   run.sh train      petra train default on [cuda:0 ×8], async, 3 epochs: test accuracy, images/s
#   run.sh revnet     RevNet-18, micro-batch 128, 3×32×32 (CIFAR-10, else a synthetic set in its
#                     format): PETRA async on [cuda:0 ×10] vs backprop (J = 1) on cuda:0, images/s
#   run.sh speed      bench_gpu_step's RevNet-18 step (fp32, TF32, bf16) alternated SPEED_ROUNDS (3)
#                     times with the PyTorch peer's variants (eager fp32/TF32/bf16 autocast,
#                     cudnn.benchmark, channels-last, a CUDA graph of the whole step; torch.compile
#                     with PEER_COMPILE=1), medians of 50 steps, wall time and GPU span; petra with
#                     cuDNN's heuristic order once; a reversible stage's backward, plain vs
#                     overlapped rebuild (fp32 and bf16); bench_handoff's hand-over costs on the GPU
#   run.sh pareprop   PaReprop's own case: a reversible stage of 3 RevViT transformer blocks at ViT-S,
#                     ViT-B and ViT-L widths (197 tokens), plain order vs the rebuild on a second
#                     stream, in PAREPROP_PRECISIONS (fp32 tf32 bf16), micro-batches PAREPROP_BATCHES
#                     (8,32,128), medians of PAREPROP_ITERS (10)
#   run.sh profile    ncu over two petra training steps: the kernels where a step's time goes
#   run.sh fg         the default recipe for FG_EPOCHS (10) epochs on [cuda:0 ×8], FG_MODE (lockstep,
#                     or simulate: the same weights bit for bit, plus the cosine diagnostic):
#                     forward gradients (local guess, global target), random guess, local learning
#                     (local target), PETRA; test accuracy per epoch and, in
#                     simulate, each epoch's cos(ĝ_j, ∇_{z_j} L) per stage
#   run.sh vit        revvit_tiny_fmnist (the reversible ViT, AdamW) for VIT_EPOCHS (10) epochs of
#                     Fashion-MNIST, async, every stage on cuda:0: backprop (J = 1), PETRA with J = 8
#                     and J = 4 (VIT_RUNS, default "backprop petra-j8 petra-j4"; "-k2" / "-k16" /
#                     "-k32" appended run micro-batches of 64 with k = 2 / 8 with k = 16 / 4 with
#                     k = 32, "-calm" AdamW β1 0.5 at a quarter of the learning rate); test
#                     accuracy per epoch, and each PETRA run's gap to backprop at the last epoch
#   run.sh overlap    no GPU needed: PaReprop's overlapped rebuild on the CPU backend where cores are
#                     to spare (the GPU machine's), bench_overlap_rebuild's plain vs overlapped
#                     backward of a reversible stage of OVERLAP_BLOCKS (3) couplings, for each
#                     of OVERLAP_THREADS (2 4) stage threads
#
# Several sub-commands run one after the other (run.sh parity train). Per sub-command, $OUT (default
# /tmp/petra-gpu-out) gets <cmd>.log (everything printed, the summary at its end) and
# <cmd>-details.tar.gz (per-case logs, metrics, JSON lines).
# Without a GPU every GPU part reports skipped, and train/revnet run their exact command lines on
# the CPU on a few images (a check of the commands, not a measurement); the exit code is 0 unless
# something failed.
# The bundle: run from an unpacked bundle (its bench/gpu/run.sh), this script uses that bundle; run
# from a checkout, it unpacks <checkout>/gpu-bundle/petra-gpu-bundle.tar.xz (bench/gpu/bundle.sh's
# output, copied there) into <checkout>/build-gpu/unpacked/ and links in gpu-bundle/fashion-mnist.
# Environment: BUNDLE (an unpacked bundle, e.g. build-gpu/bundle where it was built; overrides the
# above), PYTHON
# (python3), CIFAR10_DIR, SAN_TOOLS (default "memcheck racecheck synccheck"), SAN_SETS (default
# "actors-gpu cuda"), time limits (seconds): CASE_S, SAN_ACTORS_S, SAN_CUDA_S, TRAIN_S,
# REVNET_S, PEER_S (each peer process of speed, 240), SPEED_PETRA_S (each petra step run, 120),
# FG_S (each fg run); SPEED_ROUNDS (3), PEER_VARIANTS (revnet_peer_gpu.py's --variants),
# PEER_COMPILE (0), SPEED_HEURISTIC (1); REVNET_IMAGES (images per epoch of the RevNet-18 runs,
# default 25600); FG_EPOCHS (10), FG_RUNS (which fg runs, default "fg-local fg-random local petra"),
# FG_MODE (lockstep or simulate, default lockstep); VIT_EPOCHS (10), VIT_RUNS, VIT_S (each vit run,
# 420); OVERLAP_RUNS (11), OVERLAP_BLOCKS (3),
# OVERLAP_THREADS ("2 4"), OVERLAP_BATCHES (32,128), OVERLAP_SCHEDULES (main: plain and overlap +1;
# all: also the rebuild on as many threads as the stage, "+T", and the stage's threads split),
# OVERLAP_S (each bench run, 300).
set -uo pipefail

[ $# -gt 0 ] || set -- parity
for cmd in "$@"; do
  case $cmd in
    parity | sanitize | train | revnet | speed | pareprop | profile | fg | vit | overlap | ahead) ;;
    *)
      echo "run.sh: unknown sub-command '$cmd' (parity, sanitize, train, revnet, speed, pareprop, profile, fg, vit, overlap, ahead)" >&2
      exit 2
      ;;
  esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -n "${BUNDLE:-}" ]; then
  bundle=$BUNDLE
elif [ -f "$here/../../env.sh" ]; then
  bundle=$(cd "$here/../.." && pwd)  # the unpacked bundle's own copy of this script
else
  # A checkout with bench/gpu/bundle.sh's output beside it: <checkout>/gpu-bundle/{petra-gpu-bundle.tar.xz,
  # fashion-mnist/}.
  copied=$(cd "$here/../.." && pwd)/gpu-bundle
  archive=$copied/petra-gpu-bundle.tar.xz
  [ -f "$archive" ] || {
    echo "run.sh: no $archive: build it with bash bench/gpu/bundle.sh and copy gpu-bundle/ here, or set BUNDLE" >&2
    exit 2
  }
  bundle=$(cd "$here/../.." && pwd)/build-gpu/unpacked  # beside the builds, not in what is copied
  stamp="$(stat -c '%s %Y' "$archive")"
  if [ "$(cat "$bundle/.unpacked-from" 2>/dev/null)" != "$stamp" ]; then
    if ! { rm -rf "$bundle" && mkdir -p "$bundle" && xz -dc "$archive" | tar -C "$bundle" -xf -; }; then
      echo "run.sh: could not unpack $archive into $bundle" >&2
      exit 2
    fi
    echo "$stamp" >"$bundle/.unpacked-from"
  fi
  ln -sfn "$copied/fashion-mnist" "$bundle/data/fashion-mnist"
fi
if [ ! -f "$bundle/env.sh" ] || [ ! -x "$bundle/bin/petra" ]; then
  echo "run.sh: no bundle at $bundle (bin/petra and env.sh): build it with bash bench/gpu/bundle.sh" >&2
  exit 2
fi
# shellcheck disable=SC1091
source "$bundle/env.sh"
out=${OUT:-/tmp/petra-gpu-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/petra-gpu.XXXXXX)
python=${PYTHON:-python3}
scripts=$bundle/bench/gpu
[ -f "$scripts/revnet_peer_gpu.py" ] || scripts=$here

if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  gpu=1
  dev=cuda:0
else
  gpu=0
  dev=cpu
fi

# The JSON list "[x,x,...]" of n copies of x.
repeat() {
  local list="" i
  for ((i = 0; i < $2; i++)); do list+="${list:+,}$1"; done
  echo "[$list]"
}

seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

machine_info() {
  echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(hostname), bundle $bundle"
  [ -f "$bundle/BUILD_INFO" ] && sed 's/^/   /' "$bundle/BUILD_INFO"
  if [ "$gpu" = 1 ]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | sed 's/^/   GPU: /'
  else
    echo "   no GPU (nvidia-smi lists none): the GPU parts report skipped"
  fi
  echo "   CPU: $(nproc) cores; LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}

# run_cases LABEL BINARY [doctest filters]: every matching test case in its own process (as ctest
# runs them); appends a row per case to $summary: passed, skipped (with the reason), FAILED (with the
# first failed check), TIMEOUT; the case's full log goes to $details/LABEL-N.log.
run_cases() {
  local label=$1 bin=$2
  shift 2
  local names=() name i=0 rc t0 log result note count
  mapfile -t names < <("$bin" --list-test-cases "$@" 2>/dev/null | awk '/^=+$/ { n++; next } n == 1 && NF')
  if [ "${#names[@]}" = 0 ]; then
    echo "| $label | (no test cases listed by $bin) | FAILED | | |" >>"$summary"
    failures=$((failures + 1))
    return
  fi
  for name in "${names[@]}"; do
    i=$((i + 1))
    log=$details/$label-$i.log
    t0=$(date +%s.%N)
    # doctest splits filters at commas: match them with '?'.
    timeout -k 10 "${CASE_S:-300}" "$bin" -tc="${name//,/?}" "$@" >"$log" 2>&1
    rc=$?
    count=$(grep -oE 'test cases: *[0-9]+' "$log" | grep -oE '[0-9]+$' | head -1)
    note=""
    case $rc in
      0) if [ "${count:-0}" = 1 ]; then result=passed; else result="FAILED"; note="the filter ran ${count:-no} cases"; fi ;;
      77) result=skipped; note=$(grep -m1 '^skipped: ' "$log"); note=${note#"skipped: $name: "}; note=${note:0:110} ;;
      124 | 137) result=TIMEOUT; note="killed after ${CASE_S:-300} s" ;;
      *) result=FAILED; note=$(grep -m1 -E 'ERROR:|FATAL|terminate called|Segmentation' "$log" | cut -c1-160) ;;
    esac
    [ "$result" = passed ] && note=$(grep -m1 'relative error against the CPU' "$log" | sed 's/.*MESSAGE: //' | cut -c1-110)
    case $result in passed | skipped) ;; *) failures=$((failures + 1)) ;; esac
    echo "$label #$i: $result ($(seconds_since "$t0") s) $name"
    echo "| $label | $name | $result | $(seconds_since "$t0") | ${note//|//} |" >>"$summary"
  done
}

# The sub-commands, by kind (each file beside this one).
for part in checks training speed; do
  # shellcheck disable=SC1090
  source "$here/run_$part.sh"
done

status=0
for cmd in "$@"; do
  details=$work/$cmd
  summary=$details/summary.md
  mkdir -p "$details"
  failures=0
  {
    machine_info
    "cmd_$cmd"
    echo ""
    echo "================ summary: $cmd ================"
    cat "$summary"
    echo "failures: $failures"
    echo "$failures" >"$details/failures"
  } 2>&1 | tee "$out/$cmd.log"
  tar -czf "$out/$cmd-details.tar.gz" -C "$work" "$cmd"
  [ "$(cat "$details/failures" 2>/dev/null || echo 1)" = 0 ] || status=1
done
rm -rf "$work"
exit "$status"
