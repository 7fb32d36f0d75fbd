#!/usr/bin/env python3
"""PyTorch eager op latencies and Hugging Face end-to-end steps on the local GPU, in the layout of
the public NeuSight measurements (tests/data/public/neusight/README.md): fp32 with TF32 off, CUDA
events, one row per shape. Run on a lent GPU machine (PyTorch and transformers there); the output
is a measurement set for `roofline validate`, never fitted on (docs/ACCURACY.md says which set is
which).

Protocol (chosen to match the study's as it describes it): per op call, 3 warm-up calls, then 20
timed calls each between two CUDA events; Latency_ms is their median. Shapes are drawn log-uniform
over the ranges of the public files with seed 24, and capped at 2e12 FLOPs (about 40 ms) a call.
End to end: forward under no_grad (inf) or forward + backward without an optimizer step (train,
dropout active), eager attention; mean of the 5 fastest of 12 runs.

Usage: python3 torch_ops_bench.py OUTDIR [--per-op N] [--seconds-per-op S] [--configs DIR]
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
from torch_timing import fp32_eager, kernels_of, log_uniform, time_call, time_steps  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--per-op", type=int, default=150)
ap.add_argument("--seconds-per-op", type=float, default=25.0)
ap.add_argument("--configs", default="")
ap.add_argument("--e2e-seconds", type=float, default=240.0)
ap.add_argument("--skip-ops", action="store_true")
ap.add_argument("--e2e-start", type=int, default=0, help="first row of the end-to-end grid to run")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
dev, DEVICE = fp32_eager()
rng = random.Random(24)


def logu(lo, hi):
    return log_uniform(rng, lo, hi)


def shapes(op):
    """A shape for op, log-uniform over the public files' ranges."""
    if op == "linear":
        return {"B": 1, "M": logu(3, 8192), "N": logu(2, 65536), "K": logu(1, 65536)}
    if op == "bmm":
        return {"B": logu(1, 1025), "M": logu(7, 1024), "N": logu(2, 1025), "K": logu(1, 1025)}
    if op == "conv":
        return {"B": logu(1, 64), "Input_Channel": logu(3, 2048), "Output_Channel": logu(3, 2048),
                "Kernel_Szie": 3, "Input_Size": logu(5, 252), "Stride": 1, "Padding": 1}
    if op == "ln":
        return {"B": logu(4, 16384), "H": logu(260, 4100)}
    return {"B": logu(1, 16384), "H": logu(1, 4096)}


def flops(op, s):
    if op == "linear":
        return 2 * s["M"] * s["N"] * s["K"]
    if op == "bmm":
        return 2 * s["B"] * s["M"] * s["N"] * s["K"]
    if op == "conv":
        return 2 * s["B"] * s["Input_Channel"] * s["Output_Channel"] * 9 * s["Input_Size"] ** 2
    return 10 * s["B"] * s["H"]


def make(op, s):
    """The call to time, on fresh random inputs."""
    # The public layout (tests/data/public/neusight/README.md): N is the reduced dimension, K the
    # output's columns.
    if op == "linear":
        x = torch.randn(s["B"] * s["M"], s["N"], device=dev)
        lin = torch.nn.Linear(s["N"], s["K"], device=dev)
        return lambda: lin(x)
    if op == "bmm":
        x = torch.randn(s["B"], s["M"], s["N"], device=dev)
        y = torch.randn(s["B"], s["N"], s["K"], device=dev)
        return lambda: torch.bmm(x, y)
    if op == "conv":
        x = torch.randn(s["B"], s["Input_Channel"], s["Input_Size"], s["Input_Size"], device=dev)
        conv = torch.nn.Conv2d(s["Input_Channel"], s["Output_Channel"], 3, 1, 1, device=dev)
        return lambda: conv(x)
    x = torch.randn(s["B"], s["H"], device=dev)
    if op == "softmax":
        return lambda: torch.softmax(x, -1)
    if op == "ln":
        ln = torch.nn.LayerNorm(s["H"], device=dev)
        return lambda: ln(x)
    y = torch.randn(s["B"], s["H"], device=dev)
    return {"add": lambda: x + y, "mul": lambda: x * y, "div": lambda: x / y, "pow": lambda: torch.pow(x, 2.0),
            "gelu": lambda: F.gelu(x), "relu": lambda: F.relu(x), "tanh": lambda: torch.tanh(x)}[op]


