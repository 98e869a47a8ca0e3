#!/usr/bin/env bash
# Checks petra against the independent PyTorch PETRA (petra_peer.py), and the latter against
# docs/design.md §1's invariants:
#  1. twins: from the same initial weights and images (petra's data order), petra's simulate and
#     the peer end 2 epochs of 4 micro-batches (4 optimizer steps per stage, no drain between
#     them, each epoch's tail left out) with the same weights to fp32 round-off (median relative difference < 1e-5), in either tick order (and so does the
#     lockstep actor runtime, in the default order); the other order's
#     weights differ (median > 1e-4), so the comparison can tell the schedules apart; the same
#     with AdamW against torch.optim.AdamW (and told apart from SGD); and
#     petra's backprop = PyTorch autograd backprop over one optimizer step;
#     the same twins on a RevViT (revvit_tiny_fmnist at depth 3, width 32: revvit_peer.py's model)
#     in both tick orders and in lockstep, every tensor but the key biases within 1e-4, the orders
#     told apart; and a RevViT checkpoint of petra tests the same in the peer (accuracy to the
#     image, loss to 1e-6);
#  2. the peer keeps the invariants: every stage takes the same optimizer steps, a non-reversible
#     stage j holds at most 2(J − j) + 1 inputs (2(J − j) with the backward first), a reversible
#     one none;
#  3. a missing dataset, and a RevNet checkpoint loaded into the RevViT, are refused with exit code 2.
# Usage: check_petra_peer.sh PETRA_BINARY. Exit 0: passed; 1: failed; 77: no PyTorch
# (PETRA_WITH_PEER=1 bash deploy/install-deps.sh installs python3-torch) or no Fashion-MNIST.
set -euo pipefail
petra=$(realpath "${1:?usage: check_petra_peer.sh PETRA_BINARY}")
cd "$(dirname "$0")"
python=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist
"$python" -c 'import torch' 2>/dev/null || { echo "skipped: python3-torch is not installed (PETRA_WITH_PEER=1 bash deploy/install-deps.sh)"; exit 77; }
[ -e "$data/train-images-idx3-ubyte.gz" ] || { echo "skipped: no Fashion-MNIST in $data"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

train() {  # name, --set arguments... (the default preset)
  train_preset default "$@"
}
train_preset() {  # preset, name, --set arguments...
  local preset=$1 name=$2; shift 2
  "$petra" train "$preset" --set runtime.mode=simulate --set training.epochs=1 --set data.test_limit=100 \
    --set output.dir="$work" --set output.name="$name" --set output.progress=false "$@" >"$work/$name.log" 2>&1 ||
    { echo "petra train $name failed:"; cat "$work/$name.log"; exit 1; }
}
train init --set data.train_limit=128 --set training.optimizer.base_lr=0  # lr 0: the initial weights
# Two epochs of 4 micro-batches (300 images: 44 of each epoch's order left out), no drain between.
twins=(--set data.train_limit=300 --set training.epochs=2)
train forward_first "${twins[@]}"
train backward_first "${twins[@]}" --set training.tick_order=backward_first
train backprop --set data.train_limit=128 --set training.method=backprop
train lockstep "${twins[@]}" --set runtime.mode=lockstep  # the actor runtime, ticked
# eps 1e-3, not 1e-8: a convolution bias before a batch norm has a gradient of round-off only, which
# AdamW scales up to a step of ±lr whatever its size; with eps 1e-8 the two implementations' round-off
# moves those biases apart by up to 5 % (median 8.5e-5 over the tensors, measured), with 1e-3 the
# comparison is one of AdamW's arithmetic (median 5e-7).
adamw=(--set training.optimizer.kind=adamw --set training.optimizer.base_lr=0.002
       --set training.optimizer.weight_decay=0.05 --set training.optimizer.eps=0.001)
train adamw "${twins[@]}" "${adamw[@]}"

# The twins: the peer in each tick order, from petra's initial weights ($work/PREFIXinit) on petra's
# images, against petra's runs PREFIXforward_first, PREFIXbackward_first and PREFIXlockstep: the
# same schedule within round-off (median < 1e-5, and every tensor but the exempt ones below MAX when
# given), the other one told apart (median > 1e-4).
compare_twins() {  # model (for the messages), run-name prefix, MAX or "", peer arguments...
  local model=$1 prefix=$2 max=$3 order other against out; shift 3
  for order in forward_first backward_first; do
    other=$([ $order = forward_first ] && echo backward_first || echo forward_first)
    local against_runs=($order $other $([ $order = forward_first ] && echo lockstep)) compare=()
    for against in "${against_runs[@]}"; do compare+=(--compare-with "$work/$prefix$against/checkpoint.safetensors"); done
    # One peer run per order, its final weights compared with each of petra's runs.
    out=$("$python" petra_peer.py "$@" --epochs 2 --train-limit 300 --test-limit 100 --data "$data" \
          --tick-order $order --data-order petra --init-from "$work/${prefix}init/checkpoint.safetensors" \
          "${compare[@]}" | tail -1)
    "$python" - "$out" "$order" "$model" "$max" "${against_runs[@]}" <<'PY'
import json, sys
run, order, model, max_bound, against_runs = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
assert len(run["compares"]) == len(against_runs), "the peer compared %d runs, not %d" % (len(run["compares"]), len(against_runs))
for against, c in zip(against_runs, run["compares"]):
    median, worst = c["median_relative_difference"], c["max_relative_difference"]
    same = order == against or (order == "forward_first" and against == "lockstep")
    exempt = ", key biases %.3g" % c["exempt_max_relative_difference"] if "exempt_max_relative_difference" in c else ""
    print("%s peer %s vs petra %s: median relative difference %.3g, max %.3g (%s)%s"
          % (model, order, against, median, worst, c["worst_tensor"], exempt))
    if same and not (median < 1e-5 and (not max_bound or worst < float(max_bound))):
        sys.exit("petra's simulate and the PyTorch PETRA disagree on the %s in %s order beyond round-off" % (model, order))
    if not same and not median > 1e-4:
        sys.exit("the %s comparison cannot tell %s from %s" % (model, order, against))
PY
  done
}
compare_twins RevNet "" ""

# AdamW: the peer's torch.optim.AdamW (decoupled decay on conv and linear weights) against petra's,
# same twins; and against petra's SGD run, which the comparison must tell apart.
out=$("$python" petra_peer.py --epochs 2 --train-limit 300 --test-limit 100 --data "$data" \
      --optimizer adamw --base-lr 0.002 --weight-decay 0.05 --eps 0.001 --data-order petra \
      --init-from "$work/init/checkpoint.safetensors" --compare-with "$work/adamw/checkpoint.safetensors" \
      --compare-with "$work/forward_first/checkpoint.safetensors" | tail -1)
"$python" - "$out" <<'PY'
import json, sys
for against, c in zip(("adamw", "forward_first"), json.loads(sys.argv[1])["compares"]):
    median = c["median_relative_difference"]
    print("peer adamw vs petra %s: median relative difference %.3g, max %.3g (%s)"
          % (against, median, c["max_relative_difference"], c["worst_tensor"]))
    if against == "adamw" and not median < 1e-5:
        sys.exit("petra's AdamW and torch.optim.AdamW disagree beyond round-off")
    if against != "adamw" and not median > 1e-4:
        sys.exit("the comparison cannot tell AdamW from SGD")
PY

# Backprop (J = 8, one micro-batch in flight) = textbook backprop over one optimizer step of two
# micro-batches. Later steps are not compared: from the same weights, backprop's round-off grows
# to 1e-4 within four steps at this learning rate (the peer on 1 thread vs 2 threads shows it).
out=$("$python" petra_peer.py --method backprop --epochs 1 --train-limit 128 --test-limit 100 --data "$data" \
      --data-order petra --init-from "$work/init/checkpoint.safetensors" \
      --compare-with "$work/backprop/checkpoint.safetensors" | tail -1)
"$python" - "$out" <<'PY'
import json, sys
c = json.loads(sys.argv[1])["compare"]
print("peer backprop vs petra backprop: median relative difference %.3g, max %.3g (%s)"
      % (c["median_relative_difference"], c["max_relative_difference"], c["worst_tensor"]))
if not c["median_relative_difference"] < 1e-5:
    sys.exit("petra's backprop and PyTorch's disagree beyond round-off")
PY

# RevViT (revvit_tiny_fmnist's recipe: AdamW, eps 1e-8, 1 epoch of warm-up) at depth 3, width 32,
# 4 heads: an odd depth, so that a block whose gradient went by parity to the wrong micro-batch would
# show. The same twins: 2 epochs of 4 micro-batches, J = 5, 4 AdamW steps per stage. Besides the
# median, every tensor must agree (max < 1e-4) but the attention's key biases (petra_peer.py's
# EXEMPT: their gradient is round-off only, AdamW makes steps of ±lr of it): a fault confined to one
# block (its 16 of the 55 tensors) leaves the median alone.
# Micro-batches of 64, k = 2, as the peer's defaults (the preset's own are 16 and 8).
vit=(--set model.depth=3 --set model.width=32 --set model.heads=4 --set training.micro_batch=64
     --set training.accumulation=2)
vit_peer=(--arch revvit --depth 3 --width 32 --heads 4)
train_preset revvit_tiny_fmnist vit_init "${vit[@]}" --set data.train_limit=128 --set training.optimizer.base_lr=0
train_preset revvit_tiny_fmnist vit_forward_first "${vit[@]}" "${twins[@]}"
train_preset revvit_tiny_fmnist vit_backward_first "${vit[@]}" "${twins[@]}" --set training.tick_order=backward_first
train_preset revvit_tiny_fmnist vit_lockstep "${vit[@]}" "${twins[@]}" --set runtime.mode=lockstep
compare_twins RevViT vit_ 1e-4 "${vit_peer[@]}"

# A checkpoint of a short RevViT run (2 epochs of 16 micro-batches, drained at each epoch end so that
# the last epoch's test is of the checkpoint's weights), loaded into the peer: the same accuracy on
# the same 1,000 test images to the image, the same mean test loss to 1e-6 (relative; fp32 round-off
# keeps them within 4e-8). Its accuracy is low (16 AdamW steps), the comparison is what counts.
train_preset revvit_tiny_fmnist vit_accuracy "${vit[@]}" --set data.train_limit=1024 --set data.test_limit=1000 \
  --set training.epochs=2 --set training.optimizer.base_lr=0.01 --set training.drain_at_epoch_end=true
out=$("$python" petra_peer.py "${vit_peer[@]}" --test-limit 1000 --data "$data" \
      --evaluate "$work/vit_accuracy/checkpoint.safetensors")
"$python" - "$out" "$work/vit_accuracy/metrics.jsonl" <<'PY'
import json, sys
peer = json.loads(sys.argv[1])
epochs = [e for e in map(json.loads, open(sys.argv[2])) if e.get("event") == "epoch"]
last = epochs[-1]
if last["evaluated"] != "drained pipeline":
    sys.exit("petra's last test was not of the drained weights: %s" % last["evaluated"])
petra_correct = round(last["test_accuracy"] * peer["images"])
peer_correct = round(peer["test_accuracy"] * peer["images"] / 100)
print("revvit checkpoint: petra %d / %d test images right (loss %.7f), the peer %d (loss %.7f)"
      % (petra_correct, peer["images"], last["test_loss"], peer_correct, peer["test_loss"]))
if petra_correct != peer_correct or not abs(peer["test_loss"] - last["test_loss"]) < 1e-6 * last["test_loss"]:
    sys.exit("petra's RevViT checkpoint tests differently in the PyTorch peer")
PY

set +e
err=$("$python" petra_peer.py "${vit_peer[@]}" --data "$data" --evaluate "$work/init/checkpoint.safetensors" \
      2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] && [[ "$err" == *"not this model's"* ]] ||
  { echo "a RevNet checkpoint loaded into the RevViT: exit $rc, '$err' (want 2 and why)"; exit 1; }
set +e
err=$("$python" petra_peer.py --arch revvit --width 30 --heads 4 --data "$data" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] && [[ "$err" == *"not divisible by 4 heads"* ]] ||
  { echo "a RevViT of width 30 in 4 heads: exit $rc, '$err' (want 2 and why)"; exit 1; }

check() {  # order, expected FIFO peaks
  local out
  out=$("$python" petra_peer.py --epochs 1 --train-limit 1024 --test-limit 100 --tick-order "$1" --data "$data" | tail -1)
  "$python" - "$out" "$2" <<'PY'
import json, sys
run, want = json.loads(sys.argv[1]), json.loads(sys.argv[2])
steps = run["epochs"][-1]["lr_steps"]
assert run["fifo_peaks"] == want, "%s: FIFO peaks %s, docs/design.md §1 says %s" % (run["tick_order"], run["fifo_peaks"], want)
assert steps == [8] * 8, "%s: optimizer steps per stage %s, want 8 each (16 micro-batches, k = 2)" % (run["tick_order"], steps)
print("peer %s: FIFO peaks %s, steps %s" % (run["tick_order"], want, steps))
PY
}
# Stages 1, 4, 6 (stem and the two downsampling blocks) keep inputs; J = 8.
check forward_first '[15, 0, 0, 9, 0, 5, 0, 0]'
check backward_first '[14, 0, 0, 8, 0, 4, 0, 0]'

set +e
err=$("$python" petra_peer.py --epochs 1 --data /nonexistent 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] && [[ "$err" == *"not found in /nonexistent"* ]] || { echo "a missing dataset: exit $rc, '$err' (want 2 and the path)"; exit 1; }
echo "check_petra_peer: passed"
