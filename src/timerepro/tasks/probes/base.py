"""The one signature of an evaluation probe: `probe(trained, config, ctx) -> dict` of extra metrics (artifacts
written through `ctx.dir`), given the trained model and what it was evaluated on; on when `wants(config)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from timerepro.graphs.neighbors import EVAL_NEIGHBOR_SEED, neighbor_rng
from timerepro.models.graph.memory import stream_state


@dataclass(frozen=True)
class Trained:
    """The selected link-prediction model after the test evaluation (its stream state backed up as `val_end`),
    the data, its split, the full graph, and the task's evaluation `evaluate(idx, sampler, graph, batch_size)`."""

    model: object  # tasks.link_prediction.LinkPredictionModel
    data: object  # data.ctdg.CTDGData
    split: object  # data.ctdg.LinkSplit
    graph: object  # graphs.neighbors.TemporalNeighbors over every edge
    evaluate: Callable[..., dict]

    def start_pass(self) -> None:
        """A pass over test edges as the test evaluation starts it: eval mode, the stream state at the end of
        validation, the evaluation's neighbour stream."""
        self.model.eval()
        stream_state(self.model.backbone).restore_state("val_end")
        self.model.backbone.set_graph(self.graph, neighbor_rng(EVAL_NEIGHBOR_SEED))


@dataclass(frozen=True)
class Probe:
    wants: Callable[[dict], bool]  # config -> whether the run asked for this probe
    run: Callable[[Trained, dict, object], dict]  # (trained, config, ctx) -> extra metrics
