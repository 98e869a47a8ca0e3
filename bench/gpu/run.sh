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
# FG_MODE (lockstep or simulate, default lockstep); OVERLAP_RUNS (11), OVERLAP_BLOCKS (3),
# OVERLAP_THREADS ("2 4"), OVERLAP_BATCHES (32,128), OVERLAP_SCHEDULES (main: plain and overlap +1;
# all: also the rebuild on as many threads as the stage, "+T", and the stage's threads split),
# OVERLAP_S (each bench run, 300).
set -uo pipefail

[ $# -gt 0 ] || set -- parity
for cmd in "$@"; do
  case $cmd in
    parity | sanitize | train | revnet | speed | pareprop | profile | fg | overlap | ahead) ;;
    *)
      echo "run.sh: unknown sub-command '$cmd' (parity, sanitize, train, revnet, speed, pareprop, profile, fg, overlap, ahead)" >&2
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

cmd_parity() {
  echo "## parity: every case of tests/cuda and of the GPU actor-runtime tests" >"$summary"
  echo "" >>"$summary"
  echo "| binary | test case | result | s | note |" >>"$summary"
  echo "|---|---|---|---:|---|" >>"$summary"
  run_cases cuda "$bundle/bin/petra_tests_cuda"
  run_cases actors-gpu "$bundle/bin/petra_tests_actors" -sf='*gpu_runtime_test.cpp'
  # The sim device's hand-over tests include the CUDA refusal paths; they need no GPU.
  run_cases sim "$bundle/bin/petra_tests_sim" -sf='*sim_handover_test.cpp'
  local p s f
  p=$(grep -c '| passed |' "$summary")
  s=$(grep -c '| skipped |' "$summary")
  f=$(grep -cE '\| (FAILED|TIMEOUT) \|' "$summary")
  printf '\n%s passed, %s skipped, %s failed or timed out\n' "$p" "$s" "$f" >>"$summary"
}

# sanitize_one TOOL LABEL SECONDS BINARY [doctest filters]
sanitize_one() {
  local tool=$1 label=$2 limit=$3 bin=$4
  shift 4
  local log=$details/$tool-$label.log t0 rc flags=(--tool "$tool" --target-processes all --print-limit 50)
  if [ "$tool" = memcheck ]; then
    flags+=(--leak-check full)
    compute-sanitizer --help 2>/dev/null | grep -q -- --track-stream-ordered-races &&
      flags+=(--track-stream-ordered-races all)
  fi
  t0=$(date +%s.%N)
  echo "-- compute-sanitizer ${flags[*]} $(basename "$bin") $* (at most $limit s)"
  timeout -k 10 "$limit" compute-sanitizer "${flags[@]}" "$bin" "$@" >"$log" 2>&1
  rc=$?
  local errors warnings processes status
  # racecheck ends each process with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)",
  # the other tools with "ERROR SUMMARY: E errors".
  local pattern='ERROR SUMMARY'
  grep -q 'RACECHECK SUMMARY' "$log" && pattern='RACECHECK SUMMARY'
  errors=$(grep "$pattern" "$log" | grep -oE '[0-9]+ errors?' | grep -oE '[0-9]+' | awk '{ s += $1 } END { print s + 0 }')
  warnings=$(grep "$pattern" "$log" | grep -oE '[0-9]+ warnings?' | grep -oE '[0-9]+' | awk '{ s += $1 } END { print s + 0 }')
  processes=$(grep -c "$pattern" "$log")
  case $rc in
    0) status="tests passed" ;;
    124 | 137) status="TIMEOUT after $limit s (partial)" ;;
    *) status="exit $rc" ;;
  esac
  [ "$errors" != 0 ] && failures=$((failures + 1))
  case $rc in 0 | 124 | 137) ;; *) failures=$((failures + 1)) ;; esac
  echo "| $tool | $label | $errors | $warnings | $processes | $status | $(seconds_since "$t0") |" >>"$summary"
  grep -m5 -E '^========= (Invalid|Race|Barrier|Program hit|Leaked|Error)' "$log" | sed 's/^/    /'
}

