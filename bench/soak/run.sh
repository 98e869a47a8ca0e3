#!/usr/bin/env bash
# Soak: async PETRA on the default preset for MICRO_BATCHES micro-batches with three faults injected
# along the way, memory sampled throughout. Stage 6 of 8 runs on a `petra node` (A) with a spare
# node (S); at 20 % of the run (mid-epoch) stage 3 crashes (faults.crash_at_tick: rebuilt alone),
# at 40 % stage 5 loses 7 forward messages in a row (faults.drop_burst; 7 = its pacing bound
# 2(J − j) + 1: the pipeline stops, the stall is noticed after faults.stall_seconds = 30 and the run
# rolls back to the last snapshot), at 60 % node A is stopped with SIGSTOP (a hang: declared lost by
# heartbeats, its stage rebuilt on S; then SIGCONT, and it must be fenced). The injected faults
# apply to a phase's first attempt only, so they come before any recovery that ends one (the burst's
# rollback); the hang comes from outside and comes last. Every 5 s the RSS of the training process and of
# the nodes goes to rss.csv; at the end: the slope of the training process's RSS after warm-up
# (least squares, bytes per 1,000 micro-batches), the summary's accounting of micro-batches, the
# final test accuracy, and rss.png (gnuplot).
#
#   bench/soak/run.sh [--petra BIN] [--out DIR] [--warmup FRACTION] [--micro-batch N] [MICRO_BATCHES]
#                     [--set k=v ...]
#
# MICRO_BATCHES (default 100000) is epochs × micro-batches per epoch: the largest divisor of it up to
# 60,000 / N (Fashion-MNIST's 60,000 images in micro-batches of N: 937 for the preset's 64) per
# epoch, data.train_limit to match. N (default 64, the preset's) sets training.micro_batch: smaller
# micro-batches pass as many messages, snapshots and recoveries in a fraction of the time (the
# learning rate follows the preset's scaling rule, lr = base_lr · N · k / 256).
# FRACTION (default 0.2): the first part of the run left out of the slope. Further --set go to
# `petra train` (e.g. --set data.test_limit=2000). Output: DIR (default bench/soak/out/<UTC time>).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
petra="$root/build/petra"
out=""
warmup=0.2
micro_batch=64
while [ $# -gt 0 ]; do
  case "$1" in
    --petra) petra=${2:?--petra needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --warmup) warmup=${2:?--warmup needs a fraction}; shift 2 ;;
    --micro-batch) micro_batch=${2:?--micro-batch needs a number}; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --set) break ;;  # the --set for petra train follow (MICRO_BATCHES, if given, comes first)
    -*) echo "soak: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
total=100000
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then total=$1; shift; fi
case "$total" in '' | *[!0-9]*) echo "soak: MICRO_BATCHES must be a number, got '$total'" >&2; exit 2 ;; esac
if [ "$total" -lt 100 ]; then echo "soak: MICRO_BATCHES must be 100 or more, got $total" >&2; exit 2; fi
case "$micro_batch" in '' | *[!0-9]* | 0) echo "soak: --micro-batch must be a positive number, got '$micro_batch'" >&2; exit 2 ;; esac
if [ "$micro_batch" -gt 60000 ]; then echo "soak: --micro-batch $micro_batch is more than the 60,000 training images" >&2; exit 2; fi
case "$warmup" in 0.[0-9]* | 0) ;; *) echo "soak: --warmup must be a fraction in [0, 1), got '$warmup'" >&2; exit 2 ;; esac
[ -x "$petra" ] || { echo "soak: $petra is not executable (build first, or --petra BIN)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "soak: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 2; }

per_epoch=1
for ((d = 60000 / micro_batch; d >= 1; d--)); do
  if ((total % d == 0)); then per_epoch=$d; break; fi
done
epochs=$((total / per_epoch))
if ((per_epoch < 50)); then
  echo "soak: $total has no divisor between 50 and $((60000 / micro_batch)) to make epochs of; pick another count" >&2
  exit 2
