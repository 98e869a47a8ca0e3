#!/usr/bin/env bash
# Throughput of the async runtime across separate hosts as link latency grows: a coordinator and two
# `petra node`s, each in its own network namespace (tests/remote/hosts.sh), over TLS; every link
# between two hosts gets the in-process delay faults.forward_delay/backward_delay (milliseconds in
# async; the kernel here has no netem). Prints a table: latency, images/s, train and wall seconds,
# test accuracy, and how many messages were delayed (the summary's faults_injected).
#
#   bench/remote/latency.sh [--petra BIN] [--latencies 0,1,10] [--repeats N] CONFIG [--set k=v ...]
#
# Stages: the first quarter and the last quarter stay with the coordinator, the second quarter runs
# on node A, the third on node B (ci_smoke, 5 stages: local,A,B,local,local). Needs root.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
petra="$root/build/petra"
latencies=0,1,10
repeats=1
while [ $# -gt 0 ]; do
  case "$1" in
    --petra) petra=${2:?--petra needs a path}; shift 2 ;;
    --latencies) latencies=${2:?--latencies needs a list}; shift 2 ;;
    --repeats) repeats=${2:?--repeats needs a number}; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "latency.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then echo "latency.sh: give a config (file or preset), see --help" >&2; exit 2; fi
config=$1
shift
[ -x "$petra" ] || { echo "latency.sh: $petra is not executable (build first, or --petra BIN)" >&2; exit 2; }
stages=$("$petra" model-info "$config" "$@" | sed -n 's/.*, \([0-9][0-9]*\) stages,.*/\1/p' | head -n 1)
if [ -z "$stages" ] || [ "$stages" -lt 4 ]; then echo "latency.sh: $config needs 4 stages or more" >&2; exit 2; fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/petra-latency-XXXXXX")
prefix=petra-bench-$$
hosts="$root/tests/remote/hosts.sh"
node_pids=()
finish() {
  for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  bash "$hosts" down "$prefix"
  rm -rf "$scratch"
}
trap finish EXIT
trap 'exit 130' INT TERM

bash "$hosts" up "$prefix" 3 --watch $$ >"$scratch/hosts" || exit $?
mapfile -t address < <(awk '{print $2}' "$scratch/hosts")
bash "$root/deploy/make-test-ca.sh" "$scratch/ca" "${address[@]}" >/dev/null || exit 1
tls() { echo "--tls-cert $scratch/ca/$1.pem --tls-key $scratch/ca/$1.key --tls-ca $scratch/ca/ca.pem"; }

for i in 1 2; do
  # shellcheck disable=SC2046  # tls prints flags
  bash "$hosts" run "$prefix-$i" "$petra" node --listen "${address[i]}:7001" $(tls "${address[i]}") \
    >"$scratch/node$i.log" 2>&1 &
  node_pids+=($!)
done
for i in 1 2; do
  for _ in $(seq 600); do grep -q "listening on" "$scratch/node$i.log" && break; sleep 0.1; done
  grep -q "listening on" "$scratch/node$i.log" || { echo "node $i did not start:" >&2; cat "$scratch/node$i.log" >&2; exit 1; }
done

# Host of each stage (0 = the coordinator's) and the placement.
host=()
placement=""
for ((j = 1; j <= stages; j++)); do
  if ((j > stages / 4 && j <= stages / 2)); then h=1; elif ((j > stages / 2 && j <= 3 * stages / 4)); then h=2; else h=0; fi
  host+=("$h")
  if ((h == 0)); then entry=local; else entry="${address[h]}:7001"; fi
  placement+="${placement:+,}$entry"
done

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $config $*, async, pipeline.nodes=[$placement], TLS"
echo "| run | link latency (ms) | images/s | train s | wall s | test accuracy | messages delayed |"
echo "|---|---|---|---|---|---|---|"
IFS=, read -ra list <<<"$latencies"
# Latencies interleaved within each repeat, so that a machine whose load drifts favours none of them.
for ((r = 1; r <= repeats; r++)); do
  for latency in "${list[@]}"; do
    # Link j -> j+1 (0-based j) crosses hosts when its two stages are on different hosts.
    delays=""
    for ((j = 0; j + 1 < stages; j++)); do
      if [ "${host[j]}" != "${host[j + 1]}" ]; then d=$latency; else d=0; fi
      delays+="${delays:+,}$d"
    done
    name="latency-$latency-$r"
    if ! bash "$hosts" run "$prefix-0" "$petra" train "$config" "$@" --set runtime.mode=async \
      --set "pipeline.nodes=[$placement]" --set "faults.forward_delay=[$delays]" \
      --set "faults.backward_delay=[$delays]" --set "output.dir=$scratch/runs" --set "output.name=$name" \
      --set "tls.cert=$scratch/ca/${address[0]}.pem" --set "tls.key=$scratch/ca/${address[0]}.key" \
      --set "tls.ca=$scratch/ca/ca.pem" >"$scratch/$name.log" 2>&1; then
      echo "latency.sh: the run with $latency ms failed:" >&2
      tail -n 20 "$scratch/$name.log" >&2
      exit 1
    fi
    python3 - "$scratch/runs/$name/metrics.jsonl" "$r" "$latency" <<'EOF'
import json, sys
summary = [j for j in map(json.loads, open(sys.argv[1])) if j.get("event") == "summary"][-1]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {summary['images_per_s']:.0f} | {summary['train_seconds']:.1f} | "
      f"{summary['wall_seconds']:.1f} | {100 * summary['test_accuracy']:.2f} % | "
      f"{summary['micro_batches'].get('faults_injected', 0)} |")
EOF
  done
done