cmd_sanitize() {
  echo "## sanitize: compute-sanitizer over the GPU tests" >"$summary"
  echo "" >>"$summary"
  if [ "$gpu" = 0 ] || ! command -v compute-sanitizer >/dev/null; then
    echo "skipped: $([ "$gpu" = 0 ] && echo "no GPU" || echo "compute-sanitizer is not on PATH")" >>"$summary"
    return
  fi
  compute-sanitizer --version | tail -1
  echo "| tool | tests | errors | warnings | processes | status | s |" >>"$summary"
  echo "|---|---|---:|---:|---:|---|---:|" >>"$summary"
  local tool
  local set
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    case $tool in memcheck | racecheck | synccheck) ;; *) echo "SAN_TOOLS: unknown tool '$tool' (memcheck, racecheck, synccheck)" >&2; exit 2 ;; esac
    for set in ${SAN_SETS:-actors-gpu cuda}; do
      case $set in
        actors-gpu) sanitize_one "$tool" actors-gpu "${SAN_ACTORS_S:-100}" "$bundle/bin/petra_tests_actors" -sf='*gpu_runtime_test.cpp' ;;
        cuda) sanitize_one "$tool" cuda "${SAN_CUDA_S:-70}" "$bundle/bin/petra_tests_cuda" ;;
        *) echo "SAN_SETS: unknown set '$set' (actors-gpu, cuda)" >&2; exit 2 ;;
      esac
    done
  done
  echo "" >>"$summary"
  echo "errors = the ERROR SUMMARY (memcheck, synccheck) or RACECHECK SUMMARY error counts, summed over processes (a petra node child counts too); a TIMEOUT row covers the cases that ran" >>"$summary"
}

# summarize_run NAME RUN_DIR: one table row from a run's metrics.jsonl (last epoch's test accuracy,
# images/s of the first and the last epoch, the whole run's images/s).
summarize_run() {
  "$python" - "$1" "$2/metrics.jsonl" >>"$summary" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    rows = [json.loads(l) for l in open(path)]
except OSError:
    print("| %s | (no metrics.jsonl: the run did not start or was killed) | | | | |" % name)
    sys.exit(0)
epochs = [r for r in rows if r.get("event") == "epoch"]
summary = next((r for r in rows if r.get("event") == "summary"), {})
if not epochs:
    print("| %s | (no epoch finished) | | | | |" % name)
    sys.exit(0)
last = epochs[-1]
print("| %s | %d | %.2f %% | %.0f | %.0f | %.0f |" % (
    name, len(epochs), 100 * last["test_accuracy"], epochs[0]["images_per_s"], last["images_per_s"],
    summary.get("images_per_s", 0)))
PY
}

# train_run NAME SECONDS petra-arguments...: runs `petra train`, keeps its metrics and config.
train_run() {
  local name=$1 limit=$2 rc t0
  shift 2
  t0=$(date +%s.%N)
  echo "-- petra $* (at most $limit s)"
  timeout -k 10 "$limit" "$bundle/bin/petra" "$@" --set "output.dir=$work/runs" --set "output.name=$name" \
    --set output.progress=false 2>&1 | tee "$details/$name.log"
  rc=${PIPESTATUS[0]}
  echo "   exit $rc after $(seconds_since "$t0") s"
  [ "$rc" = 0 ] || failures=$((failures + 1))
  cp "$work/runs/$name/metrics.jsonl" "$details/$name-metrics.jsonl" 2>/dev/null
  cp "$work/runs/$name/config.yaml" "$details/$name-config.yaml" 2>/dev/null
  summarize_run "$name" "$work/runs/$name"
}

# Without a GPU: the same command lines on the CPU on a few images, one epoch.
dry_limits() {
  [ "$gpu" = 1 ] && return
  echo --set "data.train_limit=$1" --set data.test_limit=64 --set training.epochs=1
}

cmd_train() {
  echo "## train: petra train default, async, every stage on $dev" >"$summary"
  echo "" >>"$summary"
  [ "$gpu" = 0 ] && echo "dry run on the CPU (no GPU): 512 images, 1 epoch — checks the command line, not a measurement" >>"$summary"
  echo "| run | epochs | test accuracy | images/s epoch 1 | images/s last epoch | images/s run |" >>"$summary"
  echo "|---|---:|---:|---:|---:|---:|" >>"$summary"
  # shellcheck disable=SC2046
  train_run fashion-default "${TRAIN_S:-420}" train default --set runtime.mode=async \
    --set "pipeline.devices=$(repeat "$dev" 8)" --set "data.path=$PETRA_FASHION_MNIST" $(dry_limits 512)
  echo "" >>"$summary"
  echo "the CPU runs of the same config reach 86–87 % test accuracy after 3 epochs" >>"$summary"
}

