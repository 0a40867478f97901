"""The package-level cycle check of ``make lint`` (tools/import_contracts.py) holds for the project and fails on a loop."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

from tools.import_contracts import AcyclicPackagesContract


def check(*packages: str, containers: list[str]):
    graph = grimp.build_graph(*packages, cache_dir=None)
    contract = AcyclicPackagesContract("packages", {}, {"containers": containers})
    return contract.check(graph, verbose=False)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A package ``shop`` with ``orders`` and ``billing``: ``orders.services`` imports ``billing.rules``."""

    def write(path: str, text: str = "") -> None:
        file = tmp_path / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)

    for package in ("shop", "shop/orders", "shop/billing"):
        write(f"{package}/__init__.py")
    write("shop/orders/services.py", "from shop.billing import rules\n")
    write("shop/billing/rules.py", "LIMIT = 1\n")
    write("shop/billing/views.py", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield write
    for name in [name for name in sys.modules if name == "shop" or name.startswith("shop.")]:
        del sys.modules[name]


def test_packages_that_import_one_way_keep_the_contract(tree) -> None:
    assert check("shop", containers=["shop"]).kept


def test_a_lazy_import_back_through_another_module_breaks_it_and_names_the_loop(tree) -> None:
    # No module reaches itself (billing.views -> orders.services -> billing.rules), but the packages do.
    tree("shop/billing/views.py", "def page():\n    from shop.orders import services\n")
    result = check("shop", containers=["shop"])
    assert not result.kept
    (cycle,) = result.metadata["cycles"]
    assert cycle == [
        "shop.billing -> shop.orders  (shop.billing.views -> shop.orders.services)",
        "shop.orders -> shop.billing  (shop.orders.services -> shop.billing.rules)",
    ]


def test_the_project_has_no_package_loop() -> None:
    result = check("inbox", "agents", "config", containers=["inbox", "agents", "config"])
    assert result.kept, result.metadata["cycles"]
