"""Project-wide pytest options: tests marked `network` talk to real upstream hosts and run only with --run-network."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-network", action="store_true", default=False,
                     help="run tests marked @pytest.mark.network (they download from the real upstream hosts)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-network"):
        return
    skip = pytest.mark.skip(reason="needs the real network: pass --run-network")
    for item in items:
        if "network" in item.keywords:
            item.add_marker(skip)