cmd_revnet() {
  local data kind
  for data in "${CIFAR10_DIR:-}" /usr/share/datasets/cifar10 /usr/share/datasets/cifar10/cifar-10-batches-bin; do
    [ -n "$data" ] && [ -f "$data/data_batch_1.bin" ] && [ -f "$data/test_batch.bin" ] && break
    data=""
  done
  if [ -n "$data" ]; then
    kind="CIFAR-10 at $data"
  else
    data=$work/synthetic-cifar
    "$python" "$scripts/make_synthetic_cifar.py" "$data" --per-file "$([ "$gpu" = 1 ] && echo 10000 || echo 200)" ||
      failures=$((failures + 1))
    kind="a synthetic CIFAR-shaped set (make_synthetic_cifar.py: class colours under noise; accuracy means nothing)"
  fi
  local images=${REVNET_IMAGES:-25600}
  echo "## revnet: RevNet-18, micro-batch 128, 3×32×32, on $dev: PETRA (async, J = 10) vs backprop (J = 1)" >"$summary"
  echo "" >>"$summary"
  echo "data: $kind; $images images per epoch, 2 epochs (epoch 1 includes cuDNN's first plans)" >>"$summary"
  [ "$gpu" = 0 ] && echo "dry run on the CPU (no GPU): 256 images, 1 epoch — checks the command lines, not a measurement" >>"$summary"
  echo "" >>"$summary"
  echo "| run | epochs | test accuracy | images/s epoch 1 | images/s last epoch | images/s run |" >>"$summary"
  echo "|---|---:|---:|---:|---:|---:|" >>"$summary"
  local common=(--set runtime.mode=async --set training.micro_batch=128 --set training.epochs=2
    --set "data.train_limit=$images" --set data.test_limit=1024 --set "data.path=$data" --set data.workers=4
    --set training.schedule.warmup_epochs=0.5)
  # shellcheck disable=SC2046
  train_run revnet18-petra-j10 "${REVNET_S:-240}" train revnet18_cifar10 "${common[@]}" \
    --set training.method=petra --set "pipeline.devices=$(repeat "$dev" 10)" $(dry_limits 256)
  # shellcheck disable=SC2046
  train_run revnet18-backprop-j1 "${REVNET_S:-240}" train revnet18_cifar10 "${common[@]}" \
    --set training.method=backprop --set "pipeline.stage_blocks=[10]" --set "pipeline.devices=[$dev]" \
    $(dry_limits 256)
  "$python" - "$details/revnet18-petra-j10-metrics.jsonl" "$details/revnet18-backprop-j1-metrics.jsonl" \
    >>"$summary" <<'PY'
import json, sys
def last_rate(path):
    try:
        epochs = [r for r in map(json.loads, open(path)) if r.get("event") == "epoch"]
    except OSError:
        return None
    return epochs[-1]["images_per_s"] if epochs else None
petra, backprop = (last_rate(p) for p in sys.argv[1:])
if petra and backprop:
    print("\nPETRA / backprop images/s (last epoch): %.2f" % (petra / backprop))
PY
}

# The accuracy of every epoch of each run, a row per run (the forward-gradient table).
summarize_epochs() {
  "$python" - "$@" >>"$summary" <<'PY'
import json, sys
for path in sys.argv[1:]:
    name = path.split("/")[-1].replace("-metrics.jsonl", "")
    try:
        rows = [json.loads(l) for l in open(path)]
    except OSError:
        print("| %s | (no metrics.jsonl: the run did not start or was killed) | | |" % name)
        continue
    epochs = [r for r in rows if r.get("event") == "epoch"]
    summary = next((r for r in rows if r.get("event") == "summary"), {})
    accuracies = " / ".join("%.2f" % (100 * e["test_accuracy"]) for e in epochs) or "(no epoch finished)"
    rates = " / ".join("%.0f" % e["images_per_s"] for e in epochs)
    print("| %s | %s | %s | %.0f |" % (name, accuracies, rates, summary.get("images_per_s", 0)))
# The cosine diagnostic (simulate only): each epoch's mean cos(ĝ_j, ∇_{z_j} L) per stage j < J.
cosines = []
for path in sys.argv[1:]:
    name = path.split("/")[-1].replace("-metrics.jsonl", "")
    try:
        rows = [json.loads(l) for l in open(path)]
    except OSError:
        continue
    for e in (r for r in rows if r.get("event") == "epoch"):
        means = [s.get("diagnostic_gradient_cosine_mean") for s in e.get("stages", [])]
        if any(m is not None for m in means):
            cosines.append("| %s | %d | %s |" % (name, e["epoch"], " ".join(
                "%.3f" % m if m is not None else "—" for m in means)))
if cosines:
    print("\n| run | epoch | cos(ĝ_j, ∇_{z_j} L) per stage (diagnostic, sampled micro-batches) |")
    print("|---|---:|---|")
    print("\n".join(cosines))
PY
}

