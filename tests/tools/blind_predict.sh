#!/usr/bin/env bash
# Predictions of the blind set (issue #24) from the roofline built at BUILD (default build/):
# for the kernel set and each step in tests/data/blind/steps.txt, with the datasheet spec and
# with the spec calibrated on 2026-11-23. Writes the per-kernel CSV and a totals summary to
# tests/data/blind/predicted/ (committed before any measurement) and the full analyze reports
# (roofline-report/1, byte-identical for a given commit) to FULL (default build/blind-predicted/)
# with their SHA-256 in predicted/SHA256SUMS.
set -euo pipefail
B=${BUILD:-build}
R=./$B/roofline
FULL=${FULL:-$B/blind-predicted}
P=tests/data/blind/predicted
CAL=tests/data/measured/h100-sxm-2026-11-23/h100-calibrated.json
mkdir -p "$P" "$FULL"
rm -f "$P"/*.csv "$P"/totals.json
cases=("blind-kernels|tests/data/blind/blind-kernels.json")
while IFS= read -r line; do [ -n "$line" ] && cases+=("$line"); done < tests/data/blind/steps.txt
for c in "${cases[@]}"; do
  name=${c%%|*}; margs=${c#*|}
  for spec in "h100-sxm|datasheet" "$CAL|calibrated"; do
    $R analyze $margs --hw "${spec%%|*}" -q -o "$FULL/$name.${spec##*|}.json" --csv "$P/$name.${spec##*|}.csv"
  done
done
(cd "$FULL" && sha256sum *.json) > "$P/SHA256SUMS"
python3 - "$FULL" "$P/totals.json" <<'PY'
import json, os, sys
full, out = sys.argv[1], sys.argv[2]
res = {}
for f in sorted(os.listdir(full)):
    d = json.load(open(os.path.join(full, f)))
    t = d["totals"]
    res[f[:-5]] = {k: t[k] for k in ("flops", "bytes_read", "bytes_written", "lower_bound_s", "modelled_s", "step_time_s") if k in t}
json.dump(res, open(out, "w"), indent=1, sort_keys=True)
PY
echo "predictions written to $P (full reports in $FULL)"
