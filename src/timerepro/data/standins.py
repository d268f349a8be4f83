"""Synthetic stand-ins written as raw bytes in the exact upstream formats, so they go through the
same extraction and preprocessing as the real files: DyGLib zips (Deflate64 for reddit, as upstream),
JODIE CSVs, EasyTPP JSON, iTransformer CSVs, MNIST IDX gzip, N-TIDIGITS HDF5, Gatech pickles, Last.fm tar.gz.

Every generator is seeded and has planted structure that a time encoder can exploit: sessions of repeated,
recently seen partners with replies and endpoint features (graphs, `GraphSpec`), multivariate Hawkes excitation
(events), daily/weekly cycles (series).
"""

from __future__ import annotations

import gzip
import heapq
import io
import json
import pickle
import struct
import tarfile
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from timerepro.data import ctdg
from timerepro.data.lock import Dataset

from timerepro.names import STANDIN_SCALES as SCALES  # noqa: E402 (one place for the names)

if TYPE_CHECKING:
    import pandas as pd

# smoke: tiny (the test suite runs the smoke DAG three times); offline: what the link-prediction cuts of the offline
# scale (params/scales.yaml) can learn within their CPU budget (GraphSpec below)
GRAPH_SIZE = {"smoke": dict(n_edges=300, n_nodes=30), "offline": dict(n_edges=420, n_nodes=30)}
MAX_GRAPH_DRAWS = 20
# raw edge-feature columns in the upstream CSVs (>= 1 column, 0 when the set has none)
EDGE_FEAT_DIM = {"wikipedia": 172, "reddit": 172, "mooc": 4, "SocialEvo": 2}
DEFLATE64_ZIPS = {"reddit"}  # upstream reddit.zip uses method 9
TPP_SIZE = {"smoke": dict(train=24, dev=6, test=6, min_len=8, max_len=16),
            "offline": dict(train=500, dev=80, test=150, min_len=20, max_len=60)}
SERIES_ROWS = {"ETT_hour": {"smoke": 14400, "offline": 17420}, "ETT_minute": {"smoke": 57600, "offline": 69680},
               "custom": {"smoke": 400, "offline": 4000}}
MNIST_SIZE = {"smoke": (60, 20), "offline": (6000, 1000)}
NTIDIGITS_SIZE = {"smoke": (22, 11), "offline": (440, 220)}
LASTFM_USERS = {"smoke": 20, "offline": 200}
# paper: lengths uniform within the published min..max (hawkes_attention Table 1), sequences per split = the
# published event tokens / (min + max) / 2, so that a split holds the published number of tokens; Retweet: EasyTPP's statistics (20000/2000/2000, 50..264); SO (Time2Vec, Du et al. 2016):
# 6633 sequences, split 70/10/20, lengths 41..101 (approximate: the subset Time2Vec used is not stated)
PAPER_TPP = {"taxi": dict(train=1378, dev=189, test=378, min_len=36, max_len=38),
             "taobao": dict(train=7216, dev=1093, test=2082, min_len=3, max_len=94),
             "amazon": dict(train=5333, dev=222, test=556, min_len=14, max_len=94),
             "stackoverflow": dict(train=1268, dev=352, test=366, min_len=41, max_len=101),
             "retweet": dict(train=20000, dev=2000, test=2000, min_len=50, max_len=264),
             "sof_time2vec": dict(train=4643, dev=663, test=1327, min_len=41, max_len=101)}
# paper: rows of the real series (iTransformer's bundle; the ETT sets are already at size offline)
PAPER_SERIES_ROWS = {"ETT_hour": 17420, "ETT_minute": 69680, "ecl": 26304, "traffic": 17544, "weather": 52696,
                     "exchange": 7588}
MNIST_SIZE["paper"] = (60000, 10000)
# paper Event-MNIST: events per image (pixels with intensity / 255 > 0.9) at these quantiles of the real MNIST's 70,000
# images (train and test, the pinned package copy; tests/unit/test_paper_standins.py recomputes them), so a batch's
# padded length is the real one
MNIST_EVENT_QUANTILES = {"levels": (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0),
                         "events": (2, 17, 26, 33, 47, 65, 87, 110, 125, 157, 283)}  # mean 68.9, sd 30.5
NTIDIGITS_SIZE["paper"] = (2464, 2486)  # TIDIGITS' isolated-digit utterances, train and test (time2vec.yaml stats)
# paper N-TIDIGITS18: events per utterance and its length are NOT known offline (neither the paper nor tonic prints
# them; the real file is a download): ASSUMED log-normal with median 2,000 events over 0.5-1.5 s, which the paper's
# binned variant (frames of 100 events, Appendix B) fits; the cost of every N-TIDIGITS18 run scales with it, so the
# first real download should replace it (`read_ntidigits` gives the counts)
NTIDIGITS_EVENTS = dict(median=2000, sigma=0.6, min=200, max=20000, seconds=(0.5, 1.5))
# paper next-item sets (TimeLSTM preprocessing), sized as the paper's statistics (/work/shared/reference/papers/
# time2vec.yaml, datasets Last.FM and CiteULike): `users` sequences, a `vocab` of items that hold `events` rows between
# them (the rows the vocabulary cut keeps), and `rare` items of fewer rows each that the cut drops. Last.fm 1K: 992
# users (its README, quoted in /work/shared/reference/datasets.md; TimeLSTM's 800 train + 192 test), 5,000 items,
# ~819K events; its real 19M rows are not written (the vocabulary cut drops all but these and their delta times).
# CiteULike: ~1.6K sequences, 5,000 items, ~36K events (the real dump is unobtainable; no paper-scale run reads it)
PAPER_NEXT_ITEM = {
    "lastfm_1k": dict(users=992, vocab=5000, events=819_000, rare=60_000,
                      start="2005-02-14", end="2009-06-19"),  # times: uniform over the years (cost does not read them)
    "citeulike": dict(users=1600, vocab=5000, events=36_000, rare=4_000, start="2004-11-01", end="2013-12-31"),
}