cmd_fg() {
  local epochs=${FG_EPOCHS:-10} mode=${FG_MODE:-lockstep} run files=()
  case $mode in
    lockstep | simulate) ;;
    *)
      echo "run.sh fg: FG_MODE must be lockstep or simulate, not '$mode'" >&2
      failures=$((failures + 1))
      return
      ;;
  esac
  echo "## fg: petra train default, $mode, $epochs epochs, every stage on $dev" >"$summary"
  echo "" >>"$summary"
  [ "$gpu" = 0 ] && echo "dry run on the CPU (no GPU): 256 images, 1 epoch — checks the command lines, not a measurement" >>"$summary"
  local common=(--set "runtime.mode=$mode" --set "training.epochs=$epochs" --set "data.path=$PETRA_FASHION_MNIST"
    --set "pipeline.devices=$(repeat "$dev" 8)")
  echo "| run | epochs | test accuracy | images/s epoch 1 | images/s last epoch | images/s run |" >>"$summary"
  echo "|---|---:|---:|---:|---:|---:|" >>"$summary"
  for run in ${FG_RUNS:-fg-local fg-random local petra}; do
    local method=()
    case $run in
      fg-local) method=(--set training.method=forward_gradient) ;;
      fg-random) method=(--set training.method=forward_gradient --set training.forward_gradient.guess=random) ;;
      local) method=(--set training.method=forward_gradient --set training.forward_gradient.target=local) ;;
      petra) method=(--set training.method=petra) ;;
      *)
        echo "run.sh fg: unknown run '$run' in FG_RUNS (fg-local, fg-random, local, petra)" >&2
        failures=$((failures + 1))
        continue
        ;;
    esac
    # shellcheck disable=SC2046
    train_run "$run" "${FG_S:-140}" train default "${common[@]}" "${method[@]}" $(dry_limits 256)
    files+=("$details/$run-metrics.jsonl")
  done
  echo "" >>"$summary"
  echo "| run | test accuracy per epoch (%) | images/s per epoch | images/s run |" >>"$summary"
  echo "|---|---|---|---:|" >>"$summary"
  summarize_epochs "${files[@]}"
}

# PaReprop across stages: the default preset in lockstep with every stage on $dev, overlap_rebuild
# off and on in turn (AHEAD_RUNS pairs, one epoch of AHEAD_IMAGES): images/s, and stage 2's busy
# seconds and backwards whose rebuild started ahead (stage 3 sends it its rebuilt input early).
cmd_ahead() {
  local pairs=${AHEAD_RUNS:-3} images=${AHEAD_IMAGES:-30000} i ov files=()
  [ "$gpu" = 0 ] && pairs=1 images=512
  echo "## ahead: petra train default, lockstep, every stage on $dev, overlap_rebuild false/true, $images images" >"$summary"
  echo "" >>"$summary"
  [ "$gpu" = 0 ] && echo "dry run on the CPU (no GPU): 512 images — checks the command lines, not a measurement" >>"$summary"
  for ((i = 1; i <= pairs; i++)); do
    for ov in false true; do
      train_run "ahead-$ov-$i" "${AHEAD_S:-120}" train default --set runtime.mode=lockstep --set training.epochs=1 \
        --set "data.train_limit=$images" --set data.test_limit=256 --set "data.path=$PETRA_FASHION_MNIST" \
        --set "pipeline.devices=$(repeat "$dev" 8)" --set "runtime.overlap_rebuild=$ov"
      files+=("$details/ahead-$ov-$i-metrics.jsonl")
    done
  done
  echo "" >>"$summary"
  "$python" - "${files[@]}" >>"$summary" <<'PY'
import json, statistics, sys
rows = {}
for path in sys.argv[1:]:
    overlap = "-true-" in path
    try:
        lines = [json.loads(l) for l in open(path)]
    except OSError:
        continue
    for d in lines:
        if "stages" in d and d.get("event", "epoch") == "epoch":
            s2 = d["stages"][1]
            rows.setdefault(overlap, []).append(
                (d.get("images_per_s", 0), s2.get("busy_seconds", 0), s2.get("rebuilds_ahead", 0)))
print("| overlap_rebuild | runs | images/s (median) | stage 2 busy s (median) | stage 2 rebuilds ahead |")
print("|---|---:|---:|---:|---|")
for overlap in (False, True):
    r = rows.get(overlap, [])
    if r:
        print("| %s | %d | %.0f | %.3f | %s |" % (str(overlap).lower(), len(r), statistics.median(x[0] for x in r),
                                               statistics.median(x[1] for x in r), ", ".join(str(x[2]) for x in r)))
PY
}

