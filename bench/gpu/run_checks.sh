# Sourced by bench/gpu/run.sh (its variables and helpers set): the correctness sub-commands: parity,
# sanitize, profile.
# shellcheck shell=bash

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
