#!/usr/bin/env bash
# Paper-scale rehearsal of the graph models on a GPU (issue 26), in a bounded time:
#  1. the paper-size stand-ins of the graphs below made in parallel (one process per dataset; cached under
#     $TIMEREPRO_DATA: a stand-in already there is checked and skipped);
#  2. the shapes of GPU jobs without a usable CUDA record (`rehearse --device cuda --gpu-jobs`: never rehearsed,
#     failed, timed at the epoch's start, or priced from a CPU record) of link prediction, node classification and
#     sequence cost, in STREAMS parallel processes on the one GPU (a stream = a few datasets; Enron, with its
#     512-2048 histories and neighbours, has two), then the point processes', event classification's and next-item's
#     in one more stream, 3 timed batches each, until the budget is spent (a second call goes on where the first
#     stopped).
# Several processes share the GPU and the host's cores: each figure is an upper bound of a job alone on the device.
# Records: $RESULTS/rehearsal/<shape id>.json (default: the project's results/); then `timerepro estimate --scale
# paper` prices the runs from them. Logs: $RESULTS/rehearsal_logs/.
#   bash benchmarks/rehearse_graph_cuda.sh [budget seconds for the whole script, default 450] [device, default cuda]
set -uo pipefail
BUDGET=${1:-450}
DEVICE=${2:-cuda}
export TIMEREPRO_DATA=${TIMEREPRO_DATA:-$PWD/data}
RESULTS=${RESULTS:-$PWD/results}
PY=${PYTHON:-python}
SHAPE_TIMEOUT=${SHAPE_TIMEOUT:-120}
start=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - start) )); }
logs=$RESULTS/rehearsal_logs
mkdir -p "$logs"

# the streams, each a list of `--shape` texts (a dataset's or a model's on a dataset); the first streams' data is
# the smallest (made first), Reddit's last (its stand-in takes longest: made in the background meanwhile)
STREAMS=(
  "/dyg_mamba/enron /dygformer/enron"
  "/tgn/enron /graphmixer/enron /cawn/enron /tcl/enron /tgat/enron /dyrep/enron /jodie/enron /edgebank/enron /dygdecoder/enron /dygformer_separate/enron"
  "/uci /uslegis /canparl"
  "/lastfm /wikipedia"
  "/contacts /socialevo"
  "/untrade /unvote /mooc /synthetic_long_histories /reddit"
)
graphs=(uci uslegis canparl enron untrade unvote contacts socialevo mooc lastfm wikipedia reddit)
for g in "${graphs[@]}"; do
  "$PY" -m timerepro data prepare "$g" --standin paper > "$logs/prepare_$g.txt" 2>&1 &
done

pids=()
for i in "${!STREAMS[@]}"; do
  args=()
  for s in ${STREAMS[$i]}; do args+=(--shape "$s"); done
  budget=$(( $(left) - SHAPE_TIMEOUT - 15 ))
  (( budget > 10 )) || budget=10
  OMP_NUM_THREADS=${OMP_PER_STREAM:-2} "$PY" -m timerepro rehearse --task link_prediction --task node_classification \
      --task sequence_cost --gpu-jobs --smallest-first "${args[@]}" --batches 3 --device "$DEVICE" \
      --budget-s "$budget" --shape-timeout-s "$SHAPE_TIMEOUT" --results "$RESULTS" > "$logs/stream_$i.txt" 2>&1 &
  pids+=($!)
done
OTHER=(--task temporal_point_process --task event_classification --task next_item)
OMP_NUM_THREADS=${OMP_PER_STREAM:-2} "$PY" -m timerepro rehearse "${OTHER[@]}" --gpu-jobs --smallest-first --batches 3 \
    --device "$DEVICE" --budget-s $(( $(left) - SHAPE_TIMEOUT - 15 )) --shape-timeout-s "$SHAPE_TIMEOUT" \
    --results "$RESULTS" > "$logs/stream_other.txt" 2>&1 &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
"$PY" -m timerepro rehearse --gpu-jobs --device "$DEVICE" --list --results "$RESULTS" | grep -vc " on cuda " || true
echo "done in $(( $(date +%s) - start )) s" >&2
