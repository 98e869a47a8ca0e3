#!/usr/bin/env bash
# PETRA's speed-up with stages on this machine's CPU cores: the same training work as backprop at
# one stage with 1, 2, 4, … N threads, and as PETRA (and delayed gradients) at J = 2, 4, 8 stages
# with N / J threads each, and with `pipeline.stages: J` (the cut and the threads by measured cost),
# in one process and (J = 8) over `petra node` processes on this host; for
# the default preset (Fashion-MNIST) and RevNet-18 at micro-batch 32 (CIFAR-10, or a synthetic set in
# its format where CIFAR-10 is absent). Every run is one async epoch; its images/s is the epoch
# line's. Per run it also reports the pipeline's ideal rate from its busiest stage's compute
# (micro-batches / that stage's busy seconds) and the measured rate's efficiency against it, and
# writes each stage's busy seconds.
#
#   bench/scaling/run.sh [--petra BIN] [--out DIR] [--cores N] [--models "default revnet18"]
#                        [--images N] [--revnet-images N] [--no-nodes] [--set k=v ...]
#
# N (default: this process's usable cores) is the cores every row uses. Output in DIR (default
# bench/scaling/out/<UTC time>): results.tsv (one row per run), stages.tsv (per run and stage: busy
# seconds, forwards), table.md (what is printed at the end), scaling.png when gnuplot is installed,
# and each run's log and run directory. `run.sh --plot DIR` redraws the plot from DIR's results.tsv.
# Environment: PETRA_FASHION_MNIST (the Fashion-MNIST folder, default
# /usr/share/datasets/fashion-mnist), CIFAR10_DIR (default /usr/share/datasets/cifar10), PYTHON.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
petra=${PETRA_BINARY:-$root/build/petra}
out=""
cores=$(nproc)
models="default revnet18"
images=12800
revnet_images=3200
nodes=1
plot_only=""
sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --petra) petra=${2:?--petra needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --cores) cores=${2:?--cores needs a number}; shift 2 ;;
    --models) models=${2:?--models needs names}; shift 2 ;;
    --images) images=${2:?--images needs a number}; shift 2 ;;
    --revnet-images) revnet_images=${2:?--revnet-images needs a number}; shift 2 ;;
    --no-nodes) nodes=0; shift ;;
    --set) sets+=(--set "${2:?--set needs k=v}"); shift 2 ;;
    --plot) plot_only=${2:?--plot needs a folder}; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "scaling: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$cores" "$images" "$revnet_images"; do
  case "$n" in '' | *[!0-9]* | 0) echo "scaling: --cores, --images and --revnet-images take positive numbers, got '$n'" >&2; exit 2 ;; esac
done
for m in $models; do
  case "$m" in default | revnet18) ;; *) echo "scaling: unknown model '$m' (default, revnet18)" >&2; exit 2 ;; esac
done

