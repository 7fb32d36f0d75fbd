#!/usr/bin/env python3
"""Markdown tables for docs/ACCURACY.md from `roofline validate -o` documents (roofline-validation/1).

Usage: validation_table.py TITLE=FILE.json [TITLE=FILE.json ...]
Each document becomes one section: per GPU and family (n, median |error|, p90 |error|, bias), the
end-to-end rows, and the verdicts. The numbers are the documents' own; nothing is recomputed.
"""
import json
import sys


def pct(x):
    return "" if x is None else f"{x:+.1f}%" if x < 0 or x > 0 else "0.0%"


def apct(x):
    return "" if x is None else f"{x:.1f}%"


def section(title, doc):
    out = [f"### {title}", ""]
    s = doc["settings"]
    out.append(f"Leave-one-out: `{s['leave_one_out']}`; runtime `{s['runtime']}`, dtype `{s['dtype']}`; "
               f"{doc['summary']['predicted']} of {doc['summary']['cases']} cases predicted, {doc['summary']['errors']} errors.")
    out.append("")
    out.append("| GPU | set | family | n | median \\|error\\| | p90 \\|error\\| | bias |")
    out.append("|---|---|---|---|---|---|---|")
    for r in doc["by_family"]:
        out.append(f"| {r['gpu']} | {r['set']} | {r['family']} | {r['n']} | {apct(r['median_abs_error_pct'])} | "
                   f"{apct(r['p90_abs_error_pct'])} | {pct(r['bias_pct'])} |")
    if doc.get("end_to_end"):
        out.append("")
        out.append("| GPU | set | end-to-end steps | median \\|error\\| | p90 \\|error\\| | bias |")
        out.append("|---|---|---|---|---|---|")
        for r in doc["end_to_end"]:
            out.append(f"| {r['gpu']} | {r['set']} | {r['n']} | {apct(r['median_abs_error_pct'])} | {apct(r['p90_abs_error_pct'])} | {pct(r['bias_pct'])} |")
    out.append("")
    for v in doc["verdicts"]:
        worst = ""
        if v["failing"]:
            w = max(v["failing"], key=lambda f: abs(f["value_pct"]))
            worst = f" (worst: {w['gpu']} {w.get('family', 'e2e')} {w['value_pct']:+.1f}%)"
        out.append(f"- **{v['status'].upper()}** {v['threshold']}: {len(v['failing'])} of {v['groups']} groups miss{worst}")
    out.append("")
    return "\n".join(out)


def main():
    for arg in sys.argv[1:]:
        title, path = arg.split("=", 1)
        with open(path) as f:
            print(section(title, json.load(f)))


if __name__ == "__main__":
    main()
