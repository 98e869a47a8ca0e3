#!/usr/bin/env python3
"""Where a CPU run's oneDNN time goes: runs COMMAND with ONEDNN_VERBOSE=1 and sums the time oneDNN
reports for each primitive it executes, by primitive, implementation, propagation and data types
(and with --by-shape by layouts and problem too). Prints a table, largest first.

  python3 bench/onednn_time.py [--per N] [--by-shape] [--top K] -- COMMAND [ARGS...]
  python3 bench/onednn_time.py [--per N] [--by-shape] [--top K] --from-log FILE

--per N divides every time by N (e.g. the number of training steps COMMAND ran, warm-up included);
--from-log reads a saved ONEDNN_VERBOSE=1 output instead of running a command. Only oneDNN's own
primitives are timed (convolutions, reorders, and on a CPU stage the GEMMs of linear layers):
what a command spends elsewhere (petra's batch norm, pointwise ops, messages) is its wall time
minus the total. A reorder's types and layouts say what it converts: f32->bf16 rounds operands
for bf16 kernels, abcd->aBcd16b is NCHW into oneDNN's 16-channel blocks. Exit code 2 on bad flags
or a log without any execution line."""
import argparse
import collections
import os
import subprocess
import sys


def types_and_layouts(descriptors):
    """('bf16', 'abcd->aBcd16b')-like labels from a verbose line's memory descriptors."""
    kinds, layouts = [], []
    for md in descriptors.split():
        # e.g. src_f32::blocked:aBcd16b:f0 or wei_bf16:p:blocked:AcdB16a2b:f0
        # (argument_type:extra:format kind:layout:flags)
        fields = md.split(":")
        _, _, dtype = fields[0].partition("_")
        if dtype in ("undef", ""):
            continue
        kinds.append(dtype)
        layouts.append(fields[3] if len(fields) > 3 else "?")
    return kinds, layouts


def parse(lines):
    """One (primitive, implementation, propagation, types, layouts, problem, ms) per execution."""
    out = []
    for line in lines:
        if not (line.startswith("onednn_verbose,exec,") or line.startswith("dnnl_verbose,exec,")):
            continue
        f = line.rstrip("\n").split(",")
        if len(f) < 9:
            continue
        try:
            ms = float(f[-1])
        except ValueError:
            continue
        prim, impl, prop, descriptors, problem = f[3], f[4], f[5], f[6], f[-2]
        kinds, layouts = types_and_layouts(descriptors)
        if prim == "reorder" and len(kinds) >= 2:
            types = kinds[0] + "->" + kinds[-1]
            layout = layouts[0] + "->" + layouts[-1]
        else:
            types = "bf16" if "bf16" in kinds else (kinds[0] if kinds else "?")
            layout = " ".join(layouts)
        out.append((prim, impl, "" if prop == "undef" else prop, types, layout, problem, ms))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per", type=float, default=1.0, help="divide every time by this (e.g. steps run)")
    ap.add_argument("--by-shape", action="store_true", help="group by layouts and problem as well")
    ap.add_argument("--top", type=int, default=30, help="rows to print (default 30)")
    ap.add_argument("--from-log", help="a saved ONEDNN_VERBOSE=1 output instead of a command")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.per <= 0:
        print("onednn_time: --per must be positive, got %g" % args.per, file=sys.stderr)
        return 2
    if bool(command) == bool(args.from_log):
        print("onednn_time: give either a command after -- or --from-log FILE", file=sys.stderr)
        return 2

    if args.from_log:
        try:
            with open(args.from_log) as f:
                lines = f.readlines()
        except OSError as e:
            print("onednn_time: --from-log %s: %s" % (args.from_log, e.strerror), file=sys.stderr)
            return 2
        where = args.from_log
    else:
        env = dict(os.environ, ONEDNN_VERBOSE="1")
        try:
            run = subprocess.run(command, env=env, stdout=subprocess.PIPE, universal_newlines=True)
        except OSError as e:
            print("onednn_time: cannot run %s: %s" % (command[0], e.strerror), file=sys.stderr)
            return 2
        lines = run.stdout.splitlines()
        # The command's own output, without oneDNN's lines, so its table still reads.
        for line in lines:
            if not line.startswith(("onednn_verbose,", "dnnl_verbose,")):
                print(line)
        if run.returncode != 0:
            print("onednn_time: %s exited with %d" % (command[0], run.returncode), file=sys.stderr)
            return run.returncode
        where = " ".join(command)

    execs = parse(lines)
    if not execs:
        print("onednn_time: no oneDNN execution line in %s (a GPU-only run, or oneDNN without "
              "verbose support?)" % where, file=sys.stderr)
        return 2
    groups = collections.defaultdict(lambda: [0, 0.0])
    for prim, impl, prop, types, layout, problem, ms in execs:
        key = (prim, impl, prop, types) + ((layout, problem) if args.by_shape else ())
        groups[key][0] += 1
        groups[key][1] += ms
    total = sum(g[1] for g in groups.values())
    unit = "ms" if args.per == 1 else "ms/%g" % args.per
    print("\noneDNN primitives of %s: %.2f %s in %d executions\n" % (where, total / args.per, unit, len(execs)))
    header = "%10s %6s %8s  %-11s %-28s %-17s %-9s" % (unit, "share", "calls", "primitive", "implementation",
                                                      "propagation", "types")
    if args.by_shape:
        header += "  layouts / problem"
    print(header)
    for key, (calls, ms) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:args.top]:
        row = "%10.2f %5.1f%% %8d  %-11s %-28s %-17s %-9s" % (ms / args.per, 100.0 * ms / total if total else 0.0,
                                                             calls, key[0], key[1], key[2], key[3])
        if args.by_shape:
            row += "  %s %s" % (key[4], key[5])
        print(row)
    by_primitive = collections.defaultdict(float)
    for (prim, *_), (_, ms) in groups.items():
        by_primitive[prim] += ms
    print("\n" + ", ".join("%s %.1f%%" % (p, 100.0 * ms / total if total else 0.0)
                           for p, ms in sorted(by_primitive.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
