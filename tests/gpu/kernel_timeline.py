#!/usr/bin/env python3
"""Where a recorded decode step's time goes, or a whole run's, from kernel-trace.cpp's CSV.

Each replay of a CUDA graph, with the kernels launched after it until the next replay, is one step: a replay
begins at a graph's kernel after plain launches, or at a graph node the step has run already. For every
kernel of a step, in the order they start, "adds" is how far its end moves the latest end seen so far, so a
kernel that runs under its neighbours adds nothing and the adds of a step sum to its span. Steps of the most
common kernel count are summed by kernel (demangled name and grid) over --skip-first onwards.

With --whole-run, the kernels that start in the trace's last --last-seconds, or in the --densest-seconds window
whose kernels run longest (all of them without either), are taken as one span instead: the time some kernel ran (busy) and the time none did (idle), the idle gaps by length with
the kernels on either side of the longest, the idle time over 10 us summed by the pair of kernels around it
(where the host does the same work every step, the same pair recurs), and each kernel's count and run time
summed by name; with --parts, also the run time of the document workload's vision encoder and decoder, each
kernel going with the part its name marks (PARTS) or, unmarked (the products), with the part of the last
marked kernel before it.

    kernel_timeline.py TRACE.csv [--skip-first N] [--top K]
    kernel_timeline.py TRACE.csv --whole-run [--last-seconds S | --densest-seconds S] [--parts] [--top K]
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


# Upper bounds (ns) of the idle gaps' classes in a whole-run summary; the last class is open. GAP_LABELS
# names each class, the open one last.
GAP_CLASSES = (10_000, 100_000, 1_000_000)
GAP_LABELS = ("<= 10 us", "10-100 us", "0.1-1 ms", "> 1 ms")


def run_summary(kernels, n_longest=5):
    """A span of kernels (in the order they started) as a dict: span, busy and idle ns, gaps (per class of
    GAP_CLASSES and one above: [count, ns]), longest (up to n_longest (ns, kernel before, kernel after),
    longest first), pairs ({(kernel before, kernel after): [count, ns]} of the gaps over GAP_CLASSES[0]) and
    by_name ({name: [count, run ns]}). ValueError where there are no kernels."""
    if not kernels:
        raise ValueError("no kernels")
    busy, gaps, longest = 0, [[0, 0] for _ in range(len(GAP_CLASSES) + 1)], []
    by_name = collections.defaultdict(lambda: [0, 0])
    pairs = collections.defaultdict(lambda: [0, 0])
    first, latest, last_kernel = kernels[0].start, kernels[0].start, None
    for k in kernels:
        if k.start > latest and last_kernel is not None:
            gap = k.start - latest
            c = next((i for i, bound in enumerate(GAP_CLASSES) if gap <= bound), len(GAP_CLASSES))
            gaps[c][0] += 1
            gaps[c][1] += gap
            longest.append((gap, last_kernel.name, k.name))
            if gap > GAP_CLASSES[0]:
                pair = pairs[(last_kernel.name, k.name)]
                pair[0] += 1
                pair[1] += gap
        busy += max(k.end - max(k.start, latest), 0)
        if k.end >= latest:
            latest, last_kernel = k.end, k
        t = by_name[k.name]
        t[0] += 1
        t[1] += k.end - k.start
    longest.sort(key=lambda g: -g[0])
    span = latest - first
    return {"span": span, "busy": busy, "idle": span - busy, "gaps": gaps, "longest": longest[:n_longest],
            "pairs": dict(pairs), "by_name": dict(by_name)}


def last_seconds(kernels, seconds):
    """The kernels that start within the last `seconds` before the trace's latest end."""
    if not kernels:
        return []
    cut = max(k.end for k in kernels) - int(seconds * 1e9)
    return [k for k in kernels if k.start >= cut]


