"""Seeds for the simulation layer.

Every test that takes a ``seed`` argument runs once per seed:

* default: seeds ``0 .. N-1`` with N from the test's ``sim_seeds(N)`` marker,
  else ``DEFAULT_SEEDS``;
* ``--sim-seeds COUNT`` (and ``--sim-first-seed S``): a longer or different run;
* ``--seed N``: exactly seed N, which replays a failure event for event.

A failed seeded test prints the command that replays it.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

# the layer's three-minute budget: 179 s at 30 seeds on 2026-11-29; more with --sim-seeds
DEFAULT_SEEDS = 27


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simulation", "deterministic Raft simulation (tests/sim)")
    group.addoption("--seed", type=int, default=None, help="run only this seed (replay)")
    group.addoption("--sim-seeds", type=int, default=None, help="seeds per simulation test")
    group.addoption("--sim-first-seed", type=int, default=0, help="first seed of the range")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sim_seeds(count): default number of seeds of a test")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" not in metafunc.fixturenames:
        return
    # getoption with a default: this conftest is not always loaded before option parsing
    only = metafunc.config.getoption("seed", None)
    if only is not None:
        metafunc.parametrize("seed", [only])
        return
    marker = metafunc.definition.get_closest_marker("sim_seeds")
    count = metafunc.config.getoption("sim_seeds", None)
    if count is None:
        count = marker.args[0] if marker is not None else DEFAULT_SEEDS
    first = metafunc.config.getoption("sim_first_seed", 0) or 0
    metafunc.parametrize("seed", range(first, first + count))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    params = getattr(getattr(item, "callspec", None), "params", {})
    if report.failed and "seed" in params:
        test = item.nodeid.split("[", 1)[0]
        report.sections.append(
            ("simulation seed", f"replay with: pytest '{test}' --seed {params['seed']}")
        )
    return report
