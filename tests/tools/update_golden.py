#!/usr/bin/env python3
"""Regenerates the golden outputs of tests/data/golden/ (tests/unit/golden_test.cpp) with a built
roofline executable, from the repository root:
    python3 tests/tools/update_golden.py build/roofline
Run it after an intended change of the model or the reports, and review the diff like code."""
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "roofline"))
GOLDEN = os.path.join(ROOT, "tests", "data", "golden")

with open(os.path.join(GOLDEN, "commands.txt")) as f:
    for line in f:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, args = (part.strip() for part in line.split("|", 1))
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, name)
            argv = [EXE] + [out if a == "OUT" else a for a in shlex.split(args)]
            r = subprocess.run(argv, cwd=ROOT, capture_output=True)
            if r.returncode != 0:
                sys.exit(f"{name}: exit {r.returncode}: {r.stderr.decode()}")
            data = open(out, "rb").read() if "OUT" in shlex.split(args) else r.stdout
        with open(os.path.join(GOLDEN, name), "wb") as g:
            g.write(data)
        print(f"{name}: {len(data)} bytes")
