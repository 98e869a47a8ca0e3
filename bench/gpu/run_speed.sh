# Sourced by bench/gpu/run.sh (its variables and helpers set): the speed sub-commands: ahead, overlap,
# speed, pareprop.
# shellcheck shell=bash

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