DAY = 86400.0
# paper: each real graph's size, as the statistics tables print it (DyGLib, Yu et al. 2023, Table 7; linear_time
# Table 3 and dyg_mamba Table 6 in params/published/published_values.csv; tests/unit/test_paper_standins.py checks
# the two agree): nodes, sources (bipartite: users; the rest are items), edges, time span in seconds, and the
# number of distinct steps of the discrete-time sets (clock: steps). Flights: DyGLib Table 7 (no paper prints it).
PAPER_GRAPHS = {
    "wikipedia": dict(nodes=9227, sources=8227, edges=157474, span=30 * DAY),
    "reddit": dict(nodes=10984, sources=10000, edges=672447, span=30 * DAY),
    "mooc": dict(nodes=7144, sources=7047, edges=411749, span=17 * 30 * DAY),
    "lastfm": dict(nodes=1980, sources=980, edges=1293103, span=30 * DAY),
    "enron": dict(nodes=184, edges=125235, span=3 * 365 * DAY),
    "socialevo": dict(nodes=74, edges=2099519, span=8 * 30 * DAY),
    "uci": dict(nodes=1899, edges=59835, span=196 * DAY),
    "flights": dict(nodes=13169, edges=1927145, steps=122),
    "canparl": dict(nodes=734, edges=74478, steps=14),
    "uslegis": dict(nodes=225, edges=60396, steps=12),
    "untrade": dict(nodes=255, edges=507497, steps=32),
    "unvote": dict(nodes=201, edges=1035742, steps=72),
    "contacts": dict(nodes=692, edges=2426279, span=30 * DAY),
}
# the JODIE originals are the same graphs
PAPER_GRAPHS.update({f"jodie_{k}": PAPER_GRAPHS[k] for k in ("wikipedia", "reddit", "mooc", "lastfm")})


def label_for(ds: Dataset) -> str:
    return f"synthetic stand-in for {ds.title} (not the real data)"


GENERATOR_VERSION = 5  # bump whenever a generator's output changes (2: CTDG labels = burst state changes;
# 3: CTDG interaction graphs with sessions, recency-weighted repeated partners, replies, endpoint features;
# 4: a CTDG draw without new-node validation or test edges is drawn again; 5: paper size: graph features from a row
# table and exact timestamps in the CSV, the time2vec sets at their real sizes)
MARKER = ".generator"  # written last into a stand-in's raw folder: version and seed it was made with


def generator_stamp(seed: int) -> str:
    return f"version={GENERATOR_VERSION} seed={seed}"


def write_standin(ds: Dataset, folder: str | Path, scale: str, seed: int = 0) -> dict[str, Path]:
    """Write every file of `ds` (same names as in the lock) into `folder`; returns {file name: path}.

    The marker file, written last, says which generator made them, so a cache made by an older
    generator is regenerated rather than reused."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, _stable_id(ds.name)])
    writer = {"ctdg": _ctdg, "tpp": _tpp, "series": _series, "time2vec": _time2vec}[ds.family]
    files = writer(ds, folder, scale, rng)
    (folder / MARKER).write_text(generator_stamp(seed))
    return files


def _stable_id(name: str) -> int:
    return zlib.crc32(name.encode())


# ---------------------------------------------------------------- zip writer (stored/deflate/deflate64)

def write_zip(path: str | Path, members: dict[str, bytes], method: int = 8) -> Path:
    """A plain PKZIP file; method 8 = deflate (zlib), 9 = Deflate64 (inflate64's Deflater)."""
    path = Path(path)
    buf, central = io.BytesIO(), []
    dos_time, dos_date = 0, (2022 - 1980) << 9 | 10 << 5 | 17
    for name, data in members.items():
        if method == 9:
            import inflate64

            d = inflate64.Deflater()
            comp = d.deflate(data) + d.flush()
        elif method == 8:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            comp = c.compress(data) + c.flush()
        else:
            comp = data
        crc, fname, offset = zlib.crc32(data), name.encode(), buf.tell()
        version = 21 if method == 9 else 20
        buf.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", version, 0, method, dos_time, dos_date, crc,
                              len(comp), len(data), len(fname), 0) + fname + comp)
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 0x0314, version, 0, method, dos_time,
                                   dos_date, crc, len(comp), len(data), len(fname), 0, 0, 0, 0, 0o100644 << 16,
                                   offset) + fname)
    cd_start = buf.tell()
    for c in central:
        buf.write(c)
    cd_size = buf.tell() - cd_start
    buf.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central), cd_size, cd_start, 0))
    path.write_bytes(buf.getvalue())
    return path


# ---------------------------------------------------------------- dynamic graphs

