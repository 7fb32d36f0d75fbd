#!/usr/bin/env python3
"""Re-time rows of a torch_ops_bench.py CSV (elementwise ops: add, mul, div, relu, tanh, gelu, pow)
on this machine with the same protocol (3 warm-up calls, median of 20 calls between CUDA events)
and print the ratio to the recorded latency: whether this machine's host is the one that recorded
the file. Usage: retime_rows.py FILE.csv [--rows N] [--out OUT.csv]
"""
import argparse
import csv
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "measure"))
from torch_timing import time_call  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--rows", type=int, default=40)
ap.add_argument("--out", default="")
a = ap.parse_args()
dev = torch.device("cuda")
OPS = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "relu": lambda x, y: F.relu(x),
       "tanh": lambda x, y: torch.tanh(x), "gelu": lambda x, y: F.gelu(x), "pow": lambda x, y: torch.pow(x, 2.0)}


rows = list(csv.DictReader(open(a.file)))[: a.rows]
out = []
for r in rows:
    x = torch.randn(int(r["B"]), int(r["H"]), device=dev)
    y = torch.randn(int(r["B"]), int(r["H"]), device=dev)
    op = OPS[r["OPName"]]
    ms = time_call(lambda: op(x, y))
    out.append({"B": r["B"], "H": r["H"], "recorded_ms": float(r["Latency_ms"]), "now_ms": ms})
ratios = [o["now_ms"] / o["recorded_ms"] for o in out]
print(f"{a.file}: {len(out)} rows, now / recorded: median {statistics.median(ratios):.3f}, "
      f"min {min(ratios):.3f}, max {max(ratios):.3f}")
if a.out:
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
        w.writeheader()
        w.writerows(out)
