"""Event-sequence classification of time2vec (Figures 1, 5a-c, 6, 7): Event-MNIST and N-TIDIGITS18.

* data: `prepare(dataset, standin=...)`; event times shifted so that each sequence starts at 0 (time2vec 5);
  Event-MNIST: the times (pixel positions) are the only input; N-TIDIGITS18 `input_mode` raw: channel one-hot
  + time per event; binned (Appendix B): frames of `events_per_frame` consecutive events, one step per frame
  with only the frame's time (its last event's) as input. `train_sequences` / `test_sequences` keep the first
  n sequences (a labelled cut below paper scale);
* model: LSTM+T or LSTM+Time2Vec (`timerepro.models.seq.time_lstm`), the last valid hidden state read out;
* training: Adam, cross-entropy, `max_epochs` epochs, no early stopping (the paper has no validation split);
  the test accuracy after every epoch is the curve of the figures (history), the run's metrics give the last
  epoch's and the best epoch's accuracy. Checkpoint after every epoch, and at the batch a stop request arrives
  before (`train.fit`, `timerepro.stopping`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.data import tpp
from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare
from timerepro.models.registry import TaskModels
from timerepro.models.seq.time_lstm import n_parameters
from timerepro.train import fit

MODELS = TaskModels("event_classification")  # name -> builder `build(config, n_types, n_classes)` (params/models.yaml)


def rebased(seqs: tpp.EventSequences, n: int | None) -> list[dict]:
    """The first n sequences as {tau: times - first time, types}; an empty sequence becomes one event at 0."""
    out = []
    for i in range(len(seqs) if n is None else min(n, len(seqs))):
        s = seqs.sequence(i)
        t = np.asarray(s["time_since_start"], np.float64)
        types = np.asarray(s["type_event"], np.int64)
        if len(t) == 0:  # Event-MNIST: an image with no pixel above the threshold
            t, types = np.zeros(1), np.zeros(1, np.int64)
        out.append({"tau": t - t[0], "types": types})
    return out


def binned(seq: dict, per_frame: int) -> dict:
    """Frames of `per_frame` consecutive events; one step per frame carrying only its last event's time."""
    ends = np.arange(per_frame - 1, len(seq["tau"]), per_frame)
    if len(ends) == 0 or ends[-1] != len(seq["tau"]) - 1:
        ends = np.append(ends, len(seq["tau"]) - 1)  # the last, partial frame
    return {"tau": seq["tau"][ends], "types": np.zeros(len(ends), np.int64)}


def pad(seqs: list[dict], key: str, dtype) -> torch.Tensor:
    """(B, L_max) right-padded with zeros."""
    L = max(len(s[key]) for s in seqs)
    out = np.zeros((len(seqs), L), dtype=dtype)
    for i, s in enumerate(seqs):
        out[i, : len(s[key])] = s[key]
    return torch.from_numpy(out)


