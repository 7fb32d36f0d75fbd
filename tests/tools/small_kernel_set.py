#!/usr/bin/env python3
"""Writes the small-kernel fit set (tests/data/small/): the kernels a small training step is made
of, on a grid chosen before any of them ran, plus three launch chains that time the executor's
host side. Fit data: the small-kernel terms of the GPU model may be fitted on what these measure;
the held-out steps (docs/ACCURACY.md) are not in it.

- small-train.json: a training step of independent branches, one per (rows, width) of the grid
  rows in {128, 512, 2048} x width in {256, 1024, 2048}: linear (no bias) -> layernorm -> tanh-GELU
  -> linear with bias -> cross-entropy over the width, so every branch launches GEMMs (forward, dX,
  dW), layernorm forward and backward, elementwise forward and backward, the cross-entropy row
  kernel and its gradient, and AdamW updates of its parameters; plus attention-shaped batched GEMMs
  (heads x seq x 64, heads in {16, 64}, seq in {64, 256, 512}) through a softmax. The losses add up.
- elementwise-sweep.json: streaming kernels from 1 Ki to 16 Mi elements, cold and warm inputs.
- chain-<op>.json: 256 dependent launches of one tiny op (add, matmul 64^3, layernorm 64 x 256):
  the step over the kernel count is the executor's issue interval per launch when kernels are tiny.

Usage: python3 tests/tools/small_kernel_set.py tests/data/small
"""
import json
import os
import sys


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def small_train():
    inputs, params, nodes = [], [], []
    losses = []
    for rows in (128, 512, 2048):
        for width in (256, 1024, 2048):
            p = f"r{rows}w{width}"
            inputs.append({"name": f"{p}_x", "shape": [rows, width]})
            inputs.append({"name": f"{p}_labels", "shape": [rows], "dtype": "int64"})
            params += [{"name": f"{p}_w0", "shape": [width, width]},
                       {"name": f"{p}_g", "shape": [width]}, {"name": f"{p}_b", "shape": [width]},
                       {"name": f"{p}_w1", "shape": [width, width]}, {"name": f"{p}_b1", "shape": [width]}]
            nodes += [
                {"name": f"{p}_fc0", "op": "linear", "inputs": [f"{p}_x", f"{p}_w0"]},
                {"name": f"{p}_ln", "op": "layernorm", "inputs": [f"{p}_fc0", f"{p}_g", f"{p}_b"]},
                {"name": f"{p}_act", "op": "gelu", "inputs": [f"{p}_ln"], "attrs": {"approximate": "tanh"}},
                {"name": f"{p}_fc1", "op": "linear", "inputs": [f"{p}_act", f"{p}_w1", f"{p}_b1"]},
                {"name": f"{p}_loss", "op": "cross_entropy", "inputs": [f"{p}_fc1", f"{p}_labels"]},
            ]
            losses.append(f"{p}_loss")
    for heads in (16, 64):
        for seq in (64, 256, 512):
            p = f"h{heads}s{seq}"
            inputs.append({"name": f"{p}_q", "shape": [heads, seq, 64]})
            params += [{"name": f"{p}_k", "shape": [heads, 64, seq]}, {"name": f"{p}_v", "shape": [heads, seq, 64]}]
            nodes += [
                {"name": f"{p}_scores", "op": "matmul", "inputs": [f"{p}_q", f"{p}_k"]},
                {"name": f"{p}_probs", "op": "softmax", "inputs": [f"{p}_scores"]},
                {"name": f"{p}_out", "op": "matmul", "inputs": [f"{p}_probs", f"{p}_v"]},
                {"name": f"{p}_mean", "op": "reduce_mean", "inputs": [f"{p}_out"], "attrs": {"axes": [0, 1, 2]}},
                {"name": f"{p}_loss", "op": "cast", "inputs": [f"{p}_mean"], "attrs": {"dtype": "f32"}},
            ]
            losses.append(f"{p}_loss")
    total = losses[0]
    for i, l in enumerate(losses[1:]):
        nodes.append({"name": f"loss_sum{i}", "op": "add", "inputs": [total, l]})
        total = f"loss_sum{i}"
    return {"format": "roofline-model/1", "name": "small-train",
            "dtype_policy": {"compute": "bf16", "parameters": "bf16"},
            "inputs": inputs, "parameters": params, "nodes": nodes, "outputs": [total]}


def chain(op, count=256):
    if op == "add":
        inputs = [{"name": "x", "shape": [1024]}, {"name": "c", "shape": [1024]}]
        params, nodes, prev = [], [], "x"
        for i in range(count):
            nodes.append({"name": f"add{i}", "op": "add", "inputs": [prev, "c"]})
            prev = f"add{i}"
    elif op == "matmul":
        inputs = [{"name": "x", "shape": [64, 64]}, {"name": "w", "shape": [64, 64]}]
        params, nodes, prev = [], [], "x"
        for i in range(count):
            nodes.append({"name": f"mm{i}", "op": "matmul", "inputs": [prev, "w"]})
            prev = f"mm{i}"
    else:
        inputs = [{"name": "x", "shape": [64, 256]}, {"name": "g", "shape": [256]}, {"name": "b", "shape": [256]}]
        params, nodes, prev = [], [], "x"
        for i in range(count):
            nodes.append({"name": f"ln{i}", "op": "layernorm", "inputs": [prev, "g", "b"]})
            prev = f"ln{i}"
    return {"format": "roofline-model/1", "name": f"chain-{op}",
            "dtype_policy": {"compute": "bf16", "parameters": "bf16"},
            "inputs": inputs, "parameters": params, "nodes": nodes, "outputs": [prev]}


def elementwise_sweep():
    """Streaming kernels over sizes 1 Ki to 16 Mi elements (x4 steps): a unary (tanh-GELU), a binary
    (add), a cast to f32 and a scale, each on an input of its own (cold: written before the step,
    read by nothing else), and a GELU of the add's output (warm: its producer ran just before)."""
    inputs, nodes = [], []
    n = 1024
    while n <= 16 * 1024 * 1024:
        p = f"n{n}"
        inputs += [{"name": f"{p}_a", "shape": [n]}, {"name": f"{p}_b", "shape": [n]}, {"name": f"{p}_c", "shape": [n]},
                   {"name": f"{p}_d", "shape": [n]}]
        nodes += [
            {"name": f"{p}_gelu", "op": "gelu", "inputs": [f"{p}_a"], "attrs": {"approximate": "tanh"}},
            {"name": f"{p}_add", "op": "add", "inputs": [f"{p}_b", f"{p}_c"]},
            {"name": f"{p}_gelu_warm", "op": "gelu", "inputs": [f"{p}_add"], "attrs": {"approximate": "tanh"}},
            {"name": f"{p}_cast", "op": "cast", "inputs": [f"{p}_d"], "attrs": {"dtype": "f32"}},
            {"name": f"{p}_scale", "op": "scale", "inputs": [f"{p}_a"], "attrs": {"factor": 0.5}},
        ]
        n *= 4
    outs = [x["name"] for x in nodes if x["name"].endswith(("_gelu", "_gelu_warm", "_cast", "_scale"))]
    return {"format": "roofline-model/1", "name": "elementwise-sweep",
            "dtype_policy": {"compute": "bf16", "parameters": "bf16"},
            "inputs": inputs, "parameters": [], "nodes": nodes, "outputs": outs}


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/small"
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "small-train.json"), small_train())
    for op in ("add", "matmul", "layernorm"):
        write(os.path.join(out, f"chain-{op}.json"), chain(op))
    write(os.path.join(out, "elementwise-sweep.json"), elementwise_sweep())
