#!/usr/bin/env python3
"""kernel_timeline.py on made-up traces whose steps, overlaps and spans are known."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_timeline as kt  # noqa: E402


def kernel(start, end, graph, name, grid="1x1x1"):
    """A kernel whose graph node, in a graph, is named by its name."""
    return kt.Kernel(start, end, graph, ord(name[0]) if graph else 0, name, grid)


def step(t0, graph=7):
    """A step at t0: a, then b starting under a and ending 30 ns after it, then c entirely under b, then a plain
    launch d 10 ns after b; its span is 155 ns."""
    return [kernel(t0, t0 + 100, graph, "a"), kernel(t0 + 50, t0 + 130, graph, "b"),
            kernel(t0 + 60, t0 + 90, graph, "c"), kernel(t0 + 140, t0 + 155, 0, "d")]


class SplitSteps(unittest.TestCase):
    def test_launches_before_the_first_replay_are_left_out(self):
        kernels = [kernel(0, 10, 0, "warm-up")] + step(1000) + step(2000)
        steps = kt.split_steps(kernels)
        self.assertEqual(len(steps), 2)
        self.assertEqual([k.name for k in steps[0]], ["a", "b", "c", "d"])
        self.assertEqual(steps[1][0].start, 2000)

    def test_replays_without_launches_between(self):
        steps = kt.split_steps(step(0)[:3] + step(1000)[:3] + step(2000))
        self.assertEqual([len(s) for s in steps], [3, 3, 4])

    def test_no_replay_no_step(self):
        self.assertEqual(kt.split_steps([kernel(0, 10, 0, "x"), kernel(20, 30, 0, "y")]), [])


class StepTotals(unittest.TestCase):
    def test_adds_sum_to_the_span_and_overlap_adds_nothing(self):
        totals, spans, size = kt.step_totals(kt.split_steps(step(0) + step(1000) + step(2000)), 1,
                                             label=lambda k: k.name)
        self.assertEqual(size, 4)
        self.assertEqual(spans, [155, 155])
        self.assertEqual(totals["a"], [2, 200, 200])
        self.assertEqual(totals["b"], [2, 160, 60])
        self.assertEqual(totals["c"], [2, 60, 0])
        self.assertEqual(totals["d"], [2, 30, 50])
        self.assertEqual(sum(t[2] for t in totals.values()), sum(spans))

    def test_steps_of_another_kernel_count_are_left_out(self):
        odd = step(5000)[:3]
        totals, spans, _ = kt.step_totals(kt.split_steps(step(0) + step(1000) + odd + step(9000)), 0,
                                          label=lambda k: k.name)
        self.assertEqual(len(spans), 3)
        self.assertEqual(totals["d"][0], 3)

    def test_too_few_steps(self):
        with self.assertRaisesRegex(ValueError, "fewer than 3 steps of 4 kernels"):
            kt.step_totals(kt.split_steps(step(0) + step(1000)), 2)
        with self.assertRaisesRegex(ValueError, "no graph replays"):
            kt.step_totals([], 0)


class RunSummary(unittest.TestCase):
    def test_busy_idle_and_gaps(self):
        # x and y overlap (busy 0-150), z after an idle 5 us, w after 2 ms, v after 0.5 ms.
        kernels = [kernel(0, 100, 0, "x"), kernel(50, 150, 0, "y"), kernel(5_150, 5_200, 0, "z"),
                   kernel(2_005_200, 2_005_300, 0, "w"), kernel(2_505_300, 2_505_400, 0, "z")]
        s = kt.run_summary(kernels, n_longest=2)
        self.assertEqual(s["span"], 2_505_400)
        self.assertEqual(s["busy"], 150 + 50 + 100 + 100)
        self.assertEqual(s["idle"], s["span"] - s["busy"])
        self.assertEqual(s["gaps"], [[1, 5_000], [0, 0], [1, 500_000], [1, 2_000_000]])
        self.assertEqual(s["longest"], [(2_000_000, "z", "w"), (500_000, "w", "z")])
        self.assertEqual(s["pairs"], {("w", "z"): [1, 500_000], ("z", "w"): [1, 2_000_000]})
        self.assertEqual(s["by_name"]["z"], [2, 150])
        self.assertEqual(s["by_name"]["y"], [1, 100])

    def test_a_kernel_inside_another_ends_no_gap(self):
        # b runs inside a; the gap before c is counted from a's end, after a.
        s = kt.run_summary([kernel(0, 1_000, 0, "a"), kernel(100, 200, 0, "b"), kernel(31_000, 31_100, 0, "c")])
        self.assertEqual(s["busy"], 1_100)
        self.assertEqual(s["gaps"][1], [1, 30_000])
        self.assertEqual(s["longest"], [(30_000, "a", "c")])

    def test_densest_window_is_the_busiest(self):
        kernels = [kernel(0, 10, 0, "x"), kernel(1_000_000_000, 1_000_000_100, 0, "y"),
                   kernel(1_000_000_200, 1_000_000_400, 0, "z"), kernel(3_000_000_000, 3_000_000_050, 0, "w")]
        self.assertEqual([k.name for k in kt.densest_window(kernels, 0.5)], ["y", "z"])
        self.assertEqual(len(kt.densest_window(kernels, 10)), 4)
        self.assertEqual(kt.densest_window([], 1), [])

    def test_parts_by_name_and_products_with_the_kernel_before(self):
        kernels = [kernel(0, 10, 0, "gemm"), kernel(10, 30, 0, "layer_norm_rows"), kernel(30, 70, 0, "gemm"),
                   kernel(70, 75, 0, "rms_norm"), kernel(75, 95, 0, "gemm"), kernel(95, 96, 0, "gelu")]
        totals = kt.part_totals(kernels, {})
        self.assertEqual(totals["vision encoder"][0], 10 + 20 + 40 + 1)
        self.assertEqual(totals["decoder"][0], 5 + 20)
        self.assertEqual(totals["decoder"][1]["gemm"], 20)

    def test_last_seconds_and_no_kernels(self):
        kernels = [kernel(0, 10, 0, "early"), kernel(2_000_000_000, 2_500_000_000, 0, "late")]
        self.assertEqual([k.name for k in kt.last_seconds(kernels, 1.0)], ["late"])
        self.assertEqual(len(kt.last_seconds(kernels, 3.0)), 2)
        with self.assertRaisesRegex(ValueError, "no kernels"):
            kt.run_summary([])


def report(kernels, *options):
    """kernel_timeline.py's output lines for a trace file of kernels, run with options."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["start_ns", "end_ns", "grid_x", "grid_y", "grid_z", "graph", "graph_node", "name"])
            for k in kernels:
                w.writerow([k.start, k.end, 2, 1, 1, k.graph, k.node, k.name])
        return subprocess.run([sys.executable, kt.__file__, path, *options], capture_output=True, text=True,
                              check=True).stdout.splitlines()


