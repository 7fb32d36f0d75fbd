#!/usr/bin/env python3
"""Splits a validation's per-op errors into host-floor calls and device-dominated calls.

Usage: regime_split.py CASES.csv
CASES.csv is `roofline validate ... --csv CASES.csv` (one row per case). For each (GPU, op) the
floor is the 2nd percentile of the measured latencies (the smallest calls: the host's dispatch and
the CUDA events, the kernel a few microseconds); a call is "at the floor" when it measured under
twice its op's floor on that GPU, "device" otherwise. Prints, per GPU and family, n, median |error|
and the median signed error of each part, and each op's floor per GPU, so that what the host of a
machine costs (not predictable from other machines' hosts) and what the device model costs can be
read apart. docs/ACCURACY.md ("Host floor or device") was made with it.
"""
import collections
import csv
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["op"] != "e2e" and r["error_pct"] != ""]
    measured = collections.defaultdict(list)
    for r in rows:
        measured[(r["gpu"], r["op"])].append(float(r["measured_s"]))
    floor = {}
    for key, v in measured.items():
        v.sort()
        floor[key] = v[len(v) // 50]
    parts = collections.defaultdict(lambda: ([], []))
    for r in rows:
        at_floor = float(r["measured_s"]) < 2 * floor[(r["gpu"], r["op"])]
        parts[(r["gpu"], r["family"])][0 if at_floor else 1].append(float(r["error_pct"]))

    def cell(v):
        if not v:
            return "| | "
        return f"| {len(v)} | {statistics.median(abs(e) for e in v):.1f}% ({statistics.median(v):+.1f}) "

    print("| GPU | family | calls at the floor | median \\|error\\| (bias) | device calls | median \\|error\\| (bias) |")
    print("|---|---|---|---|---|---|")
    for (gpu, family), (low, high) in sorted(parts.items()):
        print(f"| {gpu} | {family} {cell(low)}{cell(high)}|")
    print()
    ops = sorted({op for _, op in floor})
    gpus = sorted({gpu for gpu, _ in floor})
    print("| op | " + " | ".join(gpus) + " |")
    print("|---|" + "---|" * len(gpus))
    for op in ops:
        print(f"| {op} | " + " | ".join(f"{floor[(g, op)] * 1e6:.1f} us" if (g, op) in floor else "" for g in gpus) + " |")


if __name__ == "__main__":
    main()