# The overlapped rebuild on the CPU backend of a machine with cores to spare (a GPU machine usually
# has them); the GPU is not used.
cmd_overlap() {
  local blocks=${OVERLAP_BLOCKS:-3} runs=${OVERLAP_RUNS:-11} batches=${OVERLAP_BATCHES:-32,128} t rc
  local schedules=${OVERLAP_SCHEDULES:-main}
  case $schedules in
    main | all) ;;
    *)
      echo "run.sh overlap: OVERLAP_SCHEDULES must be main or all, not '$schedules'" >&2
      failures=$((failures + 1))
      return
      ;;
  esac
  [ "$gpu" = 0 ] && runs=1 batches=8
  echo "## overlap: bench_overlap_rebuild, the CPU backend, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >"$summary"
  [ "$gpu" = 0 ] && echo "dry run (no GPU machine): 1 run at micro-batch 8 — checks the command lines, not a measurement" >>"$summary"
  for t in ${OVERLAP_THREADS:-2 4}; do
    echo "-- bench_overlap_rebuild $runs $t $batches $schedules $blocks (at most ${OVERLAP_S:-300} s)"
    echo "" >>"$summary"
    timeout -k 10 "${OVERLAP_S:-300}" "$bundle/bin/bench_overlap_rebuild" "$runs" "$t" "$batches" "$schedules" "$blocks" |
      tee "$details/overlap-$t.md"
    rc=${PIPESTATUS[0]}
    cat "$details/overlap-$t.md" >>"$summary"
    if [ "$rc" != 0 ]; then
      failures=$((failures + 1))
      echo "(exit $rc: the rows above are the cases that finished)" >>"$summary"
    fi
  done
}

# speed: petra's RevNet-18 step (bench_gpu_step, J = 1) and the PyTorch peer's variants
# (revnet_peer_gpu.py), alternated: each of SPEED_ROUNDS rounds runs petra's step in fp32, TF32
# and bf16 (convolution algorithms timed once per shape, the default), then every peer variant
# (PEER_VARIANTS) in one python process, so that clock and thermal drift fall on both alike. Then
# once: petra with cuDNN's heuristic order (SPEED_HEURISTIC=1: the algorithms before timing),
# PETRA vs backprop through the simulator and the reversible stage's overlap (fp32; the overlap in
# bf16 too), and bench_handoff. PEER_COMPILE=1 adds a torch.compile row (about a minute to compile).
speed_precisions=(fp32 tf32 bf16)
speed_peer_variants="fp32,tf32,bf16,fp32+bench,tf32+cl+bench,bf16+cl+bench,tf32+cl+bench+graph,bf16+cl+bench+graph"

# speed_petra TAG SECONDS bench_gpu_step-options...: one run, its JSON lines tagged "round": TAG.
speed_petra() {
  local tag=$1 limit=$2 rc err=$details/petra-stderr-$1-$(echo "$*" | md5sum | cut -c1-8).log
  shift 2
  echo "-- bench_gpu_step $* (round $tag, at most $limit s)"
  timeout -k 10 "$limit" "$bundle/bin/bench_gpu_step" "$@" 2>"$err" |
    sed "s/^{/{\"round\": \"$tag\", /" | tee -a "$details/petra.jsonl"
  rc=${PIPESTATUS[0]}
  grep -m1 '^backend:' "$err"
  if [ "$rc" != 0 ]; then
    failures=$((failures + 1))
    echo "- bench_gpu_step $* (round $tag): exit $rc: $(grep -v '^backend:' "$err" | tail -3 | tr '\n' ' ' | cut -c1-400)" \
      >>"$details/petra-failed.md"
  fi
}

# speed_peer TAG peer-options...: every variant in one process, tagged "round": TAG.
speed_peer() {
  local tag=$1 rc t0
  shift
  t0=$(date +%s.%N)
  echo "-- revnet_peer_gpu.py $* (round $tag, at most ${PEER_S:-240} s)"
  timeout -k 10 "${PEER_S:-240}" env PYTHONUNBUFFERED=1 "$python" "$scripts/revnet_peer_gpu.py" "$@" \
    2>>"$details/peer-stderr.log" | sed "s/^{/{\"round\": \"$tag\", /" | tee -a "$details/peer.jsonl"
  rc=${PIPESTATUS[0]}
  echo "   exit $rc after $(seconds_since "$t0") s"
  if [ "$rc" != 0 ]; then
    failures=$((failures + 1))
    echo "- revnet_peer_gpu.py (round $tag): exit $rc: $(tail -3 "$details/peer-stderr.log" | tr '\n' ' ' | cut -c1-400)" \
      >>"$details/petra-failed.md"
  fi
}

