"""Peak memory of one run, even when several runs share a process (the seeds of a job).

`ru_maxrss` is the peak of the whole process: the second run of a job would report the first
one's. Linux lets a process reset its own peak (writing 5 to /proc/self/clear_refs resets VmHWM),
so `PeakMemory.start()` resets it and `peak_mb()` reads it back. Where that is not allowed (not
Linux, a locked-down /proc), a thread samples the resident set size every `interval` seconds
instead (it can miss a spike shorter than that; `method` says which one measured).
"""

from __future__ import annotations

import threading
from pathlib import Path

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kb(field: str) -> float | None:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def current_rss_mb() -> float:
    kb = _status_kb("VmRSS")
    if kb is not None:
        return kb / 1024.0
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _reset_hwm() -> bool:
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _status_kb("VmHWM") is not None


class PeakMemory:
    """Peak resident memory (MB) of this process since `start()`; GPU peak too when on CUDA."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.method: str | None = None
        self.start_mb: float | None = None  # resident memory when the run started (the process baseline)
        self._peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cuda = False

    def start(self, device: str = "cpu") -> "PeakMemory":
        self.stop()
        self.start_mb = current_rss_mb()
        self._cuda = device.startswith("cuda")
        if self._cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()
        if _reset_hwm():
            self.method = "VmHWM reset per run"
        else:
            self.method = f"RSS sampled every {self.interval:g} s"
            self._peak = current_rss_mb()
            self._stop.clear()
            self._thread = threading.Thread(target=self._sample, name="peak-memory", daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, current_rss_mb())

    def peak_mb(self) -> float:
        if self.method and self.method.startswith("VmHWM"):
            return (_status_kb("VmHWM") or 0.0) / 1024.0
        return max(self._peak, current_rss_mb())

    def peak_gpu_mb(self) -> float | None:
        if not self._cuda:
            return None
        import torch

        return torch.cuda.max_memory_allocated() / 2**20

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