def synth_graph(rng: np.random.Generator, n_edges: int, n_nodes: int, bipartite: bool, feat_dim: int,
                clock: str = "unix", n_steps: int = 12, spec: "GraphSpec | None" = None) -> pd.DataFrame:
    """Edges u,i,ts,label,f* of a generated interaction graph with the structure real ones have (`GraphSpec`):
    sessions (bursts) of a heavy-tailed set of active sources, partners repeated with a recency bias, new
    partners drawn by popularity, replies on non-bipartite graphs, and edge features tied to both endpoints."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    spec = spec or GraphSpec()
    n_src = max(2, int(round(n_nodes * spec.source_share))) if bipartite else n_nodes
    n_dst = max(2, n_nodes - n_src) if bipartite else n_nodes
    u, v, t = interactions(rng, n_edges, n_src, n_dst, bipartite, spec)
    if clock == "steps":
        t = np.floor(t / spec.horizon * n_steps)
    else:
        t = np.round(t, 1)
    # contiguous 0-based ids in order of first appearance (DyGLib asserts contiguous ids for bipartite sets)
    if bipartite:
        u, v = _relabel(u), _relabel(v)
    else:
        both = _relabel(np.stack([u, v], 1).ravel()).reshape(-1, 2)
        u, v = both[:, 0], both[:, 1]
    label = burst_labels(u, t)  # labelled state changes for node classification (no rng draw)
    df = pd.DataFrame({"u": u, "i": v, "ts": t, "label": label})
    if feat_dim:
        feats = edge_features(rng, u, v, feat_dim, weighted=feat_dim == 2 or clock == "steps")
        df = pd.concat([df, pd.DataFrame(feats, columns=[f"f{j}" for j in range(feat_dim)])], axis=1)
    return df


@dataclass(frozen=True)
class GraphSpec:
    """What makes a generated interaction graph learnable, each as real interaction graphs have it.

    Every node joins within the first `warmup` of the time span (its first session then, for a source); sources
    start sessions at rates drawn log-normal (a few very active nodes); a session is a burst of `1 + Geometric`
    edges `burst_gap` seconds apart on average, to the session's partner with probability `stay`; a partner is a
    past partner of the source with probability `repeat` (the k-th most recent with weight 1/k: recency), else a
    new one by Zipf popularity among the nodes that have joined; on non-bipartite graphs a partner replies with
    probability `reply`."""

    horizon: float = 30 * 86400.0  # seconds spanned by the graph
    warmup: float = 0.1  # share of the span within which every node joins
    source_share: float = 0.6  # bipartite: share of the nodes that are sources (users)
    activity_sigma: float = 1.0  # log-normal spread of the sources' session rates
    popularity_exponent: float = 1.0  # new partners ~ rank^-exponent
    session_edges: float = 4.0  # mean edges per session (geometric)
    stay: float = 0.8  # an edge of a session goes to the session's partner (else a fresh pick)
    burst_gap: float = 300.0  # mean seconds between the edges of one session
    repeat: float = 0.8  # a fresh pick is a past partner (recency-weighted) when the source has one
    reply: float = 0.3  # non-bipartite: the partner answers
    reply_gap: float = 600.0  # mean seconds before a reply


def interactions(rng: np.random.Generator, n_edges: int, n_src: int, n_dst: int, bipartite: bool,
                 spec: GraphSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, t) of `n_edges` edges in time order, ids 0-based per side (one id space when not bipartite)."""
    activity = rng.lognormal(0.0, spec.activity_sigma, n_src)
    activity /= activity.sum()
    popularity = 1.0 / np.arange(1, n_dst + 1) ** spec.popularity_exponent
    popularity = popularity[rng.permutation(n_dst)]  # which node is popular: at random
    joined = rng.uniform(0, spec.warmup * spec.horizon, n_src)  # join times of the sources
    dst_joined = rng.uniform(0, spec.warmup * spec.horizon, n_dst) if bipartite else joined
    dst_joined[np.argsort(-popularity)[:2]] = 0.0  # two destinations from the start: a first pick always exists
    # the session skeleton: every source's first session when it joins, the others uniform after that; about 10%
    # more edges than needed, so the last ones are cut and the edges span the time evenly
    per_session = spec.session_edges * (1.0 if bipartite else 1.0 + spec.reply)
    n_more = max(0, int(np.ceil(1.1 * n_edges / per_session)) - n_src)
    s_src = np.concatenate([np.arange(n_src), rng.choice(n_src, n_more, p=activity)])
    s_start = np.concatenate([joined[:n_src], rng.uniform(0, 1, n_more)])
    s_start[n_src:] = joined[s_src[n_src:]] + s_start[n_src:] * (spec.horizon - joined[s_src[n_src:]])
    s_len = rng.geometric(1.0 / spec.session_edges, len(s_src))
    # events (time, kind, a, b, session): kind 0 = an edge of a session (its partner picked when it happens),
    # 1 = a reply b -> a
    queue: list = []
    for s in range(len(s_src)):
        gaps = np.concatenate([[0.0], rng.exponential(spec.burst_gap, s_len[s] - 1)])
        queue.extend((float(time_), 0, int(s_src[s]), -1, s) for time_ in s_start[s] + np.cumsum(gaps))
    heapq.heapify(queue)
    history: dict[int, list[int]] = {}  # node -> partners, most recent last
    partner_of_session: dict[int, int] = {}
    out_u, out_v, out_t = [], [], []
    while queue and len(out_t) < n_edges:
        time_, kind, a, b, s = heapq.heappop(queue)
        if kind == 0:
            if s in partner_of_session and rng.uniform() < spec.stay:
                b = partner_of_session[s]
            else:
                weights = popularity * (dst_joined <= time_)
                b = _pick_partner(rng, a, history.get(a, []), weights, bipartite, spec.repeat)
                partner_of_session.setdefault(s, b)
        out_u.append(a); out_v.append(b); out_t.append(time_)
        _remember(history, a, b)
        if not bipartite:
            _remember(history, b, a)
            if kind == 0 and rng.uniform() < spec.reply:
                heapq.heappush(queue, (time_ + float(rng.exponential(spec.reply_gap)), 1, b, a, -1))
    return np.array(out_u, dtype=np.int64), np.array(out_v, dtype=np.int64), np.array(out_t)


def _pick_partner(rng: np.random.Generator, node: int, past: list[int], popularity: np.ndarray, bipartite: bool,
                  repeat: float) -> int:
    """A past partner, the k-th most recent with weight 1/k, with probability `repeat`; else one drawn with
    weights `popularity` (never the node itself on a non-bipartite graph)."""
    if past and rng.uniform() < repeat:
        weights = 1.0 / np.arange(1, len(past) + 1)
        return past[-1 - int(rng.choice(len(past), p=weights / weights.sum()))]
    weights = popularity.copy()
    if not bipartite:
        weights[node] = 0.0
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def _remember(history: dict[int, list[int]], node: int, partner: int) -> None:
    past = history.setdefault(node, [])
    if partner in past:
        past.remove(partner)
    past.append(partner)


