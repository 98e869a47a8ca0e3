# Sourced by bench/gpu/run.sh (its variables and helpers set): the training sub-commands: train, revnet,
# fg, vit.
# shellcheck shell=bash

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

# The header of summarize_run's table.
run_table_header() {
  echo "| run | epochs | test accuracy | images/s epoch 1 | images/s last epoch | images/s run |" >>"$summary"
  echo "|---|---:|---:|---:|---:|---:|" >>"$summary"
}

# epoch_table METRICS_FILES...: the accuracy and images/s of every epoch, a row per run.
epoch_table() {
  echo "" >>"$summary"
  echo "| run | test accuracy per epoch (%) | images/s per epoch | images/s run |" >>"$summary"
  echo "|---|---|---|---:|" >>"$summary"
  summarize_epochs "$@"
}

# unknown_run SUB-COMMAND RUN VARIABLE KNOWN: a run name the sub-command does not know, counted.
unknown_run() {
  echo "run.sh $1: unknown run '$2' in $3 ($4)" >&2
  failures=$((failures + 1))
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
  run_table_header
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
  run_table_header
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
  run_table_header
  for run in ${FG_RUNS:-fg-local fg-random local petra}; do
    local method=()
    case $run in
      fg-local) method=(--set training.method=forward_gradient) ;;
      fg-random) method=(--set training.method=forward_gradient --set training.forward_gradient.guess=random) ;;
      local) method=(--set training.method=forward_gradient --set training.forward_gradient.target=local) ;;
      petra) method=(--set training.method=petra) ;;
      *)
        unknown_run fg "$run" FG_RUNS "fg-local, fg-random, local, petra"
        continue
        ;;
    esac
    # shellcheck disable=SC2046
    train_run "$run" "${FG_S:-140}" train default "${common[@]}" "${method[@]}" $(dry_limits 256)
    files+=("$details/$run-metrics.jsonl")
  done
  epoch_table "${files[@]}"
}

# Issue-sized accuracy runs of the reversible vision transformer: revvit_tiny_fmnist (AdamW, warm-up
# then cosine) for VIT_EPOCHS epochs of the whole Fashion-MNIST, backprop at J = 1 against PETRA.
cmd_vit() {
  local epochs=${VIT_EPOCHS:-10} run files=() j8 j4
  j8=$(repeat "$dev" 8)
  j4=$(repeat "$dev" 4)
  echo "## vit: petra train revvit_tiny_fmnist, async, $epochs epochs, every stage on $dev" >"$summary"
  echo "" >>"$summary"
  [ "$gpu" = 0 ] && echo "dry run on the CPU (no GPU): 256 images, 1 epoch — checks the command lines, not a measurement" >>"$summary"
  local common=(--set runtime.mode=async --set "training.epochs=$epochs" --set "data.path=$PETRA_FASHION_MNIST")
  local calm=(--set "training.optimizer.betas=[0.5,0.999]" --set training.optimizer.base_lr=0.0005)
  run_table_header
  for run in ${VIT_RUNS:-backprop petra-j8 petra-j4}; do
    # A name ending in -calm runs the calmer recipe (AdamW beta1 0.5, a quarter of the learning
    # rate), which narrowed PETRA's gap on short CPU runs (docs/results/overlap-rebuild.md).
    # A name ending in -k2, -k16 or -k32 (before any -calm) cuts the same 128 images a step into
    # micro-batches of 64 with k = 2 (the former recipe, four times the preset's staleness in
    # optimizer steps), of 8 with k = 16 (half the preset's) or of 4 with k = 32 (a quarter).
    local method=() base=${run%-calm}
    [ "$base" != "$run" ] && method=("${calm[@]}")
    case $base in
      *-k2) base=${base%-k2} && method+=(--set training.micro_batch=64 --set training.accumulation=2) ;;
      *-k16) base=${base%-k16} && method+=(--set training.micro_batch=8 --set training.accumulation=16) ;;
      *-k32) base=${base%-k32} && method+=(--set training.micro_batch=4 --set training.accumulation=32) ;;
    esac
    case $base in
      backprop) method+=(--set training.method=backprop --set "pipeline.stage_blocks=[8]" --set "pipeline.devices=[$dev]") ;;
      petra-j8) method+=(--set training.method=petra --set "pipeline.devices=$j8") ;;
      petra-j4) method+=(--set training.method=petra --set "pipeline.stage_blocks=[2,2,2,2]" --set "pipeline.devices=$j4") ;;
      *)
        unknown_run vit "$run" VIT_RUNS "backprop, petra-j8, petra-j4, each also with -k2, -k16 or -k32 and/or -calm"
        continue
        ;;
    esac
    # shellcheck disable=SC2046
    train_run "vit-$run" "${VIT_S:-420}" train revvit_tiny_fmnist "${common[@]}" "${method[@]}" $(dry_limits 256)
    files+=("$details/vit-$run-metrics.jsonl")
  done
  epoch_table "${files[@]}"
  # The targets: backprop >= 88 %, PETRA within 1 point of it, at the last epoch.
  "$python" - "${files[@]}" >>"$summary" <<'PY'
import json, sys
last = {}
for path in sys.argv[1:]:
    try:
        epochs = [r for r in map(json.loads, open(path)) if r.get("event") == "epoch"]
    except OSError:
        continue
    if epochs:
        last[path.split("/")[-1].replace("-metrics.jsonl", "")] = (len(epochs), 100 * epochs[-1]["test_accuracy"])
references = [r for r in ("vit-backprop", "vit-backprop-calm") if r in last]
print("")
for r in references:
    print("%s after %d epochs: %.2f %% (target >= 88 %%)" % (r[4:], last[r][0], last[r][1]))
for name, (m, a) in sorted(last.items()):
    if name in references:
        continue
    gaps = ", ".join("%+.2f points against %s" % (a - last[r][1], r[4:]) for r in references)
    print("%s after %d epochs: %.2f %%%s (target within 1)" % (name[4:], m, a, ": " + gaps if gaps else ""))
PY
}
