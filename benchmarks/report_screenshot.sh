#!/usr/bin/env bash
# The report's first screen as a reviewer sees it: rebuild the report from the run records of a results folder
# (aggregate, render, claims, report; no training) and screenshot results/report/index.html in headless Chromium.
#   bash benchmarks/report_screenshot.sh [results folder, default results/] [scale, default smoke] [out.png]
# The results folder is written to (aggregated/, tables/, figures/, claims.json, report/): point it at a copy of
# someone else's results. Needs `chromium` (or CHROMIUM=/path/to/chrome) and the package on PYTHONPATH.
# Not a test: it checks nothing by itself; look at the picture (the per-paper claims table comes first).
set -euo pipefail
RESULTS=$(realpath "${1:-results}")
SCALE=${2:-smoke}
OUT=$(realpath -m "${3:-$RESULTS/report/first_screen.png}")
PY=${PYTHON:-python}
CHROMIUM=${CHROMIUM:-chromium}
export TIMEREPRO_RESULTS="$RESULTS"
"$PY" -m timerepro aggregate --scale "$SCALE" >/dev/null
"$PY" -m timerepro render --scale "$SCALE" >/dev/null
"$PY" -m timerepro claims --scale "$SCALE" | tail -6
page=$("$PY" -m timerepro report --scale "$SCALE")
mkdir -p "$(dirname "$OUT")"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1000 \
    --screenshot="$OUT" "file://$page" 2>/dev/null
echo "$OUT (first screen of $page)"
