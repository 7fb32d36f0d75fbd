#!/usr/bin/env python3
"""Measure the host side of PyTorch eager on this machine and write a roofline-host/1 file for
`roofline analyze|plan --runtime eager --host FILE` and `roofline validate --host [DEVICE=]FILE`.

The host is a property of the machine and the framework build, not of the GPU: the same PyTorch
dispatches a trivial op in 19 us on one VM and 32 us on another (docs/ACCURACY.md). Three figures,
each the median of several repeats (run on an otherwise idle machine, GPU idle):

  add_call_s   host time of one out-of-place `x + y` on 1x1 CUDA tensors, back to back: N calls
               between two synchronisations, wall time / N. The GPU finishes each 1-element kernel
               in a few microseconds, faster than the host issues them, so the loop is host-bound.
  conv_call_s  the same for nn.Conv2d(4, 4, 3, padding=1) on a 1x4x8x8 input, with autograd
               recording as in a training step (cuDNN's host work included).
  timed_add_s  one `x + y` between two CUDA events, the median of many: what a per-op benchmark
               that times single calls with events measures for a trivial op.
  backward_call_s  one torch.autograd.grad of y = x * 2 on 1x1 CUDA tensors (retain_graph), back
               to back: the autograd engine's start and hand-off plus one gradient op's dispatch.
  conv_backward_call_s  one torch.autograd.grad of the small convolution above with respect to
               its input and weight, back to back: the backward call's start, cuDNN's data- and
               weight-gradient calls (their dispatch and cuDNN's host work) and the bias gradient.

Usage: python3 measure/host_probe.py OUT.json [--name NAME] [--calls N] [--repeats R]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import time

import torch
from torch_timing import time_call

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("out")
ap.add_argument("--name", default="", help="the host's name in reports (default: <gpu>-<date>)")
ap.add_argument("--calls", type=int, default=2000, help="calls per back-to-back loop")
ap.add_argument("--repeats", type=int, default=7, help="loops per figure; the median is kept")
a = ap.parse_args()
if not torch.cuda.is_available():
    raise SystemExit("host_probe: no CUDA device: the probe times PyTorch's dispatch to a GPU")
dev = torch.device("cuda")
torch.backends.cudnn.benchmark = False


def back_to_back(fn, calls):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls


x = torch.randn(1, 1, device=dev)
y = torch.randn(1, 1, device=dev)
add = lambda: x + y  # noqa: E731
xc = torch.randn(1, 4, 8, 8, device=dev)
conv = torch.nn.Conv2d(4, 4, 3, padding=1, device=dev)
conv_call = lambda: conv(xc)  # noqa: E731

xg = torch.randn(1, 1, device=dev, requires_grad=True)
yg = xg * 2
gg = torch.ones_like(yg)
backward_call = lambda: torch.autograd.grad(yg, xg, gg, retain_graph=True)  # noqa: E731
xcg = torch.randn(1, 4, 8, 8, device=dev, requires_grad=True)
ycg = conv(xcg)
gcg = torch.ones_like(ycg)
conv_backward_call = lambda: torch.autograd.grad(ycg, (xcg, conv.weight, conv.bias), gcg, retain_graph=True)  # noqa: E731

add_s = statistics.median(back_to_back(add, a.calls) for _ in range(a.repeats))
conv_s = statistics.median(back_to_back(conv_call, a.calls // 4) for _ in range(a.repeats))
backward_s = statistics.median(back_to_back(backward_call, a.calls // 4) for _ in range(a.repeats))
conv_backward_s = statistics.median(back_to_back(conv_backward_call, a.calls // 4) for _ in range(a.repeats))
timed_s = statistics.median(time_call(add, reps=400, warm=20) for _ in range(a.repeats)) * 1e-3

gpu = torch.cuda.get_device_name(0)
today = datetime.date.today().isoformat()
cpu = platform.processor() or platform.machine()
try:
    with open("/proc/cpuinfo") as f:
        cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
except (OSError, StopIteration):
    pass
doc = {
    "format": "roofline-host/1",
    "name": a.name or f"{gpu.replace('NVIDIA ', '').replace(' ', '-').lower()}-{today}",
    "description": f"PyTorch {torch.__version__} eager on {cpu} ({os.cpu_count()} logical CPUs) driving an {gpu}",
    "measured": {"date": today, "tool": "measure/host_probe.py", "torch": torch.__version__,
                 "cudnn": str(torch.backends.cudnn.version()), "cuda": str(torch.version.cuda), "gpu": gpu, "cpu": cpu,
                 "python": platform.python_version(), "calls": a.calls, "repeats": a.repeats},
    "add_call_s": add_s,
    "conv_call_s": max(conv_s, add_s),
    "timed_add_s": max(timed_s, add_s),
    "backward_call_s": max(backward_s, add_s),
    "conv_backward_call_s": max(conv_backward_s, backward_s),
}
tmp = a.out + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, a.out)
print(f"{doc['name']}: x + y {add_s * 1e6:.2f} us a call back to back, conv2d {conv_s * 1e6:.2f} us, "
      f"x + y timed alone {timed_s * 1e6:.2f} us, autograd.grad {backward_s * 1e6:.2f} us, "
      f"conv2d backward {conv_backward_s * 1e6:.2f} us -> {a.out}")
