#!/usr/bin/env python3
"""A large roofline-model/1 file of mixed ops for the loading and analysis figures of issue #20
(docs/PERFORMANCE.md): N nodes in blocks of linear, layernorm, softmax, a reduction, a transpose
and elementwise ops, each block reading the previous block's output and its own parameters.
Deterministic (same N, same bytes). Usage:
    python3 bench/make_mixed_model.py 200000 > big.json
    roofline analyze big.json -q"""
import json
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
D = 64
nodes, params = [], []
prev = "x"
block = 0
while len(nodes) < N:
    b = f"b{block}"
    params += [{"name": f"{b}.w", "shape": [D, D]}, {"name": f"{b}.bias", "shape": [D]},
               {"name": f"{b}.g", "shape": [D]}, {"name": f"{b}.beta", "shape": [D]}]
    nodes += [
        {"name": f"{b}.fc", "op": "linear", "inputs": [prev, f"{b}.w", f"{b}.bias"]},
        {"name": f"{b}.ln", "op": "layernorm", "inputs": [f"{b}.fc", f"{b}.g", f"{b}.beta"]},
        {"name": f"{b}.act", "op": "gelu", "inputs": [f"{b}.ln"]},
        {"name": f"{b}.sm", "op": "softmax", "inputs": [f"{b}.act"], "attrs": {"axis": -1}},
        {"name": f"{b}.t", "op": "transpose", "inputs": [f"{b}.sm"], "attrs": {"dim0": 0, "dim1": 1}},
        {"name": f"{b}.tt", "op": "transpose", "inputs": [f"{b}.t"], "attrs": {"dim0": 0, "dim1": 1}},
        {"name": f"{b}.mean", "op": "reduce_mean", "inputs": [f"{b}.tt"], "attrs": {"axes": [-1], "keepdim": True}},
        {"name": f"{b}.sub", "op": "sub", "inputs": [f"{b}.tt", f"{b}.mean"]},
        {"name": f"{b}.mul", "op": "mul", "inputs": [f"{b}.sub", f"{b}.act"]},
        {"name": f"{b}.out", "op": "add", "inputs": [f"{b}.mul", prev]},
    ]
    prev = f"{b}.out"
    block += 1
nodes = nodes[:N]
doc = {"format": "roofline-model/1", "name": f"mixed-{N}", "dims": {"batch": 256},
       "inputs": [{"name": "x", "shape": ["batch", D]}], "parameters": params, "nodes": nodes,
       "outputs": [nodes[-1]["name"]]}
json.dump(doc, sys.stdout, separators=(",", ":"))
sys.stdout.write("\n")
