"""provenance.collect reads what a process's runs share (git, packages, machine) once per process (issue 27)."""

from timerepro import provenance
from timerepro.memory import PeakMemory


def test_git_is_asked_once_per_process_and_each_record_is_its_own(monkeypatch):
    calls = []
    def git_state(root=None):
        calls.append(root)
        return {"commit": "c", "dirty": False}

    monkeypatch.setattr(provenance, "git_state", git_state)
    provenance.process_state.cache_clear()
    memory = PeakMemory()
    try:
        records = [provenance.collect(device="cpu", seed=s, data={}, wall_time_s=1.0, memory=memory) for s in range(3)]
    finally:
        provenance.process_state.cache_clear()  # the next test reads the real checkout's state
    assert len(calls) == 1
    assert [r["git"] for r in records] == [{"commit": "c", "dirty": False}] * 3
    records[0]["git"]["dirty"] = True
    assert records[1]["git"]["dirty"] is False
