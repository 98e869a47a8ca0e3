#!/usr/bin/env bash
# Checks bench/onednn_time.py: on a saved log it sums oneDNN's times by primitive exactly (a
# reorder labelled by its types and layouts, the padded-weights descriptor read right); on a live
# `petra train ci_smoke` it finds the run's convolutions; bad flags, a missing log and a log
# without executions exit 2. Usage: onednn_time_check.sh PETRA_BINARY. Exit 0 passed, 1 failed,
# 77 without python3.
set -euo pipefail
petra=$(realpath "${1:?usage: onednn_time_check.sh PETRA_BINARY}")
tool="$(cd "$(dirname "$0")" && pwd)/onednn_time.py"
command -v python3 > /dev/null || { echo "skipped: no python3"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

cat > "$work/log" <<'LOG'
onednn_verbose,info,oneDNN v2.6.3 (commit N/A)
onednn_verbose,exec,cpu,convolution,jit_bf16:avx512_core_bf16,forward_training,src_bf16::blocked:aBcd16b:f0 wei_bf16:p:blocked:AcdB16a2b:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0,attr-scratchpad:user ,alg:convolution_direct,mb32_ic64oc64_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1,3.5
onednn_verbose,exec,cpu,convolution,jit_bf16:avx512_core_bf16,forward_training,src_bf16::blocked:aBcd16b:f0 wei_bf16:p:blocked:AcdB16a2b:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0,attr-scratchpad:user ,alg:convolution_direct,mb32_ic64oc64_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1,2.5
onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd:f0 dst_bf16::blocked:aBcd16b:f0,attr-scratchpad:user ,,32x64x32x32,1.5
onednn_verbose,exec,cpu,reorder,jit:blk,undef,src_f32::blocked:aBcd16b:f0 dst_f32::blocked:abcd:f0,attr-scratchpad:user ,,32x64x32x32,0.5
not a verbose line
LOG
out=$(python3 "$tool" --per 2 --from-log "$work/log")
echo "$out"
grep -q "4.00 ms/2 in 4 executions" <<< "$out" || fail "total of the log is not 8 ms over 2 (4.00 per step)"
grep -Eq "^ +3\.00 +75\.0% +2  convolution jit_bf16:avx512_core_bf16 +forward_training +bf16" <<< "$out" ||
  fail "the two bf16 forward convolutions are not one row of 3.00 ms/2 and 75 %"
grep -Eq "^ +0\.75 +18\.8% +1  reorder +jit:uni +f32->bf16" <<< "$out" || fail "the rounding reorder's row is wrong"
grep -Eq "^ +0\.25 +6\.2% +1  reorder +jit:blk +f32->f32" <<< "$out" || fail "the layout reorder's row is wrong"
grep -q "convolution 75.0%, reorder 25.0%" <<< "$out" || fail "the shares by primitive are wrong"
shape=$(python3 "$tool" --by-shape --from-log "$work/log")
grep -q "abcd->aBcd16b 32x64x32x32" <<< "$shape" || fail "--by-shape does not show the reorder's layouts and problem"
grep -q "aBcd16b AcdB16a2b aBcd16b mb32_ic64oc64" <<< "$shape" || fail "--by-shape misreads the padded weights' layout"

expect_2() {  # expect_2 WHAT ARGS...: the tool exits 2 with a message on stderr
  local what=$1; shift
  set +e; python3 "$tool" "$@" > "$work/out" 2> "$work/err"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "$what: exit $rc, not 2"
  [ -s "$work/err" ] || fail "$what: no message"
  echo "refused ($what): $(cat "$work/err")"
}
expect_2 "--per 0" --per 0 --from-log "$work/log"
expect_2 "no command, no log"
expect_2 "a command and a log" --from-log "$work/log" -- true
expect_2 "a missing log" --from-log "$work/none"
printf 'nothing here\n' > "$work/empty"
expect_2 "a log without executions" --from-log "$work/empty"

live=$(cd "$work" && python3 "$tool" --top 40 -- "$petra" train ci_smoke --set output.dir="$work/run")
echo "$live" | tail -n 12
grep -Eq "^ +[0-9.]+ +[0-9.]+% +[0-9]+  convolution " <<< "$live" || fail "no convolution row for a live ci_smoke run"
if grep -q "^onednn_verbose," <<< "$live"; then fail "oneDNN's lines are echoed with the command's output"; fi
grep -q "test accuracy" <<< "$live" || fail "the command's own output is not passed through"
echo "passed"
