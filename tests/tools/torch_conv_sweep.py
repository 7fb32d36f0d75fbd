#!/usr/bin/env python3
"""fp32 convolutions and SGEMMs in PyTorch eager on the local GPU, one row per shape, with the
kernels cuDNN and cuBLAS chose: the data for the Hopper fp32 convolution mechanism (issue #15,
docs/ACCURACY.md). TF32 off, cudnn.benchmark off (PyTorch's defaults for fp32 without TF32, as the
public NeuSight set and tests/tools/torch_vision_bench.py run).

Two sets, kept apart:
  fit         synthetic convolutions drawn with seed 26 (kernel 1/3/5/7, stride 1/2, dense and
              depthwise, batch 1-64, 3-2048 channels, 7-224 pixels), and SGEMMs (M, N, K
              log-uniform 64-8192): what a term may be fitted on;
  validation  every distinct convolution of torchvision's 19 classifiers
              (torchvision_convs.json beside the output, from tests/data/onnx/torchvision) at
              batch 1 and 32: never fitted on.
Each convolution is timed forward and backward (input and weight gradients, cuDNN's dgrad and
wgrad), 3 warm-up calls then 20 calls between CUDA events, the median (measure/torch_timing.py).

Usage: python3 torch_conv_sweep.py OUTDIR [--fit N] [--gemm N] [--convs FILE] [--batches 1,32] [--no-gap]
       [--prefix NAME] [--seed N] [--fit-name NAME] [--per-kernel] [--grouped]
--grouped draws the synthetic fit shapes as grouped convolutions (2-64 groups of 4-128 channels);
--batches "" skips the torchvision rows. tests/tools/strip_kernel_names.py shortens the kernel
columns afterwards.
--per-kernel adds each kernel's own duration (Kernel_us), so that a backward row splits into
cuDNN's data-gradient and weight-gradient engines.
"""
import argparse
import csv
import json
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "measure"))
from torch_timing import fp32_eager, kernel_times, kernels_of, log_uniform, time_call  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--fit", type=int, default=320, help="synthetic convolutions in the fit set")
ap.add_argument("--gemm", type=int, default=120, help="SGEMM shapes in the fit set")
ap.add_argument("--convs", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "public",
                                                "h100-conv-2026-11-26", "torchvision_convs.json"))
ap.add_argument("--seconds", type=float, default=240.0, help="stop adding rows after this long")
ap.add_argument("--batches", default="1,32", help="batch sizes of the torchvision convolutions")
ap.add_argument("--no-gap", action="store_true", help="skip the dependent-kernel gap measurement")
ap.add_argument("--prefix", default="conv_validation", help="file name of the torchvision rows (without .csv)")
ap.add_argument("--seed", type=int, default=26, help="seed of the synthetic fit shapes")
ap.add_argument("--fit-name", default="conv_fit", help="file name of the synthetic rows (without .csv)")
ap.add_argument("--grouped", action="store_true",
                help="draw the synthetic fit shapes as grouped convolutions (2 to 64 groups, neither dense nor depthwise)")
ap.add_argument("--max-batch", type=int, default=64, help="largest batch of the synthetic fit shapes")
ap.add_argument("--per-kernel", action="store_true",
                help="add Kernel_us: each kernel's median traced duration, 'name=us' joined by ';'")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
dev, DEVICE = fp32_eager()
rng = random.Random(a.seed)
T0 = time.time()


def logu(lo, hi):
    return log_uniform(rng, lo, hi)