class Main(unittest.TestCase):
    def test_report_of_a_trace_file(self):
        out = report([k for t0 in (0, 10000, 20000, 30000) for k in step(t0)], "--skip-first", "2")
        self.assertEqual(out[0], "4 replays, 2 steps of 4 kernels used; step span min 0.2 us, median 0.2 us")
        first = out[2].split()
        self.assertEqual(first[0], "a")
        self.assertEqual(first[1:], ["2x1x1", "1", "0.10", "0.10"])

    def test_whole_run_report(self):
        out = report(step(0) + step(3_000_000), "--whole-run", "--top", "1")
        self.assertEqual(out[0], "span 3.0 ms: kernels running 0.0 ms, none 3.0 ms")
        self.assertEqual(out[1], "idle gaps: <= 10 us 2 (0.0 ms), 10-100 us 0 (0.0 ms), 0.1-1 ms 0 (0.0 ms), "
                                 "> 1 ms 1 (3.0 ms)")
        self.assertEqual(out[2].split(), ["3.00", "ms", "after", "d", "before", "a"])
        pairs = out.index("idle over 10 us by the kernels around it:")
        self.assertEqual(out[pairs + 1].split(), ["3.0", "ms", "1", "gaps", "after", "d", "before", "a"])
        header = next(i for i, line in enumerate(out) if line.startswith("kernel "))
        self.assertEqual(len(out), header + 2)
        self.assertEqual(out[header + 1].split()[:2], ["a", "2"])


if __name__ == "__main__":
    unittest.main()
