#!/usr/bin/env python3
"""Whole-process wall time and peak memory of roofline commands (issue #20): each command run 7
times, the median wall time and the largest max-RSS printed. Usage:
    python3 bench/process_times.py [path/to/roofline]
Figures go to docs/PERFORMANCE.md with the machine and date."""
import os
import statistics
import sys
import time

EXE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "build", "roofline")
COMMANDS = [
    ["hw", "list"],
    ["analyze", "gpt3-175b", "-q"],
    ["analyze", "gpt3-175b", "--mode", "training", "-q"],
    ["plan", "gpt3-175b", "-q"],
]
EXTRA = sys.argv[2:]  # further commands, each one string ("analyze big.json -q")


def run(args):
    times = []
    rss = 0
    for _ in range(7):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.execv(EXE, [EXE] + args)
        _, status, usage = os.wait4(pid, 0)
        times.append(time.perf_counter() - t0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(args)}: exit {os.waitstatus_to_exitcode(status)}")
        rss = max(rss, usage.ru_maxrss)
    return statistics.median(times), rss


for args in COMMANDS + [e.split() for e in EXTRA]:
    t, rss = run(args)
    print(f"{' '.join(args):60s} {t * 1000:9.1f} ms  {rss / 1024:8.1f} MiB")
