#!/usr/bin/env python3
"""Shorten the kernel columns of a torch_conv_sweep.py CSV in place: template arguments, parameter
lists and `void ` dropped from every kernel name (`cudnn::detail::dgrad_engine<float, 512, ...>(int,
...)` -> `cudnn::detail::dgrad_engine`), and a run of N identical consecutive kernels written once
as `name*N` in `Kernels` and `name*N=total_us` in `Kernel_us` (an empty total when any of the run's
durations is empty). FFT and grouped convolutions launch hundreds of kernels a call; the raw names
make the files tens of MB.

Usage: python3 tests/tools/strip_kernel_names.py FILE.csv [FILE.csv ...]
"""
import csv
import os
import sys

csv.field_size_limit(1 << 30)


def short(name):
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip()
    return s[5:] if s.startswith("void ") else s


def split_kernel(item):
    """'name=us' -> (name, us or None); a bare name -> (name, None)."""
    name, sep, us = item.rpartition("=") if "=" in item else (item, "", "")
    if not sep:
        return item, None
    try:
        return name, float(us) if us else None
    except ValueError:  # '=' inside the name, no duration
        return item, None


def runs(items):
    """[(name, us)] -> [(name, count, total us or None)], consecutive identical names merged."""
    out = []
    for name, us in items:
        if out and out[-1][0] == name:
            n, c, t = out[-1]
            out[-1] = (n, c + 1, None if t is None or us is None else t + us)
        else:
            out.append((name, 1, us))
    return out


def label(name, count):
    return name if count == 1 else f"{name}*{count}"


def rewrite(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = list(reader)
    for r in rows:
        if r.get("Kernels"):
            names = [short(k) for k in r["Kernels"].split(";") if k]
            r["Kernels"] = ";".join(label(n, c) for n, c, _ in runs((n, 0.0) for n in names))
        if r.get("Kernel_us"):
            items = [split_kernel(k) for k in r["Kernel_us"].split(";") if k]
            r["Kernel_us"] = ";".join(f"{label(n, c)}={'' if t is None else f'{t:.3f}'}"
                                      for n, c, t in runs((short(n), us) for n, us in items))
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for p in sys.argv[1:]:
        rewrite(p)
        print(f"{p}: {os.path.getsize(p)} bytes")