draw() {  # draw DIR: scaling.png from DIR/results.tsv (images/s against J, one panel per model)
  local dir=$1
  command -v gnuplot >/dev/null || { echo "scaling: gnuplot is missing: no plot (apt-get install gnuplot-nox)"; return 0; }
  local script=$dir/scaling.gp panels=0 m
  for m in default revnet18; do grep -q "^$m	" "$dir/results.tsv" && panels=$((panels + 1)); done
  [ $panels -gt 0 ] || return 0
  {
    echo "set terminal pngcairo size $((640 * panels)),480 font ',10'"
    echo "set output '$dir/scaling.png'"
    echo "set multiplot layout 1,$panels"
    echo "set xlabel 'stages J (N / J threads each)'; set ylabel 'images/s'; set key center right; set grid"
    echo "set logscale x 2; set xrange [0.8:12]"
    for m in default revnet18; do
      grep -q "^$m	" "$dir/results.tsv" || continue
      awk -F'\t' -v m="$m" '$1 == m && $2 == "backprop" && $3 == "1" && $8 == "one" && $9 != "-" {print $4, $9}' "$dir/results.tsv" | sort -n >"$dir/$m-backprop.dat"
      awk -F'\t' -v m="$m" '$1 == m && $2 == "petra" && $8 == "one" && $7 == "false" && $4 ~ /^[0-9]+$/ && $9 != "-" {print $3, $9, $11}' "$dir/results.tsv" | sort -n >"$dir/$m-petra.dat"
      awk -F'\t' -v m="$m" '$1 == m && $2 == "petra" && $8 == "one" && $4 !~ /^[0-9]+$/ && $9 != "-" {print $3, $9}' "$dir/results.tsv" | sort -n >"$dir/$m-cost.dat"
      awk -F'\t' -v m="$m" '$1 == m && $2 == "delayed" && $8 == "one" && $9 != "-" {print $3, $9}' "$dir/results.tsv" | sort -n >"$dir/$m-delayed.dat"
      local all base
      all=$(awk -v c="$cores" '$1 == c {print $2}' "$dir/$m-backprop.dat" | head -1)
      echo "set title '$m: N = $cores cores'"
      # The ideal: J stages each as fast as one stage of N / J threads (backprop at N / J threads).
      awk -v c="$cores" 'NR == FNR {rate[$1] = $2; next} {t = int(c / $1); if (t in rate) print $1, $1 * rate[t]}' \
        "$dir/$m-backprop.dat" "$dir/$m-petra.dat" >"$dir/$m-ideal.dat"
      base="'$dir/$m-petra.dat' using 1:2 with linespoints lw 2 title 'PETRA', '$dir/$m-ideal.dat' using 1:2 with lines dt 2 title 'ideal: J x backprop at N/J threads'"
      [ -s "$dir/$m-cost.dat" ] && base="$base, '$dir/$m-cost.dat' using 1:2 with linespoints lw 2 title 'PETRA, cut and threads by measured cost'"
      [ -s "$dir/$m-delayed.dat" ] && base="$base, '$dir/$m-delayed.dat' using 1:2 with linespoints title 'delayed gradients'"
      [ -s "$dir/$m-petra.dat" ] && base="$base, '$dir/$m-petra.dat' using 1:3 with points pt 6 title 'PETRA ideal from its busiest stage'"
      [ -n "$all" ] && base="$base, $all with lines lw 2 title 'backprop, 1 stage x N threads'"
      echo "plot $base"
    done
    echo "unset multiplot"
  } >"$script"
  gnuplot "$script" && echo "plot: $dir/scaling.png"
}

if [ -n "$plot_only" ]; then
  [ -f "$plot_only/results.tsv" ] || { echo "scaling: no $plot_only/results.tsv" >&2; exit 2; }
  cores=$(awk -F'\t' 'NR > 1 && $2 == "backprop" {if ($4 > c) c = $4} END {print c}' "$plot_only/results.tsv")
  draw "$plot_only"
  exit 0
fi

