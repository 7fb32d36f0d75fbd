#!/usr/bin/env python3
"""Copies the public NeuSight measurements (the five fitting GPUs) into tests/data/public/neusight/,
keeping only what `roofline validate` reads, so anyone can redo the copy from the same source.

Source: the artifact of *Forecasting GPU Performance for Deep Learning Training and Inference*
(Lee et al., ASPLOS 2025; github sitar-lab/NeuSight, `scripts/asplos/data` and `label`), MIT
licence, as sampled for this project (at most 2,500 rows per op and device, seed 7).

Per-op CSVs: the columns OPName, Latency_ms, Device and the op's shape columns, with the same
column names, the same rows in the same order and every value copied as text (no number is
re-printed). The launch columns (Kernel Name, Kernels, grid, block, warps and blocks per SM) are
dropped. end_to_end.csv is copied as it is; devices/ is not copied (the project's hardware specs
carry their own sourced figures). The study's measurements of other GPUs are never read.

Usage: python3 tests/tools/copy_public.py SOURCE_DIR [DEST_DIR]
       (DEST_DIR defaults to tests/data/public/neusight)
"""
import csv
import os
import shutil
import sys

# The columns validate reads, per op file (README.md of the destination says what they mean).
SHAPES = {
    "linear": ["B", "M", "N", "K"],
    "bmm": ["B", "M", "N", "K"],
    "conv": ["B", "Input_Channel", "Output_Channel", "Kernel_Szie", "Input_Size", "Stride", "Padding"],
}
for op in ["softmax", "ln", "add", "mul", "div", "pow", "gelu", "relu", "tanh"]:
    SHAPES[op] = ["B", "H"]
COMMON = ["OPName", "Latency_ms", "Device"]
# The five fitting GPUs: a row of any other device is not copied (there is none in the source).
FITTING = {"NVIDIA A100-PCIE-40GB", "Tesla V100-PCIE-32GB", "Tesla P100-PCIE-16GB", "Tesla T4", "Tesla P4"}


def copy_op(src, dst, op):
    keep = COMMON + SHAPES[op]
    rows = 0
    with open(src, newline="") as fin, open(dst, "w", newline="") as fout:
        reader = csv.reader(fin)
        header = next(reader)
        missing = [c for c in keep if c not in header]
        if missing:
            sys.exit(f"{src}: missing column(s) {', '.join(missing)}")
        idx = [header.index(c) for c in keep]
        dev = header.index("Device")
        writer = csv.writer(fout, lineterminator="\n")
        writer.writerow(keep)
        for line, row in enumerate(reader, start=2):
            if len(row) != len(header):
                sys.exit(f"{src}:{line}: {len(row)} fields, header has {len(header)}")
            if row[dev].replace("_", " ") not in FITTING:
                sys.exit(f"{src}:{line}: device '{row[dev]}' is not one of the five fitting GPUs")
            writer.writerow([row[i] for i in idx])
            rows += 1
    return rows


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    dst = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(__file__), "..", "data", "public", "neusight")
    os.makedirs(dst, exist_ok=True)
    total = 0
    for op in sorted(SHAPES):
        path = os.path.join(src, op + ".csv")
        if not os.path.exists(path):
            sys.exit(f"{path}: not found")
        n = copy_op(path, os.path.join(dst, op + ".csv"), op)
        total += n
        print(f"{op}.csv: {n} rows")
    shutil.copyfile(os.path.join(src, "end_to_end.csv"), os.path.join(dst, "end_to_end.csv"))
    for name in ("LICENSE",):
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
    cfg_src, cfg_dst = os.path.join(src, "configs"), os.path.join(dst, "configs")
    os.makedirs(cfg_dst, exist_ok=True)
    for name in sorted(os.listdir(cfg_src)):
        if name.endswith(".json"):
            shutil.copyfile(os.path.join(cfg_src, name), os.path.join(cfg_dst, name))
    print(f"{total} op rows, end_to_end.csv, LICENSE and configs/ written to {dst}")


if __name__ == "__main__":
    main()