cmd_speed() {
  local rounds=${SPEED_ROUNDS:-3} variants=${PEER_VARIANTS:-$speed_peer_variants} r p
  case $rounds in
    '' | *[!0-9]* | 0)
      echo "run.sh speed: SPEED_ROUNDS must be a positive integer, not '$rounds'" >&2
      failures=$((failures + 1))
      return
      ;;
  esac
  [ "${PEER_COMPILE:-0}" = 1 ] && variants+=",tf32+compile"
  local peer=(--arch revnet18 --batch 128 --warmup 10 --iters 50 --variants "$variants")
  echo "## speed: one RevNet-18 training step (backprop, J = 1), micro-batch 128, 3×32×32, medians of 50 steps after 10, petra and the PyTorch peer alternated $rounds times" >"$summary"
  echo "" >>"$summary"
  if [ "$gpu" = 0 ]; then
    # The same options, checked by bench_gpu_step and the peer before they look for a GPU.
    for p in "${speed_precisions[@]}"; do
      speed_petra 1 60 --precision "$p" --methods 0 --overlap 0 --iters 1 --warmup 0
    done
    speed_petra heuristic 60 --precision fp32 --search heuristic --methods 0 --overlap 0 --iters 1 --warmup 0
    speed_peer 1 "${peer[@]}"
    echo "-- bench_handoff (its table: in the summary)"
    "$bundle/bin/bench_handoff" --repeats 20 >"$details/handoff.md" || failures=$((failures + 1))
    echo "skipped: no GPU (bench_gpu_step and the PyTorch peer need one; bench_handoff measured the sim paths only)" >>"$summary"
    echo "" >>"$summary"
    cat "$details/handoff.md" >>"$summary"
    return
  fi
  # Round 1 times each shape's algorithms and records them (cudnn_algorithms.json's format);
  # later rounds and the extra runs repeat the record (runtime.cudnn_algorithms), so they time the
  # same algorithms and skip the search.
  local record
  for ((r = 1; r <= rounds; r++)); do
    for p in "${speed_precisions[@]}"; do
      record=$details/cudnn_algorithms-$p.json
      if [ "$r" = 1 ] || [ ! -s "$record" ]; then
        speed_petra "$r" "${SPEED_PETRA_S:-120}" --precision "$p" --methods 0 --overlap 0 --record "$record"
      else
        speed_petra "$r" "${SPEED_PETRA_S:-120}" --precision "$p" --methods 0 --overlap 0 --algorithms "$record"
      fi
    done
    if [ "$r" = 1 ]; then
      speed_peer "$r" "${peer[@]}" --count-flops
    else
      speed_peer "$r" "${peer[@]}"
    fi
  done
  if [ "${SPEED_HEURISTIC:-1}" = 1 ]; then
    for p in "${speed_precisions[@]}"; do
      speed_petra heuristic "${SPEED_PETRA_S:-120}" --precision "$p" --search heuristic --methods 0 --overlap 0
    done
  fi
  local repeat
  for p in fp32 bf16; do
    repeat=()
    [ -s "$details/cudnn_algorithms-$p.json" ] && repeat=(--algorithms "$details/cudnn_algorithms-$p.json")
    if [ "$p" = fp32 ]; then
      speed_petra extra 300 --precision fp32 --methods 1 --overlap 1 --iters 20 "${repeat[@]}"
    else
      speed_petra extra 300 --precision bf16 --methods 0 --overlap 1 --iters 20 "${repeat[@]}"
    fi
  done
  echo "-- bench_handoff (its table: in the summary)"
  timeout -k 10 120 "$bundle/bin/bench_handoff" --repeats 200 >"$details/handoff.md" || failures=$((failures + 1))
  "$python" - "$details/petra.jsonl" "$details/peer.jsonl" >>"$summary" <<'PY'
import json, statistics, sys
def rows(path):
    try:
        return [json.loads(l) for l in open(path) if l.startswith("{")]
    except OSError:
        return []
ours, peer = rows(sys.argv[1]), rows(sys.argv[2])
flops = next((r["step_flops"] for r in peer if r.get("step_flops")), 0)
names = {"fp32": "fp32", "tf32": "TF32", "bf16": "bf16", "bf16_emulated": "bf16 emulated"}
def rounds_of(r):
    return r.get("round", "").isdigit()
# One row per implementation and math, over the alternated rounds: the median of the rounds'
# medians, the smallest step, the median GPU span.
groups = {}
for r in ours:
    if r.get("bench") == "step" and rounds_of(r):
        groups.setdefault(("petra", r["precision"]), []).append(r)
for r in peer:
    if rounds_of(r):
        groups.setdefault(("torch " + r.get("variant", "?"), r.get("math", "?")), []).append(r)