def batch(seqs: list[dict]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return pad(seqs, "types", np.int64), pad(seqs, "tau", np.float32), torch.tensor([len(s["tau"]) for s in seqs])


def load(config: dict) -> tuple[dict[str, list[dict]], dict[str, np.ndarray], int, int, dict]:
    """Sequences and labels of train and test, number of input types, classes, data identity."""
    name, standin = config["dataset"], config.get("standin")
    data = tpp.load_processed(prepare(name, standin=standin, require_pinned=standin is None, progress=False))
    mode = config.get("input_mode", "raw")
    splits, labels = {}, {}
    for split, cut in (("train", config.get("train_sequences")), ("test", config.get("test_sequences"))):
        seqs = rebased(data.splits[split], cut)
        if mode == "binned":
            seqs = [binned(s, int(config["events_per_frame"])) for s in seqs]
        splits[split], labels[split] = seqs, data.splits[split].label[: len(seqs)]
    times_only = mode == "binned" or data.dim_process == 1  # Event-MNIST: the times are the only input
    n_types = 0 if times_only else data.dim_process
    info = data_identity(name, standin, data.manifest)
    info.update({"n_train": len(splits["train"]), "n_test": len(splits["test"]), "input_mode": mode,
                 "cut": {"train_sequences": config.get("train_sequences"), "test_sequences": config.get("test_sequences")}})
    return splits, labels, n_types, int(data.manifest["n_classes"]), info


def last_states(model, types, tau, lengths) -> torch.Tensor:
    h = model.states(types, tau, lengths)  # (B, L, H)
    return h[torch.arange(len(lengths)), lengths - 1]  # (B, H): each sequence's last valid step


# evaluation holds at most this many padded steps at once (a batch of longer sequences is split into fewer rows):
# 1,024 raw N-TIDIGITS18 sequences of up to ~14 k events would be ~15 GB of inputs and states; every offline and
# Event-MNIST batch is below it and runs whole
EVAL_STEPS = 2 ** 22


def row_slices(seqs: list[dict], batch_size: int, max_steps: int | None = None) -> list[slice]:
    """Consecutive batches of `batch_size` sequences, each split so that rows x its longest length <= max_steps
    (default EVAL_STEPS)."""
    max_steps = max_steps or EVAL_STEPS
    out = []
    for i in range(0, len(seqs), batch_size):
        end = min(i + batch_size, len(seqs))
        rows = max(1, max_steps // max(len(s["tau"]) for s in seqs[i:end]))
        out += [slice(j, min(j + rows, end)) for j in range(i, end, rows)]
    return out


@torch.no_grad()
def accuracy(model, seqs: list[dict], labels: np.ndarray, batch_size: int) -> float:
    model.eval()
    correct = 0
    for rows in row_slices(seqs, batch_size):
        logits = model.out(last_states(model, *batch(seqs[rows])))
        correct += int((logits.argmax(-1).numpy() == labels[rows]).sum())
    return correct / max(1, len(seqs))


def learned_frequencies(model) -> list[float] | None:
    t2v = getattr(model.inputs, "t2v", None)
    return None if t2v is None else t2v.w.detach().abs().tolist()


def run(config: dict, ctx) -> dict:
    seed, bs = int(config["seed"]), int(config["batch_size"])
    splits, labels, n_types, n_classes, info = load(config)
    torch.manual_seed(seed)
    model = MODELS[config["model"]](config, n_types, n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=float(config["lr"]))
    train, ytrain = splits["train"], torch.from_numpy(labels["train"])

    def train_epoch(epoch: int, cursor) -> dict:
        model.train()
        gen = torch.Generator().manual_seed(seed * 100003 + epoch)  # a resumed run sees the same batches
        order = torch.randperm(len(train), generator=gen).tolist()
        carry = {"total": 0.0}  # what a stopped epoch carries to its resumption (dropout: the global RNG, restored)
        starts = range(0, len(order), bs)
        batches = cursor.batches(starts, carry=carry)
        for i in ctx.progress(batches, desc=f"epoch {epoch}", total=len(starts)):  # a rehearsal bounds and times it
            idx = order[i:i + bs]
            logits = model.out(last_states(model, *batch([train[j] for j in idx])))
            loss = F.cross_entropy(logits, ytrain[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            carry["total"] += loss.item() * len(idx)
        return {"train_loss": carry["total"] / len(order)}

    def validate() -> dict:
        return {"test_accuracy": accuracy(model, splits["test"], labels["test"], 1024)}

    epochs = int(config["max_epochs"])
    result = fit(model, opt, train_epoch=train_epoch, validate=validate, monitor="test_accuracy", mode="max",
                 max_epochs=epochs, patience=epochs + 1, ctx=ctx, mid_epoch=True)
    curve = [h["val_test_accuracy"] for h in result.history]
    ctx.write_artifact("time2vec_frequencies.json", {"learned_abs_frequency": learned_frequencies(model)})
    return {
        "metrics": {"test_accuracy": curve[-1], "best_test_accuracy": max(curve), "best_epoch": result.best_epoch,
                    "epochs_run": result.epochs_run, "n_parameters": n_parameters(model),
                    "hidden": model.hidden},
        "data": info,
        "resumed_from_epoch": result.resumed_from_epoch,
    }
