#!/usr/bin/env bash
# Hosts on one machine for the separate-hosts test and bench/remote/: N network namespaces on one
# bridge, each with its own address from 192.0.2.0/24 (TEST-NET-1), reachable from the others only.
#
#   tests/remote/hosts.sh up PREFIX N [--watch PID]   make PREFIX-0 .. PREFIX-(N-1); print "NAME ADDRESS" each
#   tests/remote/hosts.sh run NAME COMMAND [ARGS...]  exec COMMAND inside host NAME (same pid)
#   tests/remote/hosts.sh down PREFIX                 stop what runs in them and remove them
#
# Host 0 holds the bridge (br0, 192.0.2.10); host i > 0 has eth0 = 192.0.2.(10+i), the other end
# of a veth pair plugged into br0. Every link is made inside the namespaces, none in the caller's,
# so copies with distinct prefixes (the test uses its pid) never collide. With --watch, a detached
# watcher removes the hosts once process PID is gone, however it ended (even by SIGKILL).
# Exit codes: 0 done, 2 usage, 77 hosts cannot be made here (not root, no `ip`, namespaces or
# veth/bridge links refused: the reason is on stderr and nothing is left behind).
set -uo pipefail

usage() {
  echo "usage: $0 up PREFIX N [--watch PID] | run NAME COMMAND [ARGS...] | down PREFIX" >&2
  exit 2
}

down() {
  local prefix=$1 name pid
  for name in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $name == "$prefix"-* ]] || continue
    # Processes still inside (nodes, a coordinator) were started there by the caller.
    for pid in $(ip netns pids "$name" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$name" 2>/dev/null
  done
  return 0
}

[ $# -ge 2 ] || usage
command=$1
prefix=$2
if [ "$command" = run ]; then
  [ $# -ge 3 ] || usage
  shift 2
  exec ip netns exec "$prefix" "$@"
fi
[[ $prefix =~ ^[A-Za-z0-9-]+$ ]] || { echo "hosts.sh: '$prefix' is not a plain name" >&2; exit 2; }
case "$command" in
  down) down "$prefix"; exit 0 ;;
  up) ;;
  *) usage ;;
esac
count=${3:-}
[[ $count =~ ^[1-9]$ ]] || { echo "hosts.sh: N must be 1..9" >&2; exit 2; }
watch=""
if [ $# -ge 4 ]; then
  if [ "$4" != --watch ] || ! [[ ${5:-} =~ ^[0-9]+$ ]]; then usage; fi
  watch=$5
fi

cannot() {
  echo "hosts.sh: cannot make hosts here: $*" >&2
  down "$prefix"
  exit 77
}
[ "$(id -u)" = 0 ] || cannot "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null || cannot "the ip command is missing (apt-get install iproute2)"

# Runs one ip command; any refusal means this machine does not lend namespaces or links.
step() {
  local out
  out=$("$@" 2>&1) || cannot "'$*' failed: $out"
}

for ((i = 0; i < count; i++)); do step ip netns add "$prefix-$i"; done
step ip -n "$prefix-0" link add br0 type bridge
step ip -n "$prefix-0" addr add 192.0.2.10/24 dev br0
for ((i = 1; i < count; i++)); do
  step ip -n "$prefix-0" link add "h$i" type veth peer name eth0 netns "$prefix-$i"
  step ip -n "$prefix-0" link set "h$i" master br0
  step ip -n "$prefix-0" link set "h$i" up
  step ip -n "$prefix-$i" addr add "192.0.2.$((10 + i))/24" dev eth0
  step ip -n "$prefix-$i" link set eth0 up
done
step ip -n "$prefix-0" link set br0 up
for ((i = 0; i < count; i++)); do step ip -n "$prefix-$i" link set lo up; done

if [ -n "$watch" ]; then
  # Detached (own session, no inherited descriptors) so that it outlives its caller and holds no pipe.
  self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
  # shellcheck disable=SC2016  # the watcher's own positional parameters
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" down "$3"' \
    watcher "$watch" "$self" "$prefix" </dev/null >/dev/null 2>&1 &
fi
for ((i = 0; i < count; i++)); do echo "$prefix-$i 192.0.2.$((10 + i))"; done
