#!/usr/bin/env python3
"""Where a recorded decode step's time goes, from kernel-trace.cpp's CSV.

Each replay of a CUDA graph, with the kernels launched after it until the next replay, is one step: a replay
begins at a graph's kernel after plain launches, or at a graph node the step has run already. For every
kernel of a step, in the order they start, "adds" is how far its end moves the latest end seen so far, so a
kernel that runs under its neighbours adds nothing and the adds of a step sum to its span. Steps of the most
common kernel count are summed by kernel (demangled name and grid) over --skip-first onwards.

    kernel_timeline.py TRACE.csv [--skip-first N] [--top K]
"""
import argparse
import collections
import csv
import re
import shutil
import subprocess
import sys

# One kernel of the trace: times in ns of the device's clock, graph and node 0 outside graphs.
Kernel = collections.namedtuple("Kernel", "start end graph node name grid")


def read_kernels(path):
    """The trace's kernels in the order they started."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return sorted(Kernel(int(r["start_ns"]), int(r["end_ns"]), int(r["graph"]), int(r["graph_node"]), r["name"],
                         f'{r["grid_x"]}x{r["grid_y"]}x{r["grid_z"]}') for r in rows)


def split_steps(kernels):
    """Steps: a graph's kernels from the first of a replay, with the plain launches up to the next replay.
    Launches before the first replay are left out."""
    steps, current, nodes, previous_graph = [], [], set(), 0
    for k in kernels:
        if k.graph != 0 and current and (previous_graph == 0 or (k.graph, k.node) in nodes):
            steps.append(current)
            current, nodes = [], set()
        current.append(k)
        nodes.add((k.graph, k.node))
        previous_graph = k.graph
    steps.append(current)
    return [s for s in steps if any(k.graph != 0 for k in s)]


def step_totals(steps, skip_first, label=lambda k: (k.name, k.grid)):
    """Over the steps of the most common kernel count, from skip_first on: per label, [count, run ns, added
    ns] summed, the spans (ns) of the steps, sorted, and the kernel count. ValueError where no step is left."""
    if not steps:
        raise ValueError("no graph replays")
    size = collections.Counter(len(s) for s in steps).most_common(1)[0][0]
    used = [s for s in steps if len(s) == size][skip_first:]
    if not used:
        raise ValueError(f"fewer than {skip_first + 1} steps of {size} kernels")
    totals = collections.defaultdict(lambda: [0, 0, 0])
    spans = []
    for s in used:
        latest = s[0].start
        for k in s:
            t = totals[label(k)]
            t[0] += 1
            t[1] += k.end - k.start
            t[2] += max(k.end - latest, 0)
            latest = max(latest, k.end)
        spans.append(latest - s[0].start)
    return totals, sorted(spans), size


def demangle(names):
    if not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return dict(zip(names, out.stdout.splitlines()))


def short(name):
    name = name.replace("folio::kernels::", "").replace("(anonymous namespace)::", "")
    return re.sub(r"\(.*\)$", "", name)[:100]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--skip-first", type=int, default=5, help="steps left out at the start (warm-up)")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    kernels = read_kernels(args.trace)
    if not kernels:
        sys.exit(f"{args.trace}: no kernels")
    steps = split_steps(kernels)
    names = demangle(sorted({k.name for k in kernels}))
    try:
        totals, spans, size = step_totals(steps, args.skip_first, lambda k: (short(names[k.name]), k.grid))
    except ValueError as e:
        sys.exit(f"{args.trace}: {e}")
    n = len(spans)
    print(f"{len(steps)} replays, {n} steps of {size} kernels used; step span min {spans[0] / 1e3:.1f} us, "
          f"median {spans[n // 2] / 1e3:.1f} us")
    print(f'{"kernel":100s} {"grid":>14s} {"a step":>6s} {"us run":>8s} {"us added":>9s}')
    for (name, grid), (count, duration, adds) in sorted(totals.items(), key=lambda x: -x[1][2])[:args.top]:
        print(f"{name:100s} {grid:>14s} {count // n:6d} {duration / n / 1e3:8.2f} {adds / n / 1e3:9.2f}")


if __name__ == "__main__":
    main()