def summary(rs):
    timed = [r for r in rs if "median_ms" in r]
    if not timed:
        return None
    return {"median": statistics.median(r["median_ms"] for r in timed), "min": min(r["min_ms"] for r in timed),
            "gpu": statistics.median(r["gpu_median_ms"] for r in timed if "gpu_median_ms" in r)
            if any("gpu_median_ms" in r for r in timed) else None,
            "rounds": " / ".join("%.2f" % r["median_ms"] for r in timed), "n": len(timed)}
petra = {math: summary(rs) for (impl, math), rs in groups.items() if impl == "petra"}
print("| implementation | math | median ms | per round | min ms | GPU span ms | images/s | TFLOP/s | petra / this |")
print("|---|---|---:|---|---:|---:|---:|---:|---:|")
maths = ["fp32", "tf32", "bf16"]
order = sorted(groups, key=lambda k: (k[0] != "petra", maths.index(k[1]) if k[1] in maths else 9, k[0]))
for impl, math in order:
    s = summary(groups[(impl, math)])
    if s is None:
        why = next((r.get("skipped") or r.get("status") for r in groups[(impl, math)] if r.get("skipped")), "?")
        print("| %s | %s | %s | | | | | | |" % (impl, names.get(math, math), str(why)[:120].replace("|", "/")))
        continue
    tflops = "%.1f" % (flops / (s["median"] * 1e-3) / 1e12) if flops else ""
    mine = petra.get(math)
    ratio = "%.2f" % (mine["median"] / s["median"]) if mine and impl != "petra" else ""
    gpu = "%.2f" % s["gpu"] if s["gpu"] is not None else ""
    print("| %s | %s | %.2f | %s | %.2f | %s | %.0f | %s | %s |" % (
        impl, names.get(math, math), s["median"], s["rounds"], s["min"], gpu, 128000.0 / s["median"], tflops, ratio))
gpu_name = next((r.get("gpu") for r in peer if r.get("gpu")), "?")
print("\nGPU: %s; torch %s; TFLOP/s = one step's FLOPs (%.3g, torch.utils.flop_counter, forward + backward) / median;"
      " GPU span = CUDA events before a step's first op and after its last (idle gaps between kernels included);"
      " torch variants: cl = channels-last, bench = cudnn.benchmark, graph = the whole step as one CUDA graph" % (
          gpu_name, next((r.get("torch") for r in peer if r.get("torch")), "?"), flops))
heuristic = {r["precision"]: r for r in ours if r.get("round") == "heuristic" and "median_ms" in r}
if heuristic:
    print("\npetra's convolution algorithms, cuDNN's heuristic order (one run) vs timed once per shape (the rows above):\n")
    print("| math | heuristic ms | timed ms | heuristic / timed |")
    print("|---|---:|---:|---:|")
    for math, r in sorted(heuristic.items()):
        timed = petra.get(math)
        if timed:
            print("| %s | %.2f | %.2f | %.2f |" % (names.get(math, math), r["median_ms"], timed["median"],
                                                 r["median_ms"] / timed["median"]))
import glob, os
records = sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "cudnn_algorithms-*.json")))
if records:
    print("\npetra's convolution algorithms, timed once per shape in round 1 (cudnn_algorithms-<math>.json in the"
          " details; rounds 2 on repeat them):\n")
    print("| math | shapes × directions | timed | fell back to heuristic | Σ chosen algorithms ms (cuDNN's times) |")
    print("|---|---:|---:|---:|---:|")
    for path in records:
        try:
            entries = json.load(open(path))["algorithms"]
        except (OSError, ValueError, KeyError):
            continue
        timed = [e for e in entries if e.get("source") == "timed"]
        fallback = [e for e in entries if str(e.get("source", "")).startswith("heuristic (")]
        print("| %s | %d | %d | %d | %.2f |" % (os.path.basename(path)[17:-5], len(entries), len(timed), len(fallback),
                                              sum(e.get("time_ms", 0) for e in timed)))
fp32 = (petra.get("fp32") or {}).get("median")
for math in ("tf32", "bf16"):
    other = (petra.get(math) or {}).get("median")
    if fp32 and other:
        print("\npetra %s step / petra fp32 step: %.2f" % (names[math], other / fp32), end="")
print("")
methods = [r for r in ours if r.get("bench") == "method"]
if methods:
    print("\nthrough the reference simulator on one backend (one stream):")
    for r in methods:
        print("- %s, J = %d, %s: %.0f images/s (%d micro-batches, %d ticks)" % (
            r["method"], r["stages"], r.get("precision", "fp32"), r["images_per_s"], r["micro_batches"], r["ticks"]))
