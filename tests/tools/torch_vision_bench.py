#!/usr/bin/env python3
"""PyTorch eager end-to-end steps of torchvision's classification zoo on the local GPU, in the
layout of the public end-to-end measurements (tests/data/public/neusight/README.md): fp32 with
TF32 off, cuDNN as PyTorch picks it (benchmark mode off), CUDA events. Run on a lent GPU machine;
the output is a measurement set for `roofline validate ... --configs tests/data/onnx/torchvision`
(the models' ONNX files, tests/tools/export_torchvision.py), held out: never fitted on.

Protocol (the one tests/tools/torch_ops_bench.py uses for the Hugging Face steps): each model built
with weights=None on the GPU, batch B at its crop size (299 for inception_v3, else 224); inf is the
forward pass under no_grad in eval mode; train is forward and backward in train mode with the mean
of the logits as the loss and no optimizer step (what `roofline analyze X.onnx --mode training
--optimizer none` models: its stand-in loss is the same mean). One untimed step, then 12 timed
steps each between two CUDA events; e2e_ms is the mean of the 5 fastest.

Usage: python3 torch_vision_bench.py OUTDIR [--models a,b,...] [--seconds S]
"""
import argparse
import csv
import json
import os
import time

import sys

import torch
import torchvision
from torchvision.models import get_model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "measure"))
from torch_timing import fp32_eager, time_steps  # noqa: E402

# tests/tools/export_torchvision.py's MODELS, and its crop sizes
MODELS = [
    "alexnet", "vgg16", "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "densenet121",
    "inception_v3", "googlenet", "mobilenet_v2", "mobilenet_v3_large", "shufflenet_v2_x1_0",
    "squeezenet1_0", "efficientnet_b0", "regnet_y_400mf", "convnext_tiny", "vit_b_16",
    "swin_t", "maxvit_t",
]
GRID = [("inf", 1), ("inf", 32), ("train", 32)]

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("out")
ap.add_argument("--models", default=",".join(MODELS))
ap.add_argument("--seconds", type=float, default=240.0, help="stop starting new rows after this long")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
dev, DEVICE = fp32_eager()

rows = []
t0 = time.time()
for name in a.models.split(","):
    size = 299 if name == "inception_v3" else 224
    for mode, batch in GRID:
        if time.time() - t0 > a.seconds:
            print(f"vision: out of time before {name} {mode} b{batch}", flush=True)
            break
        torch.manual_seed(0)
        kw = {"aux_logits": False, "init_weights": False} if name in ("inception_v3", "googlenet") else {}
        with torch.device(dev):
            model = get_model(name, weights=None, **kw)
        model.train(mode == "train")
        x = torch.randn(batch, 3, size, size, device=dev)

        def step():
            if mode == "inf":
                with torch.no_grad():
                    model(x)
            else:
                model(x).float().mean().backward()
        try:
            ms, runs = time_steps(step, model)
            rows.append({"device": DEVICE, "model": name, "mode": mode, "seq": size, "batch": batch,
                         "e2e_ms": ms, "runs": runs})
            print(f"vision {name} {mode} b{batch}: {rows[-1]['e2e_ms']:.2f} ms", flush=True)
        except torch.OutOfMemoryError:
            print(f"vision {name} {mode} b{batch}: out of memory", flush=True)
        del model
        torch.cuda.empty_cache()
with open(os.path.join(a.out, "end_to_end.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["device", "model", "mode", "seq", "batch", "e2e_ms", "runs"])
    w.writeheader()
    w.writerows(rows)
json.dump({"device": DEVICE, "torch": torch.__version__, "torchvision": torchvision.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "date": time.strftime("%Y-%m-%d"), "tf32": False,
           "driver": os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().strip()},
          open(os.path.join(a.out, "environment.json"), "w"), indent=1)