def densest_window(kernels, seconds):
    """The kernels that start within the window of `seconds` whose kernels run longest in all: the workload of
    a run that does other work before and after it."""
    width, best, first, run, total = int(seconds * 1e9), (-1, 0, 0), 0, 0, 0
    for last, k in enumerate(kernels):
        total += k.end - k.start
        while k.start - kernels[first].start > width:
            total -= kernels[first].end - kernels[first].start
            first += 1
        if total > best[0]:
            best = (total, first, last + 1)
    return kernels[best[1]:best[2]]


# Name fragments of the kernels that only the vision encoder or only the decoder runs.
PARTS = {"vision encoder": ("layer_norm", "rope_split", "expand_levels", "gelu"),
         "decoder": ("rms_norm", "rope_qkv", "decode_attention", "swiglu", "argmax", "sample_rows",
                     "gather_token")}


def part_totals(kernels, names, parts=PARTS):
    """Run ns of each part, and of each kernel name within it: {part: [ns, {name: ns}]}. A kernel whose
    (demangled) name has none of the parts' fragments goes with the part of the last one that had one, the
    first part before any."""
    totals = {part: [0, collections.Counter()] for part in parts}
    current = next(iter(parts))
    for k in kernels:
        name = names.get(k.name, k.name)
        current = next((p for p, fragments in parts.items() if any(f in name for f in fragments)), current)
        totals[current][0] += k.end - k.start
        totals[current][1][k.name] += k.end - k.start
    return totals


def print_part_totals(totals, names, top):
    ms = 1e6
    for part, (run, by_name) in totals.items():
        print(f"{part}: {run / ms:.1f} ms run")
        for name, duration in by_name.most_common(top):
            print(f"  {duration / ms:9.1f} ms {short(names.get(name, name))}")


def print_run_summary(summary, names, top):
    ms = 1e6
    print(f'span {summary["span"] / ms:.1f} ms: kernels running {summary["busy"] / ms:.1f} ms, none '
          f'{summary["idle"] / ms:.1f} ms')
    print("idle gaps: " + ", ".join(f"{label} {n} ({t / ms:.1f} ms)"
                                    for label, (n, t) in zip(GAP_LABELS, summary["gaps"])))
    for gap, before, after in summary["longest"]:
        print(f"  {gap / ms:8.2f} ms after {short(names[before])} before {short(names[after])}")
    print("idle over 10 us by the kernels around it:")
    for (before, after), (count, idle) in sorted(summary["pairs"].items(), key=lambda x: -x[1][1])[:top]:
        print(f"  {idle / ms:8.1f} ms {count:6d} gaps after {short(names[before])[:60]} before "
              f"{short(names[after])[:60]}")
    print(f'{"kernel":100s} {"count":>7s} {"ms run":>9s} {"of busy":>7s}')
    busy = max(summary["busy"], 1)
    for name, (count, duration) in sorted(summary["by_name"].items(), key=lambda x: -x[1][1])[:top]:
        print(f"{short(names[name]):100s} {count:7d} {duration / ms:9.1f} {100 * duration / busy:6.1f}%")


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
    parser.add_argument("--whole-run", action="store_true", help="one span instead of decode steps")
    parser.add_argument("--last-seconds", type=float, help="with --whole-run, only the trace's last seconds")
    parser.add_argument("--densest-seconds", type=float,
                        help="with --whole-run, only the window of this many seconds whose kernels run longest")
    parser.add_argument("--parts", action="store_true",
                        help="with --whole-run, the vision encoder's and the decoder's run time")
    args = parser.parse_args()

    kernels = read_kernels(args.trace)
    if not kernels:
        sys.exit(f"{args.trace}: no kernels")
    names = demangle(sorted({k.name for k in kernels}))
    if args.whole_run:
        if args.last_seconds is not None:
            kernels = last_seconds(kernels, args.last_seconds)
        elif args.densest_seconds is not None:
            kernels = densest_window(kernels, args.densest_seconds)
        try:
            print_run_summary(run_summary(kernels), names, args.top)
        except ValueError as e:
            sys.exit(f"{args.trace}: {e}")
        if args.parts:
            print_part_totals(part_totals(kernels, names), names, args.top)
        return
    steps = split_steps(kernels)
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
