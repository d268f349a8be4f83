"""GPU check for batches (timerepro.batching): after `runs.load_once` (what a batch's process loads before its
forks) CUDA is still uninitialised, and a forked job can train on it. A process that initialised CUDA cannot fork
children that use it, so this must hold wherever a batch of several jobs runs on a GPU (offline or smoke scale).

    PYTHONPATH=src python benchmarks/fork_cuda_check.py      # prints OK or fails; seconds on any CUDA machine
"""

from __future__ import annotations

import os

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # is_available() below without initialising CUDA here

import torch  # noqa: E402

from timerepro import batching, runs  # noqa: E402
from timerepro.tasks.registry import TASKS  # noqa: E402


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 0
    runs.load_once(list(TASKS))
    assert not torch.cuda.is_initialized(), "runs.load_once initialised CUDA: the forks of a batch cannot use it"

    def job() -> None:
        model = torch.nn.Linear(8, 1).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, fused=True)
        loss = model(torch.ones(4, 8, device="cuda")).pow(2).mean()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()

    for job_id in ("first", "second"):  # two jobs of a batch, each in its own fork
        batching.in_own_process(job, job_id)
    print(f"OK: two forked jobs trained on {torch.cuda.get_device_name(0)} after runs.load_once")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
