"""EasyTPP JSON at a pinned HF revision: pin (commit + sha256 into the lock), paper-scale fetch, CSR format."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import yaml

from timerepro.data import tpp
from timerepro.data.commands import pin_dataset
from timerepro.data.lock import UnpinnedError, load_lock
from timerepro.data.prepare import prepare

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def seqs(n_seq: int, K: int = 10):
    out = []
    for s in range(n_seq):
        dts = [0.0] + [0.5 * (k + 1) for k in range(2 + s)]
        tss = list(np.cumsum(dts))
        out.append({"dim_process": K, "seq_idx": s, "seq_len": len(dts), "time_since_start": tss,
                    "time_since_last_event": dts, "type_event": [(s + k) % K for k in range(len(dts))]})
    return out


def serve_taxi(server, K=10):
    bodies = {}
    for split, n in (("train", 3), ("dev", 2), ("test", 2)):
        body = json.dumps(seqs(n, K)).encode()
        bodies[split] = body
        for rev in ("main", COMMIT):
            server.add(f"/datasets/easytpp/taxi/resolve/{rev}/{split}.json", body, headers={"X-Repo-Commit": COMMIT})
    return bodies


def test_pin_then_paper_scale_prepare(mirror, data_root, lock_copy):
    serve_taxi(mirror)
    with pytest.raises(UnpinnedError, match="timerepro data pin taxi"):
        load_lock().files("taxi", require_pinned=True)
    text_before = lock_copy.read_text()
    pins = pin_dataset("taxi")
    assert {p["commit"] for p in pins.values()} == {COMMIT}
    text_after = lock_copy.read_text()
    assert text_after.splitlines()[:3] == text_before.splitlines()[:3]  # comments kept
    assert "# ---- event sequences" in text_after
    lock = load_lock()
    files = lock.files("taxi", require_pinned=True)
    assert all(f.revision["commit"] == COMMIT and f.resolved_urls()[0].endswith(f"/resolve/{COMMIT}/{f.name}") for f in files)
    # other datasets untouched
    assert yaml.safe_load(text_after)["datasets"]["amazon"] == yaml.safe_load(text_before)["datasets"]["amazon"]
    out = prepare("taxi", require_pinned=True)
    d = tpp.load_processed(out)
    assert d.dim_process == 10 and d.manifest["standin"] is False
    assert [len(d.splits[s]) for s in ("train", "dev", "test")] == [3, 2, 2]
    first = d.splits["train"].sequence(1)
    assert first["time_since_last_event"].tolist() == [0.0, 0.5, 1.0, 1.5]
    assert first["time_since_start"].tolist() == [0.0, 0.5, 1.5, 3.0]
    assert first["type_event"].tolist() == [1, 2, 3, 4]
    assert d.splits["train"].lengths.tolist() == [3, 4, 5]
    assert tpp.to_easytpp_json(d.splits["dev"], 10) == seqs(2)


def test_dim_process_must_equal_k(mirror, data_root):
    serve_taxi(mirror, K=7)
    with pytest.raises(ValueError, match="dim_process"):
        prepare("taxi")


def test_gatech_pickle_reader_runs_no_code(tmp_path):
    class Evil:
        def __reduce__(self):
            import os
            return (os.system, ("echo pwned",))

    p = tmp_path / "train.pkl"
    p.write_bytes(pickle.dumps({"dim_process": 2, "train": [[{"x": Evil()}]]}))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        tpp.read_gatech_pkl(p, "train")
    ok = tmp_path / "dev.pkl"
    ev = [{"idx_event": 0, "time_since_start": 1.0, "time_since_last_event": 0.0, "time_since_last_same_event": 0.0,
           "type_event": 1}]
    ok.write_bytes(pickle.dumps({"dim_process": 2, "dev": [ev, ev + ev]}, protocol=2))
    K, s = tpp.read_gatech_pkl(ok, "dev")
    assert K == 2 and [x["type_event"] for x in s] == [[1], [1, 1]]


def test_malformed_json_is_rejected(tmp_path):
    p = tmp_path / "train.json"
    p.write_text(json.dumps([{"dim_process": 2, "time_since_start": [0.0], "time_since_last_event": [0.0, 1.0],
                              "type_event": [0]}]))
    with pytest.raises(ValueError, match="different lengths"):
        tpp.read_easytpp_json(p)
