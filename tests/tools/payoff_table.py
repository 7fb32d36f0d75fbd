#!/usr/bin/env python3
"""The "fusion and recompute: predicted vs measured" table of docs/ACCURACY.md (issue #23), from
tests/data/payoff/predicted.json (committed before measuring) and the measurements.
Usage: python3 tests/tools/payoff_table.py MEASURED_DIR   (e.g. tests/data/measured/h100-sxm-2026-11-24/payoff)"""
import json
import os
import sys

mdir = sys.argv[1]
pred = json.load(open("tests/data/payoff/predicted.json"))
cases = [l.split("|")[0] for l in open("tests/data/payoff/cases.txt") if l.strip()]
meas = {}
for c in cases:
    d = json.load(open(os.path.join(mdir, f"payoff-{c}.json")))
    meas[c] = {"step": d["step"]["median_s"], "mem": d["memory"]["arena_bytes"] + d["memory"]["scratch_peak_bytes"],
               "live": d["memory"]["live_peak_bytes"]}


def err(p, m):
    return 100.0 * (p - m) / m


p = print
for group, base_suffix in (("gpt2-small-train", "none"), ("gpt2-medium-train", "none")):
    p(f"\n**{group}** (recompute strategies; payoff relative to `none`)\n")
    p("| strategy | step predicted (cal.) | step measured | slowdown predicted | slowdown measured | error | peak predicted | arena measured (reuse + scratch) | saving predicted | saving measured | error |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    base = f"{group}-{base_suffix}"
    pb, mb = pred[base + ".calibrated"], meas[base]
    for c in [x for x in cases if x.startswith(group)]:
        pc, mc = pred[c + ".calibrated"], meas[c]
        sp, sm = pc["step_time_s"] / pb["step_time_s"], mc["step"] / mb["step"]
        mp, mm = 1 - pc["peak_bytes"] / pb["peak_bytes"], 1 - mc["mem"] / mb["mem"]
        p(f"| {c[len(group) + 1:]} | {pc['step_time_s'] * 1e3:.1f} ms | {mc['step'] * 1e3:.1f} ms | {sp:.3f}x | {sm:.3f}x | {err(sp, sm):+.1f}% | "
          f"{pc['peak_bytes'] / 1e9:.2f} GB | {mc['mem'] / 1e9:.2f} GB | {100 * mp:.0f}% | {100 * mm:.0f}% | {100 * (mp - mm):+.0f} pts |")
    rank_p = sorted([x for x in cases if x.startswith(group)], key=lambda x: pred[x + ".calibrated"]["step_time_s"])
    rank_m = sorted([x for x in cases if x.startswith(group)], key=lambda x: meas[x]["step"])
    mem_p = sorted([x for x in cases if x.startswith(group)], key=lambda x: pred[x + ".calibrated"]["peak_bytes"])
    mem_m = sorted([x for x in cases if x.startswith(group)], key=lambda x: meas[x]["mem"])
    short = lambda xs: ", ".join(x[len(group) + 1:] for x in xs)
    p(f"\nRanking by step time — predicted: {short(rank_p)}; measured: {short(rank_m)} ({'same' if rank_p == rank_m else 'differs'}).")
    p(f"Ranking by memory — predicted: {short(mem_p)}; measured: {short(mem_m)} ({'same' if mem_p == mem_m else 'differs'}).")

p("\n**Flash attention forward** (inference; the project's flash kernel vs materialised QKᵀ, softmax, ×V)\n")
p("| case | step materialised: predicted / measured | step flash: predicted / measured | speed-up predicted | speed-up measured | error |")
p("|---|---|---|---|---|---|")
for c in [x for x in cases if x.endswith("-flash")]:
    m = c[: -len("-flash")] + "-materialised"
    pf, pm = pred[c + ".calibrated"]["step_time_s"], pred[m + ".calibrated"]["step_time_s"]
    mf, mm = meas[c]["step"], meas[m]["step"]
    sp, sm = pm / pf, mm / mf
    p(f"| {c[: -len('-flash')]} | {pm * 1e3:.2f} / {mm * 1e3:.2f} ms | {pf * 1e3:.2f} / {mf * 1e3:.2f} ms | {sp:.2f}x | {sm:.2f}x | {err(sp, sm):+.0f}% |")