fi
# Mid-epoch (a snapshot is taken at each epoch end): a burst right before one would leave its
# micro-batches outstanding in the snapshot the run rolls back to.
crash_at=$((total / 5 + per_epoch / 2))
burst_at=$((2 * total / 5 + per_epoch / 2))
hang_at=$((3 * total / 5 + per_epoch / 2))

out=${out:-$root/bench/soak/out/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 2
node_pids=()
train_pid=""
finish() {
  for pid in "${node_pids[@]}"; do kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done
  [ -n "$train_pid" ] && kill "$train_pid" 2>/dev/null
  wait 2>/dev/null
}
trap finish EXIT
trap 'exit 130' INT TERM

"$petra" node --listen 127.0.0.1:0 --threads 1 >"$out/node-a.log" 2>&1 &
pid_a=$!
"$petra" node --listen 127.0.0.1:0 --threads 1 >"$out/node-s.log" 2>&1 &
pid_s=$!
node_pids=("$pid_a" "$pid_s")
address_of() {  # address_of NAME: where the node listens, once it says so
  for _ in $(seq 600); do grep -q "listening on" "$out/node-$1.log" && break; sleep 0.1; done
  sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$out/node-$1.log" | head -n 1
}
node_a=$(address_of a)
node_s=$(address_of s)
[ -n "$node_a" ] && [ -n "$node_s" ] || { echo "soak: a node did not start (see $out/node-*.log)" >&2; exit 1; }

run_dir="$out/run"
echo "# soak $(date -u '+%Y-%m-%d %H:%M UTC'): $total micro-batches of $micro_batch ($epochs epochs of $per_epoch), nodes A=$node_a S=$node_s"
echo "# faults: crash of stage 3 at its forward $crash_at, burst of 7 at stage 5's forward $burst_at, SIGSTOP of A (stage 6) at micro-batch $hang_at"
"$petra" train default --set runtime.mode=async --set training.epochs="$epochs" \
  --set training.micro_batch="$micro_batch" --set data.train_limit=$((per_epoch * micro_batch)) \
  --set "pipeline.nodes=[local,local,local,local,local,$node_a,local,local]" \
  --set "pipeline.spare_nodes=[$node_s]" \
  --set "faults.crash_at_tick=[-1,-1,$crash_at]" \
  --set "faults.drop_burst=[0,0,0,0,7]" --set "faults.drop_burst_at_tick=[-1,-1,-1,-1,$burst_at]" \
  --set faults.stall_seconds=30 --set output.metrics_every_steps=10 --set output.progress=false \
  --set output.dir="$out" --set output.name=run "$@" >"$out/train.log" 2>&1 &
train_pid=$!

rss_kb() { ps -o rss= -p "$1" 2>/dev/null | tr -d ' ' || true; }
position() {  # the stream's position: the last step line's micro-batches
  [ -f "$run_dir/metrics.jsonl" ] || { echo 0; return; }
  grep '"event":"step"' "$run_dir/metrics.jsonl" | tail -n 1 | sed -n 's/.*"micro_batches":\([0-9]*\).*/\1/p' | grep . || echo 0
}
echo "seconds,micro_batches,rss_train_kb,rss_node_a_kb,rss_node_s_kb" >"$out/rss.csv"
: >"$out/events.txt"
t0=$(date +%s)
stopped=0
woken=0
while kill -0 "$train_pid" 2>/dev/null; do
  now=$(($(date +%s) - t0))
  at=$(position)
  echo "$now,$at,$(rss_kb "$train_pid"),$(rss_kb "$pid_a"),$(rss_kb "$pid_s")" >>"$out/rss.csv"
  if ((!stopped && at >= hang_at)); then
    kill -STOP "$pid_a" && stopped=1 && echo "$now s, micro-batch $at: SIGSTOP node A" | tee -a "$out/events.txt"
  fi
  if ((stopped && !woken)) && grep -q "declared lost" "$run_dir/metrics.jsonl" 2>/dev/null; then
    kill -CONT "$pid_a" 2>/dev/null
    woken=1
    echo "$now s, micro-batch $at: node A declared lost; SIGCONT" | tee -a "$out/events.txt"
  fi
  sleep 5
done
wait "$train_pid"
code=$?
train_pid=""
echo "# petra train exited with $code after $(($(date +%s) - t0)) s"
[ "$code" -eq 0 ] || { tail -n 20 "$out/train.log" >&2; exit 1; }

# The accounting and the accuracy: the summary line; the faults: the failure lines.
summary=$(grep '"event":"summary"' "$run_dir/metrics.jsonl" | tail -n 1)
field() { echo "$summary" | grep -o "\"$1\":[^,}]*" | head -n 1 | cut -d: -f2; }
echo "failures (kind, stage, recovery, lost / re-issued / replayed, recovery seconds):"
grep '"event":"failure"' "$run_dir/metrics.jsonl" | while read -r line; do
  f() { echo "$line" | grep -o "\"$1\":[^,}]*" | head -n 1 | cut -d: -f2; }
  echo "  $(f kind), stage $(f stage), $(f recovery), $(f lost_micro_batches) / $(f reissued_micro_batches) / $(f replayed_micro_batches), $(f recovery_seconds) s"
done
# The feed's own count (the data set may give an epoch a micro-batch less than asked for).
planned=$(sed -n 's/.*, \([0-9][0-9]*\) micro-batches of [0-9]* per epoch.*/\1/p' "$out/train.log" | head -n 1)
planned=$((${planned:-$per_epoch} * epochs))
completed=$(field completed)
echo "micro-batches: completed $completed of $planned, lost $(field lost), re-issued $(field reissued), replayed $(field replayed), rolled back $(field rolled_back), local recoveries $(field local_recoveries), restarts $(field restarts), faults injected $(field faults_injected)"
grep -o 'fencing: [^"]*' "$out/train.log" | head -n 1
echo "test accuracy: $(field test_accuracy)"

# Slope of the training process's RSS against the stream's position after warm-up, least squares.
awk -F, -v total="$total" -v warmup="$warmup" -v out="$out/fit.txt" '
  NR > 1 && $2 >= warmup * total && $3 != "" { n++; x = $2; y = $3 * 1024; sx += x; sy += y; sxx += x * x; sxy += x * y }
  END {
    if (n < 3 || n * sxx - sx * sx == 0) { print "RSS slope: too few samples after warm-up (" n ")"; exit }
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx); a = (sy - b * sx) / n
    printf "RSS slope after warm-up (%d samples from micro-batch %d): %.0f bytes per 1,000 micro-batches\n", n, warmup * total, b * 1000
    printf "%.6f %.6f\n", a, b > out
  }' "$out/rss.csv"