overlap = [r for r in ours if r.get("bench") == "reversible_overlap"]
if overlap:
    print("\nreversible stage's backward (%d couplings, RevNet-18 widths): plain order vs PaReprop's rebuild "
          "on a second stream, median of %d:\n" % (overlap[0]["blocks"], overlap[0]["iters"]))
    print("| math | width (plane) | micro-batch | plain ms | overlapped ms | plain / overlapped |")
    print("|---|---|---:|---:|---:|---:|")
    for r in overlap:
        print("| %s | %d (%d×%d) | %d | %.2f | %.2f | %.2f |" % (
            names.get(r["precision"], r["precision"]), r["width"], r["side"], r["side"], r["batch"],
            r["plain_ms"], r["overlap_ms"], r["plain_ms"] / r["overlap_ms"]))
PY
  if [ -s "$details/petra-failed.md" ]; then
    printf '\nFAILED runs (their rows are missing above):\n' >>"$summary"
    cat "$details/petra-failed.md" >>"$summary"
  fi
  echo "" >>"$summary"
  cat "$details/handoff.md" >>"$summary"
}

cmd_profile() {
  echo "## profile: ncu over two petra training steps (RevNet-18, micro-batch 128, fp32)" >"$summary"
  echo "" >>"$summary"
  if [ "$gpu" = 0 ] || ! command -v ncu >/dev/null; then
    echo "skipped: $([ "$gpu" = 0 ] && echo "no GPU" || echo "ncu is not on PATH")" >>"$summary"
    return
  fi
  timeout -k 10 540 ncu --target-processes all --metrics gpu__time_duration.sum --csv --print-units base --print-summary per-kernel \
    "$bundle/bin/bench_gpu_step" --iters 1 --warmup 1 --methods 0 --overlap 0 >"$details/ncu.csv" 2>"$details/ncu-stderr.log"
  echo "ncu exit $?" >>"$summary"
  "$python" - "$details/ncu.csv" >>"$summary" <<'PY'
import csv, sys
try:
    lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
except OSError:
    sys.exit(0)
rows = list(csv.DictReader(lines))
total = {}
for r in rows:
    name = r.get("Kernel Name") or r.get("Function Name") or "?"
    try:
        value = float(r.get("Average", r.get("Metric Value", "0")).replace(",", "")) * float(r.get("Invocations", "1") or 1)
    except ValueError:
        continue
    total[name] = total.get(name, 0.0) + value
s = sum(total.values()) or 1
print("| kernel | share of GPU time | summed (ncu unit) |\n|---|---:|---:|")
for name, v in sorted(total.items(), key=lambda kv: -kv[1])[:25]:
    print("| %s | %.1f %% | %.0f |" % (name[:90].replace("|", "/"), 100 * v / s, v))
PY
}

# pareprop: bench_gpu_step --transformer 1 in each precision, one run each (at most PAREPROP_S s).
cmd_pareprop() {
  local p
  echo "## pareprop: a reversible stage of 3 RevViT transformer blocks (197 tokens), its backward in the plain order vs PaReprop's rebuild on a second stream" >"$summary"
  echo "" >>"$summary"
  for p in ${PAREPROP_PRECISIONS:-fp32 tf32 bf16}; do
    speed_petra "$p" "${PAREPROP_S:-300}" --precision "$p" --step 0 --methods 0 --overlap 0 --transformer 1 \
      --transformer-batches "${PAREPROP_BATCHES:-8,32,128}" --overlap-iters "${PAREPROP_ITERS:-10}"
  done
  [ "$gpu" = 0 ] && { echo "skipped: no GPU" >>"$summary"; return; }
  "$python" - "$details/petra.jsonl" >>"$summary" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    try:
        r = json.loads(line[line.index("{"):])
    except ValueError:
        continue
    if r.get("bench") == "transformer_overlap":
        rows.append(r)
print("| math | model (width, heads) | micro-batch | plain ms | overlapped ms | plain / overlapped |")
print("|---|---|---:|---:|---:|---:|")
for r in rows:
    if "error" in r:
        print("| %s | %s | %d | failed: %s | | |" % (r.get("round", "?"), r["model"], r["batch"], r["error"][:80]))
        continue
    print("| %s | %s (%d, %d) | %d | %.2f | %.2f | %.2f |" % (
        r["precision"], r["model"], r["width"], r["heads"], r["batch"], r["plain_ms"], r["overlap_ms"],
        r["plain_ms"] / r["overlap_ms"]))
PY
  if [ -s "$details/petra-failed.md" ]; then
    printf '\nFAILED runs:\n' >>"$summary"
    cat "$details/petra-failed.md" >>"$summary"
  fi
}

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
