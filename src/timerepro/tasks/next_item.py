"""Next-item recommendation of time2vec (Figures 1, 2, 5d, 8-14): SOF, Last.FM, CiteULike.

* data: TimeLSTM's preprocessing for Last.FM/CiteULike (data/time2vec.py: vocabulary, maximum length);
  `tau_kind` delta_next: tau_j = t_{j+1} - t_j (what the TimeLSTM code feeds, its `user-item-delta-time.lst`),
  since_start: tau_j = t_j - t_1 (SOF, the paper's "times shifted to start at 0");
* training: cross-entropy of the next item at every step (TimeLSTM's y = sent[1:]), `optimizer` adam or
  adagrad (the TimeLSTM code: Adagrad, lr 0.01, batch 5), `max_epochs` epochs, no early stopping; `train_order`
  file (the TimeLSTM code's `gen_data`: the sequences in their order every epoch) or shuffled (a new order per
  epoch); `test_prefixes` timelstm: after `fixed_epochs` epochs every epoch also trains on growing prefixes of
  the test sequences' inputs (TimeLSTM `main.py` add_test_to_train, ~414-484; `prefixes_for_epoch`), none:
  the training sequences only (the project's earlier protocol);
* model selection (`selection`): train_last_item holds out each training sequence's last item (trained on the
  rest; a sequence of 2 items is kept whole) and ranks it from the sequence like a test target, after every
  epoch, as `selection_*` metrics (history `val_selection_*`), on candidates of their own (`candidate_seed`, 1):
  what the Time2Vec size is chosen on, never the test curves; none: no held-out item (the TimeLSTM code has no
  validation set, and trained on every item);
* evaluation (after every epoch, the figures' curves): `eval_positions` last: each test sequence's last item
  from its prefix (TimeLSTM's do_evaluate), all: every next event of the test sequences. For each target,
  `candidate_repeats` draws of k - 1 random other items plus the correct one (TimeLSTM: k = 101, SAMPLE_TIME 20
  in time2vec); the candidates come from a generator seeded by `candidate_seed` alone, so every model and run
  ranks the same candidates. rank = 1 + #candidates scored higher + #other candidates scored equal (the
  TimeLSTM code's reversed argsort puts the correct item last among ties); Recall@q = share of rank <= q,
  MRR@q = mean of 1/rank over rank <= q (0 otherwise); q = null: no cut-off.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch
import torch.nn.functional as F

from timerepro.data import tpp
from timerepro.data.manifest import data_identity
from timerepro.data.prepare import prepare
from timerepro.models.registry import TaskModels
from timerepro.models.seq.time_lstm import n_parameters
from timerepro.tasks.event_classification import batch
from timerepro.train import fit

MODELS = TaskModels("next_item")  # name -> builder `build(config, n_items, n_out)` (params/models.yaml)


def sample_candidates(targets: np.ndarray, n_items: int, k: int, repeats: int, seed: int | list[int]) -> np.ndarray:
    """(n_targets, repeats, k) item ids: column 0 the target, then k - 1 distinct random other items.

    k is capped at n_items (then every item is a candidate: a full ranking)."""
    k = min(k, n_items)
    rng = np.random.default_rng(seed)
    out = np.empty((len(targets), repeats, k), dtype=np.int64)
    for n, y in enumerate(targets):
        for r in range(repeats):
            others = rng.choice(n_items - 1, size=k - 1, replace=False)  # ids of the n_items - 1 other items
            out[n, r, 0] = y
            out[n, r, 1:] = others + (others >= y)  # skip the target's own id
    return out


def ranks(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Rank of column 0 among each row's candidates: (n, repeats) from scores (n, n_items) and (n, repeats, k)."""
    s = np.take_along_axis(scores[:, None, :], candidates, axis=2)  # (n, repeats, k)
    target = s[..., :1]
    return 1 + (s[..., 1:] > target).sum(-1) + (s[..., 1:] == target).sum(-1)


def recall_mrr(rank: np.ndarray, q: int | None) -> tuple[float, float]:
    """Recall@q and MRR@q over every (target, repeat); q None: MRR without cut-off (Recall@None = 1)."""
    rank = np.asarray(rank, float)
    hit = rank <= q if q is not None else np.ones_like(rank, bool)
    return float(hit.mean()), float(np.where(hit, 1.0 / rank, 0.0).mean())


def timelstm_inputs(seqs: tpp.EventSequences, tau_kind: str, min_len: int, eval_last: bool) -> list[dict]:
    """Sequences as model inputs and targets; `eval_last`: input = all but the last event, target = the last."""
    out = []
    for i in range(len(seqs)):
        s = seqs.sequence(i)
        t = np.asarray(s["time_since_start"], np.float64)
        items = np.asarray(s["type_event"], np.int64)
        if len(items) < min_len:
            continue
        if tau_kind == "delta_next":
            tau = np.append(np.diff(t), 0.0)  # seconds to the next event; the last 0 (TimeLSTM)
        elif tau_kind == "since_start":
            tau = t - t[0]
        else:
            raise ValueError(f"tau_kind must be delta_next or since_start, got {tau_kind!r}")
        x, xt = items[:-1], tau[:-1]
        y = items[-1:] if eval_last else items[1:]
        out.append({"types": x, "tau": xt.astype(np.float32), "targets": y})
    return out


