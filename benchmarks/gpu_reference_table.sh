#!/usr/bin/env bash
# The reference table's graph rows on a GPU (issue 27, item 1), in one call that ends within its budget:
# every DyGLib row (and DyG-Mamba's, when its checkouts are there) on --device cuda, 3 seeds, seed after seed over
# the rows (--interleave: a budget cut leaves every row some pairs), 2 torch threads per process.
#   bash benchmarks/gpu_reference_table.sh TABLE_FILE [BUDGET_S, default 125] [DEVICE, default cuda]
# The table goes to TABLE_FILE (and stdout), each process's line and any traceback to TABLE_FILE.err.
# Reference checkouts (never vendored, never committed) under $REFS (default .gpu): DyGLib/ (yule-BUAA/DyGLib);
# optional DyG-Mamba/ (Clearloveyuan/DyG-Mamba), mamba/ (state-spaces/mamba) and pylib/ (einops) for DyG-Mamba's row.
# MODELS and SEEDS override the rows and the seeds (e.g. MODELS="jodie edgebank" SEEDS=2 for a dry run on CPU);
# ROW_S a row's seconds of processes (default 60: one or two pairs on an H200; three pairs need ~90).
set -euo pipefail
TABLE=${1:?usage: gpu_reference_table.sh TABLE_FILE [BUDGET_S] [DEVICE]}
BUDGET=${2:-125}
DEVICE=${3:-cuda}
REFS=${REFS:-.gpu}
PY=${PYTHON:-python3}
# the rows the GPU changes most first; EdgeBank (numpy on both sides) last
read -r -a models <<< "${MODELS:-tgat dygformer tgn tcl graphmixer jodie dyrep cawn dyg_mamba edgebank}"
mamba=()
if [[ -d $REFS/DyG-Mamba && -d $REFS/mamba ]]; then
  mamba=(--dyg-mamba "$REFS/DyG-Mamba" --mamba-ssm "$REFS/mamba")
else
  models=("${models[@]/dyg_mamba}")  # no checkouts: the row is left out (said below)
  echo "DyG-Mamba row left out: no $REFS/DyG-Mamba and $REFS/mamba" >&2
fi
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
[[ -d $REFS/pylib ]] && PYTHONPATH=$PYTHONPATH:$(cd "$REFS/pylib" && pwd)
mkdir -p "$(dirname "$TABLE")"
# --timeout: one process; --row-timeout-s: a row's processes together; --budget-s: the table (processes past it are
# not started, the one running is stopped), so the table is printed whole before an outer `timeout` could cut it
"$PY" benchmarks/reference_table.py --device "$DEVICE" --dyglib "$REFS/DyGLib" "${mamba[@]}" \
  --models ${models[@]} --rows --interleave --seeds "${SEEDS:-3}" --threads 2 \
  --timeout 60 --row-timeout-s "${ROW_S:-60}" --budget-s "$BUDGET" 2> "$TABLE.err" | tee "$TABLE"
