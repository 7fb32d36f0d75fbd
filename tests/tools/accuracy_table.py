#!/usr/bin/env python3
"""Prints the accuracy tables of docs/ACCURACY.md from the measured fixtures.

Usage: tests/tools/accuracy_table.py BUILD_DIR MEASURED_DIR
Runs `roofline analyze` (datasheet and calibrated spec) and `roofline compare` against every
measurement in MEASURED_DIR and prints Markdown. Nothing here is hard-coded: the tables are the
tool's own output on the committed measurements.
"""
import json
import os
import subprocess
import sys
import tempfile

build, mdir = sys.argv[1], sys.argv[2]
exe = os.path.join(build, "roofline")
tmp = tempfile.mkdtemp()


def run(*args):
    subprocess.run([exe, *args], check=True, stdout=subprocess.DEVNULL)


def compare(model_args, measured, hw):
    pred = os.path.join(tmp, "p.json")
    cmp = os.path.join(tmp, "c.json")
    run("analyze", *model_args, "--hw", hw, "-q", "-o", pred)
    run("compare", "-q", pred, os.path.join(mdir, measured), "-o", cmp)
    return json.load(open(cmp))


cases = [
    ("kernel suite (39 kernels, bf16)", ["tests/data/suite/kernel-suite.json"], "suite.json"),
    ("kernel suite, flash attention", ["tests/data/suite/kernel-suite.json"], "suite-flash.json"),
    ("GPT-2 small training step, batch 8 x 1024, bf16, AdamW", ["gpt2-small", "--mode", "training", "--batch", "8", "--seq", "1024"], "gpt2-small-train.json"),
]
specs = [("datasheet (h100-sxm)", "h100-sxm"), ("calibrated", os.path.join(mdir, "h100-calibrated.json"))]
print("| measurement | spec | kernels | median error | p90 error | MAPE | kernel sum: predicted / measured | step: predicted / measured (error) |")
print("|---|---|---|---|---|---|---|---|")
results = {}
for title, model, meas in cases:
    if not os.path.exists(os.path.join(mdir, meas)):
        continue
    for sname, hw in specs:
        c = compare(model, meas, hw)
        results[(meas, sname)] = c
        s = c["summary"]
        print(f"| {title} | {sname} | {s['kernels']} | {s['median_abs_error_pct']:.1f}% | {s['p90_abs_error_pct']:.1f}% | "
              f"{s['mape_pct']:.1f}% | {s['predicted_kernel_sum_s']*1e3:.2f} / {s['measured_kernel_sum_s']*1e3:.2f} ms | "
              f"{s['predicted_step_s']*1e3:.2f} / {s['measured_step_s']*1e3:.2f} ms ({s['step_error_pct']:+.1f}%) |")

print()
print("Per kernel, kernel suite, calibrated spec:")
print()
print("| kernel | op | predicted | measured | error | bound (model) | wrong term |")
print("|---|---|---|---|---|---|---|")
for r in results[("suite.json", "calibrated")]["kernels"]:
    print(f"| {r['name']} | {r['op']} | {r['predicted_s']*1e6:.1f} us | {r['measured_s']*1e6:.1f} us | {r['time_error_pct']:+.1f}% | "
          f"{r['predicted_bound']} | {r['wrong_term']} |")

print()
print("GPT-2 small training step by op kind, calibrated spec:")
print()
print("| op | kernels | predicted | measured | median error |")
print("|---|---|---|---|---|")
agg = {}
for r in results[("gpt2-small-train.json", "calibrated")]["kernels"]:
    a = agg.setdefault(r["op"], [0, 0.0, 0.0, []])
    a[0] += 1
    a[1] += r["predicted_s"]
    a[2] += r["measured_s"]
    a[3].append(r["time_error_pct"])
for op, (n, p, m, e) in sorted(agg.items(), key=lambda kv: -kv[1][2]):
    e.sort()
    print(f"| {op} | {n} | {p*1e3:.2f} ms | {m*1e3:.2f} ms | {e[len(e)//2]:+.1f}% |")

# Fusion pairs measured both ways.
print()
print("Fused vs unfused, measured and predicted (calibrated spec):")
print()
print("| pair | unfused measured | fused measured | measured speedup | unfused predicted | fused predicted | predicted speedup |")
print("|---|---|---|---|---|---|---|")
rows = {r["name"]: r for r in results[("suite.json", "calibrated")]["kernels"]}
um = rows["linear_unfused_matmul"]["measured_s"] + rows["linear_unfused_add"]["measured_s"]
up = rows["linear_unfused_matmul"]["predicted_s"] + rows["linear_unfused_add"]["predicted_s"]
fm, fp = rows["linear_bias_fused"]["measured_s"], rows["linear_bias_fused"]["predicted_s"]
print(f"| linear: matmul + bias add vs bias in the GEMM epilogue | {um*1e6:.1f} us | {fm*1e6:.1f} us | {um/fm:.2f}x | {up*1e6:.1f} us | {fp*1e6:.1f} us | {up/fp:.2f}x |")
if ("suite-flash.json", "calibrated") in results:
    flash = {r["name"]: r for r in results[("suite-flash.json", "calibrated")]["kernels"]}
    for name in [n for n in rows if rows[n]["op"] == "attention"]:
        m1, m2 = rows[name]["measured_s"], flash[name]["measured_s"]
        print(f"| attention {name}: materialised (3 kernels) vs flash (1 kernel) | {m1*1e6:.1f} us | {m2*1e6:.1f} us | {m1/m2:.2f}x | "
              f"{rows[name]['predicted_s']*1e6:.1f} us | - | - (planning issue) |")