[ -x "$petra" ] || { echo "scaling: $petra is not executable (build first, or --petra BIN)" >&2; exit 2; }
out=${out:-$root/bench/scaling/out/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out/runs" "$out/logs" || exit 2
fashion=${PETRA_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
cifar=${CIFAR10_DIR:-/usr/share/datasets/cifar10}
python=${PYTHON:-python3}

if [[ " $models " == *" revnet18 "* ]] && [ ! -f "$cifar/data_batch_1.bin" ]; then
  cifar=$out/synthetic-cifar10
  echo "CIFAR-10 not found: a synthetic set in its format ($cifar; images/s only, no accuracy)"
  "$python" "$root/bench/gpu/make_synthetic_cifar.py" "$cifar" --per-file 10000 >/dev/null ||
    { echo "scaling: could not write the synthetic set" >&2; exit 2; }
fi

cpu_name=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# scaling on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit"
  echo "# CPU: $cpu_name; N = $cores of $(nproc) usable cores; petra: $petra"
} | tee "$out/machine.txt"
printf 'model\tmethod\tJ\tthreads\tbackprop_threads\tstage_blocks\tpin\tplace\timages_per_s\tbusiest_stage\tideal_images_per_s\tefficiency\tseconds\n' >"$out/results.tsv"
printf 'run\tstage\tbusy_seconds\tbusy_fraction\tforwards\tbackwards\n' >"$out/stages.tsv"

node_pids=()
stop_nodes() {
  for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null; done
  node_pids=()
}
trap stop_nodes EXIT

# start_nodes COUNT: COUNT `petra node` processes on loopback; their addresses in node_addresses.
node_addresses=()
start_nodes() {
  local count=$1 i log address
  node_addresses=()
  for ((i = 0; i < count; i++)); do
    log=$out/logs/node-$i-$RANDOM.log
    "$petra" node --listen 127.0.0.1:0 >"$log" 2>&1 &
    node_pids+=($!)
    for _ in $(seq 100); do grep -q "listening on" "$log" 2>/dev/null && break; sleep 0.1; done
    address=$(sed -n 's/^petra node listening on \([^ ]*\).*/\1/p' "$log" | head -1)
    [ -n "$address" ] || { echo "scaling: a petra node did not start (see $log)" >&2; return 1; }
    node_addresses+=("$address")
  done
}

# run MODEL METHOD J THREADS STAGE_BLOCKS PIN PLACE: one async epoch; a row of results.tsv.
run() {
  local model=$1 method=$2 J=$3 threads=$4 blocks=$5 pin=$6 place=$7
  local name="$model-$method-J$J-t$threads-pin$pin-$place" preset extra=() list="" j
  for ((j = 0; j < J; j++)); do list+="${list:+,}$threads"; done
  if [ "$model" = default ]; then
    preset=default
    extra=(--set "data.path=$fashion" --set "data.train_limit=$images" --set data.test_limit=1000)
  else
    preset=revnet18_cifar10
    extra=(--set "data.path=$cifar" --set "data.train_limit=$revnet_images" --set data.test_limit=320
      --set training.micro_batch=32)
  fi
  if [ "$place" = nodes ]; then
    local per=$((J / 4)) placement="" k
    start_nodes 4 || { stop_nodes; return 1; }
    for ((j = 0; j < J; j++)); do k=$((j / per)); placement+="${placement:+,}${node_addresses[$k]}"; done
    extra+=(--set "pipeline.nodes=[$placement]")
  fi
  # blocks "measured": pipeline.stages J cuts the model and splits the cores by measured cost.
  local shape=(--set "pipeline.stage_blocks=$blocks" --set "pipeline.threads=[$list]")
  [ "$blocks" = measured ] && shape=(--set "pipeline.stages=$J")
  local started=$SECONDS
  "$petra" train "$preset" --set runtime.mode=async --set training.epochs=1 --set "training.method=$method" \
    "${shape[@]}" --set "runtime.pin_threads=$pin" \
    --set output.progress=false --set "output.dir=$out/runs" --set "output.name=$name" "${extra[@]}" "${sets[@]}" \
    >"$out/logs/$name.log" 2>&1
  local rc=$? seconds=$((SECONDS - started))
  [ "$place" = nodes ] && stop_nodes
  local metrics=$out/runs/$name/metrics.jsonl
  if [ "$blocks" = measured ] && [ -f "$out/runs/$name/config.yaml" ]; then  # the cut and threads taken
    blocks=$(sed -n 's/^  stage_blocks: \(\[.*\]\)/\1/p' "$out/runs/$name/config.yaml" | tr -d ' ')
    local taken
    taken=$(sed -n 's/^  threads: \(\[.*\]\)/\1/p' "$out/runs/$name/config.yaml" | tr -d ' ')
    threads=${taken:-even}
  fi
  if [ $rc -ne 0 ] || [ ! -s "$metrics" ]; then
    echo "  $name: failed (exit $rc): $(tail -n 2 "$out/logs/$name.log" | tr '\n' ' ')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t%s\n' "$model" "$method" "$J" "$threads" "$threads" "$blocks" "$pin" "$place" "$seconds" >>"$out/results.tsv"
    return 0
  fi
  "$python" - "$metrics" "$name" "$model" "$method" "$J" "$threads" "$blocks" "$pin" "$place" "$seconds" \
    "$out/results.tsv" "$out/stages.tsv" <<'PY'
import json, sys
metrics, name, model, method, J, threads, blocks, pin, place, seconds, results, stages = sys.argv[1:]
epoch = None
for line in open(metrics):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("event") == "epoch":
        epoch = j
if epoch is None:
    sys.exit("no epoch line in " + metrics)
rate = epoch.get("images_per_s") or 0
per_stage = epoch.get("stages", [])
busiest, busy_max = "-", 0.0
with open(stages, "a") as f:
    for s in per_stage:
        b = s.get("busy_seconds") or 0.0
        f.write("%s\t%s\t%.3f\t%.3f\t%s\t%s\n" % (name, s.get("stage"), b, s.get("busy_fraction") or 0.0,
                                               s.get("forwards"), s.get("backwards")))
        if b > busy_max:
            busiest, busy_max = s.get("stage"), b
images = rate * (epoch.get("epoch_seconds") or 0)  # the epoch's training images
ideal = images / busy_max if busy_max > 0 and images else 0
eff = rate / ideal if ideal > 0 else 0
with open(results, "a") as f:
    f.write("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\n" % (
        model, method, J, threads, threads, blocks, pin, place, rate, busiest,
        "%.0f" % ideal if ideal else "-", "%.2f" % eff if ideal else "-", seconds))
print("  %-44s %8.0f images/s   busiest stage %s, ideal %s, efficiency %s" % (
    name, rate, busiest, "%.0f" % ideal if ideal else "-", "%.0f %%" % (100 * eff) if ideal else "-"))
PY
}

powers() {  # 1 2 4 … up to N, and N itself
  local t=1 list=""
  while [ $t -lt "$cores" ]; do list+="$t "; t=$((t * 2)); done
  echo "$list$cores"
}

for model in $models; do
  echo "== $model"
  if [ "$model" = default ]; then
    for t in $(powers); do run default backprop 1 "$t" "[8]" false one; done
    for J in 2 4 8; do
      case $J in 2) blocks="[4,4]" ;; 4) blocks="[2,2,2,2]" ;; 8) blocks="[]" ;; esac
      t=$((cores / J)); [ $t -ge 1 ] || t=1
      run default petra "$J" "$t" "$blocks" false one
      run default delayed "$J" "$t" "$blocks" false one
    done
    for J in 2 4 8; do run default petra "$J" cost measured false one; done
    t=$((cores / 8)); [ $t -ge 1 ] || t=1
    run default petra 8 "$t" "[]" true one
    [ $nodes = 1 ] && run default petra 8 "$t" "[]" false nodes
  else
    for t in 1 $((cores / 10 > 0 ? cores / 10 : 1)) $((cores / 5 > 0 ? cores / 5 : 1)) "$cores"; do
      grep -q "^revnet18	backprop	1	$t	" "$out/results.tsv" || run revnet18 backprop 1 "$t" "[10]" false one
    done
    for J in 5 10; do
      case $J in 5) blocks="[2,2,2,2,2]" ;; 10) blocks="[]" ;; esac
      t=$((cores / J)); [ $t -ge 1 ] || t=1
      run revnet18 petra "$J" "$t" "$blocks" false one
    done
    for J in 5 10; do run revnet18 petra "$J" cost measured false one; done
    t=$((cores / 10)); [ $t -ge 1 ] || t=1
    run revnet18 delayed 10 "$t" "[]" false one
  fi
done

{
  cat "$out/machine.txt"
  echo
  echo "| model | method | J × threads | pinned | processes | images/s | busiest stage | ideal (busiest) | efficiency |"
  echo "|---|---|---|---|---|---:|---:|---:|---:|"
  awk -F'\t' 'NR > 1 {printf "| %s | %s | %s × %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $7 == "true" ? "yes" : "no", $8 == "nodes" ? "4 nodes" : "1", $9, $10, $11, $12}' "$out/results.tsv"
} | tee "$out/table.md"
draw "$out"
echo "results: $out"
