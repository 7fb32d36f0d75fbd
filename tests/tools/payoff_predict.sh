#!/usr/bin/env bash
# Predictions of what fusion and recomputation pay (issue #23), made before measuring them: for
# each line of tests/data/payoff/cases.txt (name | model arguments | analyze-only arguments |
# measure-only arguments), `analyze` with the datasheet and the calibrated H100 spec. Writes a
# summary per case (step time, peak memory, FLOPs, kernels) to tests/data/payoff/predicted.json
# and, for gpt2-small, the ranked `plan` of every recompute strategy (plan-gpt2-small.json).
set -euo pipefail
B=${BUILD:-build}
R=./$B/roofline
P=tests/data/payoff
FULL=${FULL:-$B/payoff-predicted}
CAL=tests/data/measured/h100-sxm-2026-11-23/h100-calibrated.json
mkdir -p "$FULL"
while IFS='|' read -r name margs aargs _; do
  [ -z "$name" ] && continue
  for spec in "h100-sxm|datasheet" "$CAL|calibrated"; do
    $R analyze $margs $aargs --hw "${spec%%|*}" -q -o "$FULL/$name.${spec##*|}.json"
  done
done < $P/cases.txt
$R plan gpt2-small --mode training --batch 8 --seq 1024 --hw "$CAL" --top 0 -q -o "$P/plan-gpt2-small.calibrated.json"
python3 - "$FULL" "$P/predicted.json" <<'PY'
import json, os, sys
full, out = sys.argv[1], sys.argv[2]
res = {}
for f in sorted(os.listdir(full)):
    d = json.load(open(os.path.join(full, f)))
    t = d["totals"]
    mem = d.get("memory", {})
    res[f[:-5]] = {"step_time_s": t.get("step_time_s"), "modelled_s": t.get("modelled_s"), "flops": t.get("flops"),
                   "bytes": t.get("bytes_read", 0) + t.get("bytes_written", 0), "peak_bytes": mem.get("peak_bytes"),
                   "kernels": len(d.get("ops", []))}
json.dump(res, open(out, "w"), indent=1, sort_keys=True)
PY
echo "predictions: $P/predicted.json"