OPS = ["linear", "bmm", "conv", "softmax", "ln", "add", "mul", "div", "pow", "gelu", "relu", "tanh"]
if not a.skip_ops:
    for op in OPS:
        t0 = time.time()
        rows = []
        while len(rows) < a.per_op and time.time() - t0 < a.seconds_per_op:
            s = shapes(op)
            if flops(op, s) > 2e12:
                continue
            if op == "conv" and s["B"] * s["Input_Channel"] * s["Input_Size"] ** 2 * 4 > 4e9:
                continue
            try:
                fn = make(op, s)
                ms = time_call(fn)
                names = kernels_of(fn)
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
                continue
            rows.append({"OPName": op, "Latency_ms": ms, "Device": DEVICE, "Kernels": ";".join(names), **s})
            del fn
        torch.cuda.empty_cache()
        with open(os.path.join(a.out, op + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        print(f"{op}: {len(rows)} shapes in {time.time() - t0:.1f} s", flush=True)

# --- end to end: the study's six Hugging Face configs ---
if a.configs:
    import transformers
    grid = [("bert_large", "inf", 512, 8), ("bert_large", "train", 512, 8), ("gpt2_large", "inf", 1024, 4),
            ("gpt2_large", "train", 1024, 1), ("gpt3_xl", "inf", 2048, 2), ("gpt3_xl", "train", 2048, 1),
            ("opt_13", "inf", 2048, 2), ("opt_13", "train", 2048, 1), ("gpt3_27", "inf", 2048, 2),
            ("gpt3_27", "train", 1024, 1), ("switchxl4", "inf", 512, 1), ("switchxl4", "train", 512, 1),
            ("bert_large", "inf", 512, 16), ("gpt2_large", "inf", 1024, 8), ("opt_13", "inf", 2048, 8)]
    rows = []
    t0 = time.time()
    for name, mode, seq, batch in grid[a.e2e_start:]:
        if time.time() - t0 > a.e2e_seconds:
            print(f"e2e: out of time before {name} {mode}", flush=True)
            break
        cfg = transformers.AutoConfig.from_pretrained(os.path.join(a.configs, name + ".json"))
        cfg._attn_implementation = "eager"
        arch = cfg.architectures[0]
        cls = getattr(transformers, arch, None) or transformers.AutoModel
        try:
            with torch.device(dev):  # initialise on the GPU: seconds instead of a minute for 2.7B parameters
                model = cls(cfg)
        except Exception as e:  # a transformers version without this class
            print(f"e2e {name}: {e}", flush=True)
            continue
        model.train(mode == "train")
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)
        kw = {"input_ids": ids}
        if getattr(cfg, "is_encoder_decoder", False):
            kw["decoder_input_ids"] = ids

        def step():
            if mode == "inf":
                with torch.no_grad():
                    model(**kw)
            else:
                out = model(**kw)
                logits = out.logits if hasattr(out, "logits") else out[0]
                logits.float().mean().backward()
        try:
            ms, runs = time_steps(step, model)
            rows.append({"device": DEVICE, "model": name, "mode": mode, "seq": seq, "batch": batch,
                         "e2e_ms": ms, "runs": runs})
            print(f"e2e {name} {mode} s{seq} b{batch}: {rows[-1]['e2e_ms']:.1f} ms", flush=True)
        except torch.OutOfMemoryError:
            print(f"e2e {name} {mode}: out of memory", flush=True)
        del model
        torch.cuda.empty_cache()
    with open(os.path.join(a.out, f"end_to_end{'' if a.e2e_start == 0 else '-from-' + str(a.e2e_start)}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["device", "model", "mode", "seq", "batch", "e2e_ms", "runs"])
        w.writeheader()
        w.writerows(rows)
json.dump({"device": DEVICE, "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": time.strftime("%Y-%m-%d"), "tf32": False, "driver": os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().strip()},
          open(os.path.join(a.out, "meta.json"), "w"), indent=1)