read -r fit_a fit_b <"$out/fit.txt" 2>/dev/null || { fit_a=0; fit_b=0; }
gnuplot <<PLOT
set terminal pngcairo size 900,500 noenhanced
set output "$out/rss.png"
set datafile separator ","
set title "petra soak: async PETRA, default preset, $total micro-batches of $micro_batch (crash, hang, drop burst)"
set xlabel "micro-batches"
set ylabel "RSS (MB)"
set key bottom right
# One series per node: node A's column is empty once it has exited (after the hang), which would
# leave a sum of both columns undefined from there on.
plot "$out/rss.csv" every ::1 using 2:(\$3/1024) with points pt 7 ps 0.4 title "petra train", \
     "$out/rss.csv" every ::1 using 2:(\$4/1024) with points pt 7 ps 0.4 title "node A", \
     "$out/rss.csv" every ::1 using 2:(\$5/1024) with points pt 7 ps 0.4 title "node S", \
     ($fit_a + $fit_b * x) / 1048576 with lines lw 2 title sprintf("fit after warm-up: %.0f B per 1,000 micro-batches", $fit_b * 1000)
PLOT
echo "plot: $out/rss.png; samples: $out/rss.csv"
[ "$completed" = "$planned" ] || { echo "soak: $completed of $planned micro-batches completed" >&2; exit 1; }