def edge_features(rng: np.random.Generator, u: np.ndarray, v: np.ndarray, dim: int, weighted: bool) -> np.ndarray:
    """[E, dim] raw edge features that say something about the edge's endpoints.

    dim 1 without weights: zeros (the set has no features). Weighted sets (counts or vote weights: SocialEvo,
    the yearly graphs): positive, growing with the pair's past interactions. Wider ones (Wikipedia's and
    Reddit's 172 LIWC columns): a latent vector of the destination plus one of the source plus noise."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    if dim == 1 and not weighted:
        return np.zeros((len(u), 1))
    if weighted:
        pair = pd.Series(u * (int(v.max()) + 1) + v)
        seen = pair.groupby(pair).cumcount().to_numpy()  # earlier edges of the same pair
        return np.round(np.log1p(seen)[:, None] + rng.gamma(2.0, 0.25, (len(u), dim)), 3)
    z_src = rng.normal(0, 1, (int(u.max()) + 1, dim))
    z_dst = rng.normal(0, 1, (int(v.max()) + 1, dim))
    return np.round(0.6 * z_dst[v] + 0.3 * z_src[u] + 0.5 * rng.normal(0, 1, (len(u), dim)), 4)


def evaluable(df: pd.DataFrame, bipartite: bool, batch_size: int = 200) -> bool:
    """Whether DyGLib's protocol can score the graph: after its reindexing and split, every part (new-node
    validation and test included) holds edges, and every evaluation sampler
    (random, historical, inductive; val, test and their new-node parts) draws negatives for every batch of
    `batch_size` (the task default). On a small bursty graph a new-node part can hold a single pair, which no
    negative can avoid (DyGLib's sampler would loop forever)."""
    from timerepro.graphs.negatives import STRATEGIES, dyglib_eval_samplers

    new = ctdg.reindex(df.assign(idx=np.arange(len(df))), bipartite)
    data = SimpleNamespace(src=new["u"].to_numpy(), dst=new["i"].to_numpy(), ts=new["ts"].to_numpy())
    split = ctdg.link_prediction_split(data)
    if not all(getattr(split, part).any() for part in ("train", "val", "test", "new_node_val", "new_node_test")):
        return False  # the inductive setting (and swinit's inductive model selection) needs new-node edges
    try:
        for strategy in STRATEGIES:
            for part, sampler in dyglib_eval_samplers(data, split, strategy).items():
                idx = np.flatnonzero(getattr(split, part))
                for start in range(0, len(idx), batch_size):
                    b = idx[start:start + batch_size]
                    sampler.sample_for_batch(data.src[b], data.dst[b], data.ts[b])
    except ValueError:
        return False
    return True


def burst_labels(src: np.ndarray, ts: np.ndarray, ratio: float = 0.25) -> np.ndarray:
    """1.0 on an edge whose source interacted less than `ratio` x its own median gap before, else 0.0.

    The stand-in's state change (JODIE's label is a ban, far too rare for a few hundred edges): a
    source switching into a burst, spread over the whole time span and readable from t - t_prev.
    """
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    gap = pd.Series(ts).groupby(src).diff()  # NaN on each source's first edge
    median = gap.groupby(src).transform("median")
    return (gap < ratio * median).to_numpy(dtype=np.float64)


def _relabel(ids: np.ndarray) -> np.ndarray:
    _, first = np.unique(ids, return_index=True)
    order = ids[np.sort(first)]
    mapping = {int(x): n for n, x in enumerate(order)}
    return np.array([mapping[int(x)] for x in ids], dtype=np.int64)


def graph_csv_bytes(df: pd.DataFrame, jodie_header: bool = True) -> bytes:
    """Upstream raw CSV: one header line, then `u,i,ts,label,f1,...` (Python repr floats)."""
    header = "user_id,item_id,timestamp,state_label,comma_separated_list_of_features"
    lines = [header]
    feats = df.filter(like="f").to_numpy()
    for (u, i, t, lab), f in zip(df[["u", "i", "ts", "label"]].itertuples(index=False), feats):
        lines.append(",".join([str(int(u)), str(int(i)), repr(float(t)), repr(float(lab)), *map(repr, map(float, f))]))
    return ("\n".join(lines) + "\n").encode()


FEATURE_ROWS = 4096  # a paper-size graph's edge features are rows of one table of this many rows (`paper_graph`)


@dataclass(frozen=True)
class FeatureRows:
    """Edge features as rows of one table: edge e has `table[rows[e]]`, so the CSV writer formats the table once
    and joins its rows (Reddit's 672k x 172 values in seconds, where formatting every float took most of the
    40 minutes its stand-in took)."""

    table: np.ndarray  # (R, d) float32
    rows: np.ndarray  # (E,) int64 row of each edge

    def dense(self) -> np.ndarray:
        return self.table[self.rows]  # (E, d)


def paper_graph(rng: np.random.Generator, size: dict, bipartite: bool,
                feat_dim: int) -> tuple[pd.DataFrame, FeatureRows]:
    """Edges u,i,ts,label and the edge features (`FeatureRows`) of a graph of the real set's size, drawn vectorised.

    The cost of a model depends on the size, the degrees and the time stamps, not on what is learnable, so
    this is simpler than `synth_graph`: sources by log-normal activity, each with 8 favourite destinations
    (80% of its edges) drawn by Zipf popularity, the rest by popularity; every id occurs among the first
    edges (DyGLib's reindexing needs every id of each side); times uniform over the span (distinct to 0.1 s,
    as the real sets' timestamps nearly are) or over `steps` steps. Features: zeros for a set without any (one
    column); else a row of a `FEATURE_ROWS`-row Gaussian table picked by the edge's destination and a draw."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    n_edges, n = size["edges"], size["nodes"]
    n_src = size["sources"] if bipartite else n
    n_dst = n - n_src if bipartite else n
    activity = rng.lognormal(0.0, 1.0, n_src)
    popularity = 1.0 / np.arange(1, n_dst + 1)
    popularity = (popularity / popularity.sum())[rng.permutation(n_dst)]
    src = rng.choice(n_src, n_edges, p=activity / activity.sum())
    favourites = rng.choice(n_dst, (n_src, 8), p=popularity)  # (n_src, 8)
    dst = np.where(rng.uniform(size=n_edges) < 0.8, favourites[src, rng.integers(0, 8, n_edges)],
                   rng.choice(n_dst, n_edges, p=popularity))
    src[:n_src] = rng.permutation(n_src)
    dst[:n_dst] = rng.permutation(n_dst)
    if not bipartite:  # no self-loops
        dst = np.where(dst == src, (dst + 1 + rng.integers(0, n - 1, n_edges)) % n, dst)
    if "steps" in size:
        t = np.sort(rng.integers(0, size["steps"], n_edges)).astype(np.float64)
        t[:size["steps"]] = np.arange(size["steps"])  # every step occurs
        t.sort()
    else:
        t = np.round(np.sort(rng.uniform(0, size["span"], n_edges)), 1)
    df = pd.DataFrame({"u": src, "i": dst, "ts": t, "label": burst_labels(src, t)})
    if feat_dim > 1 or "steps" in size:
        table = np.round(rng.standard_normal((FEATURE_ROWS, feat_dim), dtype=np.float32), 4)
        rows = (dst.astype(np.int64) * 31 + rng.integers(0, 16, n_edges)) % FEATURE_ROWS  # (E,): by destination
    else:  # no features: DyGLib's raw format keeps one zero column
        table, rows = np.zeros((1, feat_dim), dtype=np.float32), np.zeros(n_edges, dtype=np.int64)
    return df, FeatureRows(table, rows)


def write_graph_csv(path: Path, df: pd.DataFrame, feats: FeatureRows, chunk: int = 200_000) -> Path:
    """The upstream raw CSV of `graph_csv_bytes` (`u,i,ts,label,f1,...`, Python float reprs, so timestamps stay
    exact), written in chunks of joined strings: each feature row is formatted once."""
    feat_text = [",".join(map(repr, row)) for row in feats.table.astype(np.float64).round(4).tolist()]
    with open(path, "w") as fh:
        fh.write("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n")
        for lo in range(0, len(df), chunk):
            part = df.iloc[lo:lo + chunk]
            cols = (part["u"].tolist(), part["i"].tolist(), part["ts"].astype(float).tolist(),
                    part["label"].astype(float).tolist(), feats.rows[lo:lo + chunk].tolist())
            fh.write("".join(f"{u},{i},{t!r},{lab!r},{feat_text[r]}\n" for u, i, t, lab, r in zip(*cols)))
    return path


def write_zip_files(path: Path, members: dict[str, Path]) -> Path:
    """A stored (uncompressed) PKZIP of files on disk, streamed: the paper-size members do not fit in memory twice."""
    central = []
    with open(path, "wb") as out:
        for name, src in members.items():
            size = src.stat().st_size
            if size >= 2**32:
                raise ValueError(f"{src}: {size} bytes needs zip64, which write_zip_files does not write")
            crc = 0
            with open(src, "rb") as fh:
                while chunk := fh.read(1 << 24):
                    crc = zlib.crc32(chunk, crc)
            fname, offset = name.encode(), out.tell()
            out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0x5551, crc, size, size,
                                  len(fname), 0) + fname)
            with open(src, "rb") as fh:
                while chunk := fh.read(1 << 24):
                    out.write(chunk)
            central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 0x0314, 20, 0, 0, 0, 0x5551, crc, size,
                                       size, len(fname), 0, 0, 0, 0, 0o100644 << 16, offset) + fname)
        cd_start = out.tell()
        for c in central:
            out.write(c)
        out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central),
                              out.tell() - cd_start, cd_start, 0))
    return path


def _paper_ctdg(ds: Dataset, folder: Path, rng) -> dict[str, Path]:
    """The real set's size in its upstream format: the raw CSV in the zip (preprocessed from it as the real
    zip is), or the shipped ml_* files alone for the sets DyGLib ships only those of (copy_shipped)."""
    if ds.name not in PAPER_GRAPHS:
        raise ValueError(f"{ds.name}: no paper size in standins.PAPER_GRAPHS")
    up, bipartite = ds.upstream_name, bool(ds.options.get("bipartite"))
    df, feats = paper_graph(rng, PAPER_GRAPHS[ds.name], bipartite, EDGE_FEAT_DIM.get(up, 1))
    (f,) = ds.files
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        csv = write_graph_csv(Path(tmp) / f"{up}.csv", df, feats)
        del df, feats
        if f.archive is None:  # JODIE original: a bare CSV
            return {f.name: csv.replace(folder / f.name)}
        if ds.options.get("copy_shipped"):
            new, edge_feat, node_feat = ctdg.preprocess(csv, bipartite)
            ctdg.write_dyglib_files(Path(tmp), up, new, edge_feat, node_feat)
            csv.unlink()
            members = {f"{up}/{name}": Path(tmp) / name for name in ctdg.dyglib_names(up).values()}
        else:
            members = {f"{up}/{up}.csv": csv}
        return {f.name: write_zip_files(folder / f.name, members)}


def _ctdg(ds: Dataset, folder: Path, scale: str, rng) -> dict[str, Path]:
    if scale == "paper":
        return _paper_ctdg(ds, folder, rng)
    up = ds.upstream_name
    size = GRAPH_SIZE[scale]
    steps = {"canparl": 14, "uslegis": 12, "untrade": 32, "unvote": 72, "flights": 122}.get(ds.name, 12)
    bipartite = bool(ds.options.get("bipartite"))
    for _ in range(MAX_GRAPH_DRAWS):  # a draw DyGLib's evaluation cannot score is drawn again (seeded: same result)
        df = synth_graph(rng, size["n_edges"], size["n_nodes"], bipartite, EDGE_FEAT_DIM.get(up, 1),
                         ds.options.get("clock", "unix"), steps)
        if evaluable(df, bipartite):
            break
    else:
        raise RuntimeError(f"{ds.name}: no evaluable stand-in in {MAX_GRAPH_DRAWS} draws of {size}")
    raw = graph_csv_bytes(df)
    (f,) = ds.files
    if f.archive is None:  # JODIE original: a bare CSV
        path = folder / f.name
        path.write_bytes(raw)
        return {f.name: path}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / f"{up}.csv"
        csv.write_bytes(raw)
        new, edge_feat, node_feat = ctdg.preprocess(csv, bool(ds.options.get("bipartite")))
        ctdg.write_dyglib_files(Path(tmp), up, new, edge_feat, node_feat)
        members = {f"{up}/{name}": (Path(tmp) / name).read_bytes() for name in ctdg.dyglib_names(up).values()}
    if not ds.options.get("copy_shipped"):
        members[f"{up}/{up}.csv"] = raw
    path = write_zip(folder / f.name, dict(sorted(members.items())), method=9 if up in DEFLATE64_ZIPS else 8)
    return {f.name: path}


# ---------------------------------------------------------------- event sequences

def hawkes_params(rng: np.random.Generator, K: int, branching: float = 0.6):
    """Base rates, a sparse excitation matrix scaled to spectral radius `branching`, one decay rate."""
    mu = rng.uniform(0.05, 0.3, K)
    alpha = rng.uniform(0, 1, (K, K)) * (rng.uniform(0, 1, (K, K)) < min(1.0, 3.0 / K))
    alpha[np.diag_indices(K)] += rng.uniform(0.5, 1.0, K)
    radius = max(np.abs(np.linalg.eigvals(alpha)).max(), 1e-9)
    return mu, alpha * (branching / radius), 2.0


def simulate_hawkes(rng: np.random.Generator, mu: np.ndarray, alpha: np.ndarray, beta: float, n_events: int):
    """Ogata thinning for lambda_k(t) = mu_k + sum_j alpha_kj sum_{t_i^j < t} beta exp(-beta (t - t_i^j))."""
    K = len(mu)
    t, S = 0.0, np.zeros(K)
    times, types = [], []
    while len(times) < n_events:
        lam_bar = float((mu + alpha @ S).sum())  # intensity only decays until the next event: an upper bound
        w = rng.exponential(1.0 / lam_bar)
        t += w
        S = S * np.exp(-beta * w)
        lam = mu + alpha @ S
        if rng.uniform() * lam_bar <= lam.sum():
            k = int(rng.choice(K, p=lam / lam.sum()))
            times.append(t)
            types.append(k)
            S[k] += beta
    return np.array(times), np.array(types, dtype=np.int64)


def hawkes_sequences(rng, K: int, n: int, min_len: int, max_len: int, params=None) -> list[tuple[np.ndarray, np.ndarray]]:
    mu, alpha, beta = params or hawkes_params(rng, K)
    return [simulate_hawkes(rng, mu, alpha, beta, int(rng.integers(min_len, max_len + 1))) for _ in range(n)]


def easytpp_records(seqs, K: int) -> list[dict]:
    """EasyTPP HF JSON records: first dt forced to 0, time_since_start rebased to 0."""
    out = []
    for n, (t, k) in enumerate(seqs):
        dt = np.diff(t, prepend=t[0])
        out.append({"dim_process": K, "seq_idx": n, "seq_len": int(len(t)), "time_since_start": np.cumsum(dt).tolist(),
                    "time_since_last_event": dt.tolist(), "type_event": k.tolist()})
    return out


def _tpp(ds: Dataset, folder: Path, scale: str, rng) -> dict[str, Path]:
    K = int(ds.options["num_event_types"])
    size = PAPER_TPP[ds.name] if scale == "paper" else TPP_SIZE[scale]
    params = hawkes_params(rng, K)
    out = {}
    for split in ("train", "dev", "test"):
        seqs = hawkes_sequences(rng, K, size[split], size["min_len"], size["max_len"], params)
        path = folder / f"{split}.json"
        path.write_text(json.dumps(easytpp_records(seqs, K)))
        out[path.name] = path
    return out


# ---------------------------------------------------------------- time series

def _series(ds: Dataset, folder: Path, scale: str, rng) -> dict[str, Path]:
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    loader = ds.options["loader"]
    n_rows = PAPER_SERIES_ROWS.get(loader, PAPER_SERIES_ROWS.get(ds.name)) if scale == "paper" \
        else SERIES_ROWS[loader][scale]
    n_vars = int(ds.options["n_vars"])
    freq = {"h": "h", "15min": "15min", "d": "D", "10min": "10min"}[ds.options.get("freq", "h")]
    dates = pd.date_range("2016-07-01", periods=n_rows, freq=freq)
    hours = (dates - dates[0]).total_seconds().to_numpy() / 3600.0
    phase = rng.uniform(0, 2 * np.pi, (2, n_vars))
    amp = rng.uniform(0.5, 2.0, (2, n_vars))
    values = (amp[0] * np.sin(2 * np.pi * hours[:, None] / 24 + phase[0])
              + amp[1] * np.sin(2 * np.pi * hours[:, None] / 168 + phase[1])
              + 0.01 * hours[:, None] / 24 + rng.normal(0, 0.3, (n_rows, n_vars)))
    if loader.startswith("ETT"):
        names = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
    else:
        names = [str(j) for j in range(n_vars - 1)] + ["OT"]
    df = pd.DataFrame(np.round(values, 3), columns=names)
    df.insert(0, "date", dates.strftime("%Y-%m-%d %H:%M:%S"))
    (f,) = ds.files
    path = folder / f.name
    df.to_csv(path, index=False)
    return {f.name: path}


# ---------------------------------------------------------------- time2vec

def idx_bytes(array: np.ndarray) -> bytes:
    """Gzipped IDX: magic 2051 for 3-d uint8 images, 2049 for 1-d uint8 labels, big-endian sizes."""
    magic = {3: 2051, 1: 2049}[array.ndim]
    header = struct.pack(f">I{array.ndim}I", magic, *array.shape)
    return gzip.compress(header + array.astype(np.uint8).tobytes(), mtime=0)


def synth_digits(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """28x28 uint8 images; each class has its own stroke template (bright pixels) plus faint noise."""
    templates = []
    for c in range(10):
        img = np.zeros((28, 28))
        r0, c0 = 4 + c % 3 * 3, 4 + c // 3 * 3
        img[r0:r0 + 14, c0 + c % 4:c0 + c % 4 + 3] = 1
        img[r0 + c % 5 * 2:r0 + c % 5 * 2 + 3, c0:c0 + 12] = 1
        templates.append(img)
    labels = rng.integers(0, 10, n)
    imgs = np.stack([templates[y] for y in labels]) * rng.uniform(200, 255, (n, 28, 28))
    imgs = imgs + (rng.uniform(0, 1, (n, 28, 28)) < 0.05) * rng.uniform(0, 255, (n, 28, 28))
    return np.clip(imgs, 0, 255).astype(np.uint8), labels.astype(np.uint8)


def _time2vec(ds: Dataset, folder: Path, scale: str, rng) -> dict[str, Path]:
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    kind = ds.options["kind"]
    out = {}
    if kind == "event_mnist":
        n_train, n_test = MNIST_SIZE[scale]
        for prefix, n in (("train", n_train), ("t10k", n_test)):
            images, labels = paper_digits(rng, n) if scale == "paper" else synth_digits(rng, n)
            for suffix, arr in (("images-idx3-ubyte.gz", images), ("labels-idx1-ubyte.gz", labels)):
                path = folder / f"{prefix}-{suffix}"
                path.write_bytes(idx_bytes(arr))
                out[path.name] = path
        return out
    if kind == "ntidigits" and scale == "paper":
        return {ds.files[0].name: paper_ntidigits(folder / ds.files[0].name, rng)}
    if kind == "ntidigits":
        import h5py

        path = folder / ds.files[0].name
        with h5py.File(path, "w") as h5:
            for part, n in zip(("train", "test"), NTIDIGITS_SIZE[scale]):
                ids = []
                for j in range(n):
                    digit = "o123456789z"[j % 11]
                    sid = f"{part}-spk{j:03d}-{digit}" if j % 7 else f"{part}-spk{j:03d}-{digit}{'o123456789z'[(j + 3) % 11]}"
                    ids.append(sid)
                    n_ev = int(rng.integers(40, 120))
                    center = 4 + 5 * ("o123456789z".index(digit))
                    ch = np.clip(rng.normal(center, 4, n_ev).round(), 0, 63).astype(np.int64)
                    t = np.sort(rng.uniform(0, 0.8, n_ev))
                    h5.create_dataset(f"{part}_addresses/{sid}", data=ch)
                    h5.create_dataset(f"{part}_timestamps/{sid}", data=t)
                h5.create_dataset(f"{part}_labels", data=np.array([s.encode() for s in ids]))
        out[path.name] = path
        return out
    if kind == "gatech_pkl":
        K = int(ds.options["num_event_types"])
        size = PAPER_TPP[ds.name] if scale == "paper" else TPP_SIZE[scale]
        params = hawkes_params(rng, K)
        for split in ("train", "dev", "test"):
            seqs = hawkes_sequences(rng, K, size[split], size["min_len"], size["max_len"], params)
            events = []
            for t, k in seqs:
                last_same: dict[int, float] = {}
                seq = []
                for n, (ti, ki) in enumerate(zip(t.tolist(), k.tolist())):
                    seq.append({"idx_event": n, "time_since_start": ti, "time_since_last_event": ti - (float(t[n - 1]) if n else ti),
                                "time_since_last_same_event": ti - last_same.get(ki, ti), "type_event": ki})
                    last_same[ki] = ti
                events.append(seq)
            path = folder / f"{split}.pkl"
            path.write_bytes(pickle.dumps({"dim_process": K, split: events}, protocol=2))
            out[path.name] = path
        return out
    if kind in ("timelstm_lastfm", "timelstm_citeulike") and scale == "paper":
        write = {"timelstm_lastfm": paper_lastfm_tar, "timelstm_citeulike": paper_citeulike_bz2}[kind]
        return {ds.files[0].name: write(folder / ds.files[0].name, paper_plays(rng, PAPER_NEXT_ITEM[ds.name]), rng)}
    if kind == "timelstm_lastfm":
        n_users = LASTFM_USERS[scale]
        n_tracks = 50 if scale == "smoke" else 800
        popularity = rng.zipf(1.5, n_tracks).astype(float)
        popularity /= popularity.sum()
        lines, profiles = [], ["#id\tgender\tage\tcountry\tregistered"]
        t0 = pd.Timestamp("2008-01-01T00:00:00Z").value // 10**9
        for u in range(n_users):
            uid = f"user_{u + 1:06d}"
            profiles.append(f"{uid}\tm\t\tNowhere\tJan 1, 2008")
            n = int(rng.integers(5, {"smoke": 40, "offline": 400}[scale]))
            period = float(rng.choice([1800, 86400, 7 * 86400]))
            t = t0 + np.cumsum(rng.exponential(period, n)).astype(np.int64)
            tracks = rng.choice(n_tracks, n, p=popularity)
            for ti, tr in sorted(zip(t.tolist(), tracks.tolist()), reverse=True):  # upstream: newest first
                ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ti))
                name = "" if rng.uniform() < 0.02 else f"Track {tr}"
                lines.append(f"{uid}\t{ts}\tart-{tr % 17}\tArtist {tr % 17}\ttrk-{tr}\t{name}")
        path = lastfm_tar(folder / ds.files[0].name, lines, profiles)
        out[path.name] = path
        return out
    if kind == "timelstm_citeulike":
        return {ds.files[0].name: _citeulike(folder / ds.files[0].name, LASTFM_USERS[scale], rng)}
    raise ValueError(f"no stand-in for {ds.name} ({kind})")


def _citeulike(path: Path, n_users: int, rng) -> Path:
    """citeulike's dump `article_id|user_md5|timestamp|tag`, one row per tag of a post, bz2 (the upstream
    `current.bz2`); users post articles of a few weekly-recurring interests."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    import bz2
    import hashlib

    n_articles = 60 if n_users <= 20 else 900
    popularity = rng.zipf(1.6, n_articles).astype(float)
    popularity /= popularity.sum()
    t0 = pd.Timestamp("2007-01-01T00:00:00Z").value // 10**9
    lines = []
    for u in range(n_users):
        user = hashlib.md5(f"user{u}".encode()).hexdigest()
        n = int(rng.integers(4, 30 if n_users <= 20 else 120))
        t = t0 + np.cumsum(rng.exponential(rng.choice([86400.0, 7 * 86400.0]), n)).astype(np.int64)
        for ti, art in zip(t.tolist(), rng.choice(n_articles, n, p=popularity).tolist()):
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ti)) + f".{int(rng.integers(0, 999999)):06d}+00"
            for tag in rng.choice(["time", "rnn", "survey", "graph", "no-tag"], int(rng.integers(1, 4)), replace=False):
                lines.append(f"{1000 + art}|{user}|{stamp}|{tag}")
    path.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    return path