def conv_flops(s):
    ho = (s["H"] + 2 * s["PadH"] - s["KH"]) // s["Stride"] + 1
    wo = (s["W"] + 2 * s["PadW"] - s["KW"]) // s["Stride"] + 1
    return 2 * s["B"] * s["Cout"] * ho * wo * (s["Cin"] // s["Groups"]) * s["KH"] * s["KW"]


def synthetic():
    while True:
        k = rng.choices([1, 3, 5, 7], weights=[35, 50, 7, 8])[0]
        depthwise = k in (3, 5) and rng.random() < 0.25
        cin = logu(3, 2048)
        cout = cin if depthwise else logu(8, 2048)
        s = {"B": logu(1, 64), "Cin": cin, "Cout": cout, "KH": k, "KW": k, "H": logu(7, 224), "W": 0,
             "Stride": 2 if rng.random() < 0.25 else 1, "PadH": k // 2, "PadW": k // 2, "Groups": cin if depthwise else 1}
        s["W"] = s["H"]
        if 1e6 < conv_flops(s) < 4e11 and s["B"] * max(cin, cout) * s["H"] ** 2 * 4 < 2e9:
            return s


def synthetic_grouped():
    """Grouped convolutions as ResNeXt and RegNet use them: 2-64 groups of 4-128 channels each."""
    while True:
        k = rng.choices([1, 3, 5], weights=[20, 70, 10])[0]
        groups = rng.choice([2, 4, 8, 13, 16, 26, 32, 55, 64])
        per = logu(4, 128)
        cin = groups * per
        cout = cin if rng.random() < 0.7 else groups * logu(4, 128)
        s = {"B": logu(1, a.max_batch), "Cin": cin, "Cout": cout, "KH": k, "KW": k, "H": logu(7, 112), "W": 0,
             "Stride": 2 if rng.random() < 0.25 else 1, "PadH": k // 2, "PadW": k // 2, "Groups": groups}
        s["W"] = s["H"]
        if cin <= 4096 and 1e6 < conv_flops(s) < 2e11 and s["B"] * max(cin, cout) * s["H"] ** 2 * 4 < 2e9:
            return s


def run_conv(s, set_name, rows):
    x = torch.randn(s["B"], s["Cin"], s["H"], s["W"], device=dev, requires_grad=True)
    w = torch.randn(s["Cout"], s["Cin"] // s["Groups"], s["KH"], s["KW"], device=dev, requires_grad=True)
    stride, pad = s["Stride"], (s["PadH"], s["PadW"])

    def fwd():
        return F.conv2d(x, w, None, stride, pad, 1, s["Groups"])

    y = fwd()
    g = torch.randn_like(y)

    def bwd():
        return torch.autograd.grad(y, (x, w), g, retain_graph=True)

    with torch.no_grad():
        ms_f = time_call(fwd)
        names_f = kernels_of(fwd)
    ms_b = time_call(bwd)
    names_b = kernels_of(bwd)
    per = {}
    if a.per_kernel:
        with torch.no_grad():
            per["forward"] = kernel_times(fwd)
        per["backward"] = kernel_times(bwd)
    for direction, ms, names in (("forward", ms_f, names_f), ("backward", ms_b, names_b)):
        extra = {}
        if a.per_kernel:
            extra["Kernel_us"] = ";".join(f"{n}={'' if us is None else f'{us:.3f}'}" for n, us in per[direction])
        rows.append({"OPName": "conv", "Latency_ms": ms, "Device": DEVICE, "B": s["B"], "Input_Channel": s["Cin"],
                     "Output_Channel": s["Cout"], "Kernel_Szie": s["KH"], "Kernel_W": s["KW"], "Input_Size": s["H"],
                     "Input_W": s["W"], "Stride": s["Stride"], "Padding": s["PadH"], "Padding_W": s["PadW"],
                     "Groups": s["Groups"], "Direction": direction, "Set": set_name, "GFLOP": conv_flops(s) / 1e9,
                     "Kernels": ";".join(names), **extra})


def write(name, rows):
    if not rows:
        return
    path = os.path.join(a.out, name)
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    print(f"{name}: {len(rows)} rows, {time.time() - T0:.0f} s", flush=True)


# fit: synthetic convolutions
rows = []
for i in range(a.fit):
    if time.time() - T0 > a.seconds * 0.4:
        break
    try:
        run_conv(synthetic_grouped() if a.grouped else synthetic(), "fit", rows)
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
torch.cuda.empty_cache()
write(a.fit_name + ".csv", rows)

# fit: SGEMMs (nn.Linear, as the public linear rows)
rows = []
for i in range(a.gemm):
    m, n, k = logu(64, 8192), logu(64, 8192), logu(64, 8192)
    x = torch.randn(m, k, device=dev)
    lin = torch.nn.Linear(k, n, device=dev)
    with torch.no_grad():
        ms = time_call(lambda: lin(x))
        names = kernels_of(lambda: lin(x))
    # The public layout: N the reduced dimension (in features), K the output's columns.
    rows.append({"OPName": "linear", "Latency_ms": ms, "Device": DEVICE, "B": 1, "M": m, "N": k, "K": n,
                 "Set": "fit", "Kernels": ";".join(names)})
    del x, lin
write("linear_fit.csv", rows)

# fit: the gap between dependent kernels when the GPU, not the host, is the bottleneck. A
# ~50 ms sleep kernel holds the stream while 300 in-place adds are queued behind it, so every add
# is waiting when its predecessor ends; the tracer's timestamps then give each end-to-start gap.
rows = []
from torch.profiler import ProfilerActivity, profile  # noqa: E402
for n in () if a.no_gap else (1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24):
    x = torch.randn(n, device=dev)
    for trial in range(2):
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            torch.cuda._sleep(100_000_000)
            for _ in range(300):
                x.add_(1.0)
            torch.cuda.synchronize()
        ev = sorted((e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA and "sleep" not in e.name),
                    key=lambda e: e.time_range.start)
        gaps = sorted(b.time_range.start - a.time_range.end for a, b in zip(ev, ev[1:]))
        durs = sorted(e.time_range.end - e.time_range.start for e in ev)
        if trial == 1 and gaps:
            rows.append({"Elements": n, "Kernels": len(ev), "Median_kernel_us": durs[len(durs) // 2],
                         "Median_gap_us": gaps[len(gaps) // 2], "P10_gap_us": gaps[len(gaps) // 10],
                         "P90_gap_us": gaps[9 * len(gaps) // 10], "Device": DEVICE, "Set": "fit"})
    del x
write("gap.csv", rows)

# validation: torchvision's convolutions at batch 1 and 32
rows = []
convs = []
if any(b for b in a.batches.split(",")):
    with open(a.convs) as f:
        convs = json.load(f)
for batch in (int(b) for b in a.batches.split(",") if b):
    for c in convs:
        if time.time() - T0 > a.seconds:
            break
        s = {"B": batch, "Cin": c["cin"], "Cout": c["cout"], "KH": c["kh"], "KW": c["kw"], "H": c["h"], "W": c["w"],
             "Stride": c["stride"][0], "PadH": c["pads"][0], "PadW": c["pads"][1], "Groups": c["groups"]}
        if c["stride"][0] != c["stride"][1] or c["pads"][0] != c["pads"][2] or c["pads"][1] != c["pads"][3] \
                or c["dilation"] != [1, 1] or min(c["h"], c["w"]) < 1:  # an unknown input size
            continue
        try:
            run_conv(s, "validation", rows)
        except (torch.OutOfMemoryError, RuntimeError) as e:
            print(f"skipped {s}: {str(e)[:120]}", flush=True)
            torch.cuda.empty_cache()
write(a.prefix + ".csv", rows)
env = {"device": DEVICE, "torch": torch.__version__, "cuda": torch.version.cuda,
       "cudnn": torch.backends.cudnn.version(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
       "driver": os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().strip()}
with open(os.path.join(a.out, "environment.json"), "w") as f:
    json.dump(env, f, indent=1)
print(json.dumps(env))
