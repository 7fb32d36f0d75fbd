#!/usr/bin/env python3
"""Write the model's predictions for the inference steps of tests/data/inference/cases.txt before
they are measured (held-out: the file is committed first, the measurement scored against it once).

Usage: tests/tools/inference_predictions.py ROOFLINE OUT.json [--hw SPEC]
"""
import argparse
import json
import shlex
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("roofline")
ap.add_argument("out")
ap.add_argument("--hw", default="h100-sxm")
ap.add_argument("--cases", default="tests/data/inference/cases.txt")
a = ap.parse_args()

commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
rows = []
for line in open(a.cases):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    name, args = line.split("|", 1)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [a.roofline, "analyze", *shlex.split(args), "--hw", a.hw, "-q", "-o", f.name]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{name}: {' '.join(cmd)} failed: {r.stderr}")
        d = json.load(open(f.name))
    t = d["totals"]
    rows.append({"name": name, "args": args, "step_time_s": t["step_time_s"], "kernel_time_s": t["time_s"],
                 "flops": t["flops"], "bytes": t["bytes_read"] + t["bytes_written"],
                 "parameter_bytes": d["model"]["parameter_bytes"]})
json.dump({"hardware": a.hw, "commit": commit, "cases": rows}, open(a.out, "w"), indent=1)
print(f"{len(rows)} predictions written to {a.out}")
