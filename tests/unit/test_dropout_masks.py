"""The synthetic task's step masks, cut in one op over the step's slice, equal the site-by-site masks bitwise."""

import numpy as np
import pytest
import torch

from timerepro.models.seq.transformer import SyntheticSequenceClassifier
from timerepro.tasks.sequence_classification import _dropout_masks


def _dropout_masks_per_site(uniforms, offset, model, batch, n_events, p):
    """The former cut (one slice, compare, cast, divide and view per site): the reference."""
    masks = []
    for shape in model.dropout_shapes(batch, n_events):
        size = int(np.prod(shape))
        u = uniforms[:, offset : offset + size]
        masks.append(((u >= p).float() / (1 - p)).view(len(uniforms), *shape))
        offset += size
    return masks, offset


@pytest.mark.parametrize("d_time,layers,members,p", [(2, 1, 1, 0.1), (4, 2, 3, 0.3), (8, 3, 10, 0.5)])
def test_masks_equal_site_by_site(d_time, layers, members, p):
    model = SyntheticSequenceClassifier(encoder="linear", d_time=d_time, layers=layers, attention="causal",
                                        dropout=p)
    n_events, batches = 5, [7, 7, 3]  # a short last batch, as at an epoch's end
    total = sum(int(np.prod(s)) for b in batches for s in model.dropout_shapes(b, n_events))
    uniforms = torch.rand(members, total, generator=torch.Generator().manual_seed(d_time))
    offset = ref_offset = 0
    for b in batches:
        masks, offset = _dropout_masks(uniforms, offset, model, b, n_events, p)
        ref, ref_offset = _dropout_masks_per_site(uniforms, ref_offset, model, b, n_events, p)
        assert offset == ref_offset
        assert len(masks) == len(ref) == 3 * layers
        for m, r in zip(masks, ref):
            assert m.shape == r.shape and torch.equal(m, r)
    assert offset == total


@pytest.mark.parametrize("p", [0.05, 0.1, 0.2, 1 / 3, 0.5, 0.7, 0.9])
def test_keep_scale_rounds_as_the_division(p):
    """`mask * _keep_scale(p)` is `mask / (1 - p)` bit for bit, for any dropout rate."""
    from timerepro.tasks.sequence_classification import _keep_scale

    keep = (torch.rand(4, 1000, generator=torch.Generator().manual_seed(0)) >= p).float()
    assert torch.equal(keep * _keep_scale(p), keep / (1 - p))
