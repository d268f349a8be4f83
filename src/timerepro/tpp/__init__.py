"""Temporal point processes, EasyTPP's conventions: padded batches, log-likelihood with a sampled integral,
thinning predictions, metrics registered with their direction, one epoch of training and one evaluation.

A model meets the protocol described in `timerepro.tpp.likelihood` (pad_token_id, encode, intensities_at).
"""

from timerepro.tpp.batch import Batch, collate, iterate_batches
from timerepro.tpp.likelihood import LogLikelihood, log_likelihood
from timerepro.tpp.loop import evaluate, train_epoch
from timerepro.tpp.metrics import METRICS, Metric, Predictions, compute
from timerepro.tpp.thinning import ThinningConfig, draw_next_dtimes, predict_next

__all__ = ["Batch", "collate", "iterate_batches", "LogLikelihood", "log_likelihood", "evaluate", "train_epoch",
           "METRICS", "Metric", "Predictions", "compute", "ThinningConfig", "draw_next_dtimes", "predict_next"]
