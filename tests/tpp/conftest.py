"""One torch thread per test: these tensors are tiny, and the machine may be shared."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def resolved(model: str, **overrides) -> dict:
    """A model's config as a run resolves it (task defaults < model defaults < overrides): builders read every
    key from it, params/ being the one place of each default."""
    from timerepro import registry

    reg = registry.load()
    return {"model": model, **reg.tasks["temporal_point_process"]["defaults"], **reg.models[model]["defaults"],
            **overrides}