PREFIX_PROTOCOLS = ("timelstm", "none")
TRAIN_ORDERS = ("file", "shuffled")


def prefix_length(epoch: int, fixed_epochs: int, max_epochs: int, width: int) -> int:
    """The test-prefix length 0-based `epoch` trains on (0: none). TimeLSTM main.py ~470-484: after epoch e
    (1-based, e > FIXED_EPOCHS) add_test_to_train(int((e - FIXED_EPOCHS) * test_data_length / (NUM_EPOCHS -
    FIXED_EPOCHS))) feeds the next epoch, whose 0-based index is e; test_data_length = the test inputs' padded width."""
    if epoch <= fixed_epochs or max_epochs <= fixed_epochs:
        return 0
    return int((epoch - fixed_epochs) * width / (max_epochs - fixed_epochs))


def added_test_prefixes(test: list[dict], length: int) -> list[dict]:
    """TimeLSTM's add_test_to_train(length) (main.py ~414-444) on the test inputs (each sequence but its last item,
    the held-out target, never added): n = length, or length - 1 where the input is not longer than length; inputs
    = the first n entries of the input padded to the widest test input, targets the next n. As the code, padding
    enters as item 0 (its one-hot padding row) at tau 0 where n exceeds the input; n = 0 adds nothing."""
    width = max((len(s["types"]) for s in test), default=0)
    out = []
    for s in test:
        n = length if len(s["types"]) > length else length - 1
        if n < 1:
            continue
        types = np.pad(s["types"], (0, width + 1 - len(s["types"])))  # (width + 1,) item 0 beyond the input
        tau = np.pad(s["tau"], (0, width - len(s["tau"])))
        out.append({"types": types[:n], "tau": tau[:n].astype(np.float32), "targets": types[1:n + 1]})
    return out


def prefixes_for_epoch(config: dict, test: list[dict], epoch: int) -> list[dict]:
    """The test prefixes training epoch `epoch` (0-based) adds under `test_prefixes` (none: [])."""
    protocol = config["test_prefixes"]
    if protocol not in PREFIX_PROTOCOLS:
        raise ValueError(f"unknown test_prefixes {protocol!r}; known: {PREFIX_PROTOCOLS}")
    if protocol == "none":
        return []
    width = max((len(s["types"]) for s in test), default=0)
    length = prefix_length(epoch, int(config["fixed_epochs"]), int(config["max_epochs"]), width)
    return added_test_prefixes(test, length) if length else []


SELECTIONS = ("train_last_item", "none")