def lastfm_tar(path: Path, lines: list[str], profiles: list[str]) -> Path:
    """Celma's `lastfm-dataset-1K.tar.gz`: the plays TSV (one line per play) and the profiles TSV in its folder."""
    with tarfile.open(path, "w:gz") as tf:
        for name, text in (("userid-timestamp-artid-artname-traid-traname.tsv", "\n".join(lines) + "\n"),
                           ("userid-profile.tsv", "\n".join(profiles) + "\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"lastfm-dataset-1K/{name}")
            info.size, info.mtime = len(data), 0
            tf.addfile(info, io.BytesIO(data))
    return path


# ---------------------------------------------------------------- paper-size time2vec sets (vectorised)

@dataclass(frozen=True)
class Plays:
    """One row per play (Last.fm) or post (CiteULike), in no order: user, item, unix seconds."""

    user: np.ndarray  # (P,) int64 in 0..users-1
    item: np.ndarray  # (P,) int64: 0..vocab-1 the vocabulary's items, above: rare ones
    seconds: np.ndarray  # (P,) int64


def paper_plays(rng: np.random.Generator, size: dict) -> Plays:
    """The rows of a next-item set of the paper's size (`PAPER_NEXT_ITEM`): each of the `vocab` items gets at least
    `floor` rows and `events` rows go to them by Zipf popularity; each of the `rare` items fewer than `floor` rows
    (so TimeLSTM's vocabulary cut keeps exactly the first ones); users by log-normal activity, each at least once."""
    import pandas as pd  # lazily: a run reads processed arrays, never pandas
    vocab, events, users = size["vocab"], size["events"], size["users"]
    floor = max(2, events // vocab // 4)
    weights = 1.0 / np.arange(1, vocab + 1) ** 0.8
    counts = np.maximum(floor, np.floor(weights / weights.sum() * events)).astype(np.int64)  # (vocab,)
    rare = rng.integers(1, min(floor, 6), size["rare"])  # (rare,) each below the vocabulary's floor
    item = rng.permutation(np.concatenate([np.repeat(np.arange(vocab), counts),
                                           np.repeat(vocab + np.arange(size["rare"]), rare)]))
    activity = rng.lognormal(0.0, 1.0, users)
    user = rng.choice(users, len(item), p=activity / activity.sum())
    user[np.flatnonzero(item < vocab)[:users]] = rng.permutation(users)  # every user plays a vocabulary item
    lo, hi = (pd.Timestamp(size[k], tz="UTC").value // 10**9 for k in ("start", "end"))
    return Plays(user.astype(np.int64), item.astype(np.int64), rng.integers(lo, hi, len(item)))


def paper_lastfm_tar(path: Path, plays: Plays, rng: np.random.Generator) -> Path:
    """`paper_plays` as Last.fm 1K's tar: per user newest first (upstream's order), 2% of the rows without a track
    name (upstream has such rows; the preprocessing drops them), artists by track."""
    order = np.lexsort((-plays.seconds, plays.user))  # by user, newest first
    user, item = plays.user[order], plays.item[order]
    stamps = np.datetime_as_string(plays.seconds[order].astype("datetime64[s]"), unit="s")  # (P,) ISO, no zone
    named = rng.uniform(size=len(item)) >= 0.02  # (P,)
    lines = [f"user_{u + 1:06d}\t{s}Z\tart-{i % 997}\tArtist {i % 997}\ttrk-{i}\t{f'Track {i}' if ok else ''}"
             for u, s, i, ok in zip(user.tolist(), stamps.tolist(), item.tolist(), named.tolist())]
    profiles = ["#id\tgender\tage\tcountry\tregistered"] + [f"user_{u + 1:06d}\tm\t\tNowhere\tJan 1, 2008"
                                                           for u in range(int(plays.user.max()) + 1)]
    return lastfm_tar(path, lines, profiles)


def paper_citeulike_bz2(path: Path, plays: Plays, rng: np.random.Generator) -> Path:
    """`paper_plays` as citeulike's `current.bz2`: `article|user_md5|timestamp|tag`, 1-3 tag rows per post (the
    preprocessing's `uniq` folds them), microsecond timestamps as the dump writes them."""
    import bz2
    import hashlib

    md5 = [hashlib.md5(f"user{u}".encode()).hexdigest() for u in range(int(plays.user.max()) + 1)]
    micro = plays.seconds * 1_000_000 + rng.integers(0, 1_000_000, len(plays.item))  # (P,) distinct posts
    stamps = np.datetime_as_string(micro.astype("datetime64[us]"), unit="us")  # 'YYYY-MM-DDTHH:MM:SS.ffffff'
    tags = rng.integers(1, 4, len(plays.item))  # (P,) tag rows per post
    names = ("time", "rnn", "survey", "graph", "no-tag")
    lines = [f"{1000 + i}|{md5[u]}|{s[:10]} {s[11:]}+00|{names[(i + k) % 5]}"
             for u, i, s, n in zip(plays.user.tolist(), plays.item.tolist(), stamps.tolist(), tags.tolist())
             for k in range(n)]
    path.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    return path


def paper_digits(rng: np.random.Generator, n: int, chunk: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """n 28x28 uint8 images whose number of events (pixels above 0.9 x 255) follows the real MNIST's
    (`MNIST_EVENT_QUANTILES`): the brightest pixels along the class's strokes, a grey fringe of half as many."""
    quantiles = MNIST_EVENT_QUANTILES
    if quantiles["events"] is None:
        raise ValueError("MNIST_EVENT_QUANTILES has no event counts")
    templates = np.stack([_digit_template(c) for c in range(10)]).reshape(10, 784)  # (10, 784) 1 on strokes
    labels = rng.integers(0, 10, n)
    k = np.rint(np.interp(rng.uniform(0, 1, n), quantiles["levels"], quantiles["events"])).astype(np.int64)  # (n,)
    images = np.zeros((n, 784), dtype=np.uint8)
    rank = np.arange(784)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        # (b, 784): stroke pixels first (score >= 1), then the rest, in random order within each
        order = np.argsort(-(templates[labels[lo:hi]] + rng.uniform(0, 0.99, (hi - lo, 784))), axis=1)
        kb = k[lo:hi, None]
        value = np.where(rank < kb, rng.integers(230, 256, (hi - lo, 784)),
                         np.where(rank < kb + kb // 2, rng.integers(20, 230, (hi - lo, 784)), 0))  # (b, 784) by rank
        np.put_along_axis(images[lo:hi], order, value.astype(np.uint8), axis=1)
    return images.reshape(n, 28, 28), labels.astype(np.uint8)


def _digit_template(c: int) -> np.ndarray:
    """28x28 0/1 strokes of class c: a vertical and a horizontal bar, 6 pixels wide, placed by the class."""
    img = np.zeros((28, 28))
    r0, c0 = 3 + c % 3 * 2, 3 + c // 3 * 2
    img[r0:r0 + 20, c0 + c % 4:c0 + c % 4 + 6] = 1
    img[r0 + c % 5 * 3:r0 + c % 5 * 3 + 6, c0:c0 + 18] = 1
    return img


def paper_ntidigits(path: Path, rng: np.random.Generator) -> Path:
    """tonic's N-TIDIGITS18 HDF5 with the paper's single-digit utterances (`NTIDIGITS_SIZE["paper"]`), each
    `NTIDIGITS_EVENTS` events (an assumption: see there) on 64 channels around its digit's band, in time order."""
    import h5py

    spec = NTIDIGITS_EVENTS
    with h5py.File(path, "w") as h5:
        for part, n in zip(("train", "test"), NTIDIGITS_SIZE["paper"]):
            digits = rng.integers(0, 11, n)
            counts = np.clip(np.rint(spec["median"] * rng.lognormal(0.0, spec["sigma"], n)), spec["min"], spec["max"])
            counts = counts.astype(np.int64)  # (n,)
            seconds = rng.uniform(*spec["seconds"], n)
            owner = np.repeat(np.arange(n), counts)  # (events,) utterance of each event
            t = rng.uniform(0, 1, len(owner)) * seconds[owner]
            channel = np.clip(np.rint(rng.normal(4 + 5.5 * digits[owner], 6)), 0, 63).astype(np.int64)
            order = np.lexsort((t, owner))  # by utterance, then time
            t, channel = t[order], channel[order]
            ptr = np.concatenate([[0], np.cumsum(counts)])
            ids = [f"{part}-s{j:05d}-{'o123456789z'[d]}" for j, d in enumerate(digits.tolist())]
            for j, sid in enumerate(ids):
                h5.create_dataset(f"{part}_addresses/{sid}", data=channel[ptr[j]:ptr[j + 1]])
                h5.create_dataset(f"{part}_timestamps/{sid}", data=t[ptr[j]:ptr[j + 1]])
            h5.create_dataset(f"{part}_labels", data=np.array([s.encode() for s in ids]))
    return path
