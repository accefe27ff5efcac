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


class Main(unittest.TestCase):
    def test_report_of_a_trace_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace.csv")
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["start_ns", "end_ns", "grid_x", "grid_y", "grid_z", "graph", "graph_node", "name"])
                for t0 in (0, 10000, 20000, 30000):
                    for k in step(t0):
                        w.writerow([k.start, k.end, 2, 1, 1, k.graph, k.node, k.name])
            out = subprocess.run([sys.executable, kt.__file__, path, "--skip-first", "2"], capture_output=True,
                                 text=True, check=True).stdout.splitlines()
        self.assertEqual(out[0], "4 replays, 2 steps of 4 kernels used; step span min 0.2 us, median 0.2 us")
        first = out[2].split()
        self.assertEqual(first[0], "a")
        self.assertEqual(first[1:], ["2x1x1", "1", "0.10", "0.10"])


if __name__ == "__main__":
    unittest.main()