def hold_out_last_items(train: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the training sequences without their last target, the validation queries: each sequence's inputs with its
    last target); a sequence with one target stays whole and gives no query."""
    fit_part, val = [], []
    for s in train:
        if len(s["targets"]) < 2:
            fit_part.append(s)
            continue
        fit_part.append({"types": s["types"][:-1], "tau": s["tau"][:-1], "targets": s["targets"][:-1]})
        val.append({**s, "targets": s["targets"][-1:]})
    return fit_part, val


def load(config: dict) -> tuple[dict[str, list[dict]], int, dict]:
    name, standin = config["dataset"], config.get("standin")
    data = tpp.load_processed(prepare(name, standin=standin, require_pinned=standin is None, progress=False))
    last = config.get("eval_positions", "last") == "last"
    kind = config["tau_kind"]
    # TimeLSTM: training sequences need > 1 event, test sequences > 2 (more history)
    train = timelstm_inputs(data.splits["train"], kind, 2, eval_last=False)
    test = timelstm_inputs(data.splits["test"], kind, 3 if last else 2, eval_last=last)
    cut = config.get("train_sequences")
    train = train[:cut] if cut else train
    info = data_identity(name, standin, data.manifest)
    info.update({"n_train": len(train), "n_test": len(test), "n_items": data.dim_process})
    return {"train": train, "test": test}, data.dim_process, info


@torch.no_grad()
def evaluate(model, test: list[dict], candidates: np.ndarray, qs: dict[str, int | None], bs: int = 64) -> dict:
    """Recall@q / MRR@q of every metric name in qs, on the fixed candidates (targets in test order)."""
    model.eval()
    rows = []
    for i in range(0, len(test), bs):
        chunk = test[i:i + bs]
        types, tau, lengths = batch(chunk)
        logits = model.out(model.states(types, tau, lengths))  # (B, L, n_items)
        for b, s in enumerate(chunk):
            n = len(s["targets"])  # last: the last step predicts the one target; all: step j predicts target j
            rows.append(logits[b, lengths[b] - n:lengths[b]].numpy())
    scores = np.concatenate(rows)  # (n_targets, n_items)
    r = ranks(scores, candidates)
    out = {}
    for name, q in qs.items():
        rec, mrr = recall_mrr(r, q)
        out[f"recall_at_{name}"], out[f"mrr_at_{name}"] = rec, mrr
    return out


def run(config: dict, ctx) -> dict:
    seed, bs = int(config["seed"]), int(config["batch_size"])
    splits, n_items, info = load(config)
    train, test = splits["train"], splits["test"]
    targets = np.concatenate([s["targets"] for s in test])
    k = int(config["candidates"]) if config.get("candidates") else n_items
    cand = sample_candidates(targets, n_items, k, int(config["candidate_repeats"]), int(config["candidate_seed"]))
    qs = {str(q) if q else "all": q for q in config["recall_at"]}
    torch.manual_seed(seed)
    model = MODELS[config["model"]](config, n_items, n_items)
    opt_cls = {"adam": torch.optim.Adam, "adagrad": torch.optim.Adagrad}[config["optimizer"]]
    opt = opt_cls(model.parameters(), lr=float(config["lr"]))

    if config["train_order"] not in TRAIN_ORDERS:
        raise ValueError(f"unknown train_order {config['train_order']!r}; known: {TRAIN_ORDERS}")
    prefixes_for_epoch(config, test, 0)  # refuse an unknown protocol before training
    if config["selection"] not in SELECTIONS:
        raise ValueError(f"unknown selection {config['selection']!r}; known: {SELECTIONS}")
    val: list[dict] = []
    if config["selection"] == "train_last_item":
        train, val = hold_out_last_items(train)
    val_targets = np.concatenate([s["targets"] for s in val]) if val else np.zeros(0, np.int64)
    val_cand = sample_candidates(val_targets, n_items, k, int(config["candidate_repeats"]),
                                 [int(config["candidate_seed"]), 1])

    def train_epoch(epoch: int, cursor) -> dict:
        model.train()
        seqs = train + prefixes_for_epoch(config, test, epoch)  # TimeLSTM: the prefixes after the training users
        if config["train_order"] == "file":
            order = list(range(len(seqs)))
        else:
            order = torch.randperm(len(seqs), generator=torch.Generator().manual_seed(seed * 100003 + epoch)).tolist()
        carry = {"total": 0.0, "count": 0}  # what a stopped epoch carries to its resumption (dropout: the global RNG)
        starts = range(0, len(order), bs)
        batches = cursor.batches(starts, carry=carry)
        for i in ctx.progress(batches, desc=f"epoch {epoch}", total=len(starts)):  # a rehearsal bounds and times it
            chunk = [seqs[j] for j in order[i:i + bs]]
            types, tau, lengths = batch(chunk)
            logits = model.out(model.states(types, tau, lengths))  # (B, L, n_items)
            y = torch.from_numpy(np.stack([np.pad(s["targets"], (0, types.shape[1] - len(s["targets"])))
                                           for s in chunk]))
            mask = torch.arange(types.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
            loss = F.cross_entropy(logits[mask], y[mask])  # mean over real steps (TimeLSTM: cost / mask.sum())
            opt.zero_grad()
            loss.backward()
            opt.step()
            carry["total"] += loss.item() * int(mask.sum())
            carry["count"] += int(mask.sum())
        return {"train_loss": carry["total"] / max(1, carry["count"])}

    def validate() -> dict:
        out = evaluate(model, test, cand, qs)  # the figures' curves (the code's per-epoch test evaluation)
        if val:
            out.update({f"selection_{k_}": v for k_, v in evaluate(model, val, val_cand, qs).items()})
        return out

    epochs = int(config["max_epochs"])
    main = f"recall_at_{next(iter(qs))}"
    result = fit(model, opt, train_epoch=train_epoch, validate=validate, monitor=main, mode="max",
                 max_epochs=epochs, patience=epochs + 1, ctx=ctx, mid_epoch=True)
    # the validation metrics of the last epoch (not `val_time_s`, the seconds train.fit measured validation for)
    last = {k_: v for k_, v in result.history[-1].items() if k_.startswith("val_") and k_ != "val_time_s"}
    metrics = {k_[4:]: v for k_, v in last.items()}
    metrics.update({f"best_{k_[4:]}": max(h[k_] for h in result.history) for k_ in last})
    metrics.update({"epochs_run": result.epochs_run, "n_parameters": n_parameters(model),
                    "hidden": model.hidden, "n_targets": int(len(targets)), "candidates_per_target": int(cand.shape[2]),
                    "candidates_sha256": hashlib.sha256(cand.tobytes()).hexdigest()})
    return {"metrics": metrics, "data": info, "resumed_from_epoch": result.resumed_from_epoch}
