#!/usr/bin/env bash
# Runs a split pipeline on this machine: starts N `petra node` processes on free loopback ports,
# places stages on them and runs the coordinator (`petra train`) in the foreground. The nodes are
# always stopped at the end (also on Ctrl-C or kill); the exit code is the coordinator's.
#
#   deploy/launch-local.sh [--nodes N] [--placement LIST] [--petra BIN] CONFIG [petra train flags...]
#
#   --nodes N         number of nodes (default 2)
#   --placement LIST  one entry per stage: local, or nodeK (the K-th node, 1-based); default:
#                     stage 1 local, stages 2..N+1 on node1..nodeN, the rest local
#   --petra BIN       the petra executable (default: build/petra next to this script)
# Example, ci_smoke (5 stages) with stages 2 and 3 on two nodes:
#   deploy/launch-local.sh --nodes 2 ci_smoke --set runtime.mode=lockstep
# Node logs go to a temporary directory, printed at the start and removed at the end unless
# KEEP_NODE_LOGS=1. Loopback only: for several hosts, see deploy/examples/ (TLS).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
nodes=2
placement=""
petra="$here/../build/petra"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    --placement) placement=${2:?--placement needs a list}; shift 2 ;;
    --petra) petra=${2:?--petra needs a path}; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) echo "launch-local: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then echo "launch-local: give a config (file or preset), see --help" >&2; exit 2; fi
config=$1
shift
if ! [[ "$nodes" =~ ^[1-9][0-9]*$ ]]; then echo "launch-local: --nodes must be a positive number" >&2; exit 2; fi
if [ ! -x "$petra" ]; then echo "launch-local: $petra is not executable (build first, or --petra BIN)" >&2; exit 2; fi
if [ -z "$placement" ]; then
  # The config's stage count J, with the same --set overrides the coordinator gets.
  sets=()
  args=("$@")
  for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
      --set) sets+=(--set "${args[i + 1]:-}"); i=$((i + 1)) ;;
      --set=*) sets+=("${args[i]}") ;;
    esac
  done
  stages=$("$petra" model-info "$config" "${sets[@]}" | sed -n 's/.*, \([0-9][0-9]*\) stages,.*/\1/p' | head -n 1)
  if [ -z "$stages" ]; then echo "launch-local: cannot read the stage count of $config (petra model-info)" >&2; exit 2; fi
  if [ "$stages" -le "$nodes" ]; then
    echo "launch-local: $config has $stages stages: at most $((stages - 1)) nodes (stage 1 stays local)" >&2
    exit 2
  fi
  placement=local
  for ((k = 1; k < stages; k++)); do
    if [ "$k" -le "$nodes" ]; then placement+=",node$k"; else placement+=",local"; fi
  done
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/petra-launch-XXXXXX")
pids=()
coordinator=""

stop_nodes() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  # Bounded: 10 s for a clean shutdown, then SIGKILL.
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  pids=()
}
on_exit() {
  local code=$?
  [ -n "$coordinator" ] && kill -TERM "$coordinator" 2>/dev/null && wait "$coordinator" 2>/dev/null
  stop_nodes
  if [ "${KEEP_NODE_LOGS:-0}" = 1 ]; then echo "launch-local: node logs kept in $logs" >&2; else rm -rf "$logs"; fi
  exit "$code"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "launch-local: $nodes nodes, logs in $logs" >&2
addresses=()
for ((k = 1; k <= nodes; k++)); do
  "$petra" node --listen 127.0.0.1:0 >"$logs/node$k.out" 2>"$logs/node$k.err" &
  pids+=($!)
done
for ((k = 1; k <= nodes; k++)); do
  address=""
  for ((i = 0; i < 300; i++)); do  # 30 s
    address=$(sed -n 's/^petra node listening on \([^ ]*\).*/\1/p' "$logs/node$k.out" | head -n 1)
    [ -n "$address" ] && break
    if ! kill -0 "${pids[k - 1]}" 2>/dev/null; then
      echo "launch-local: node $k exited before listening:" >&2
      cat "$logs/node$k.err" >&2
      exit 1
    fi
    sleep 0.1
  done
  if [ -z "$address" ]; then echo "launch-local: node $k printed no address within 30 s" >&2; exit 1; fi
  addresses+=("$address")
  echo "launch-local: node $k (pid ${pids[k - 1]}) listening on $address" >&2
done

entries=()
IFS=',' read -r -a stages <<<"$placement"
for entry in "${stages[@]}"; do
  entry=${entry// /}
  if [ "$entry" = local ]; then
    entries+=(local)
  elif [[ "$entry" =~ ^node([1-9][0-9]*)$ ]] && [ "${BASH_REMATCH[1]}" -le "$nodes" ]; then
    entries+=("${addresses[BASH_REMATCH[1] - 1]}")
  else
    echo "launch-local: placement entry '$entry' is neither local nor node1..node$nodes" >&2
    exit 2
  fi
done
override="pipeline.nodes=[$(IFS=,; echo "${entries[*]}")]"
echo "launch-local: $petra train $config --set $override $*" >&2

"$petra" train "$config" --set "$override" "$@" &
coordinator=$!
wait "$coordinator"
code=$?
coordinator=""
exit "$code"
