"""Run one scenario for one seed: world, safety phase, liveness phase.

A failure raises ``SimError`` with the seed, the cluster's state and the last
events; the conftest adds the exact command that replays it.
"""

from __future__ import annotations

import random

from .driver import SimNode
from .liveness import require_convergence
from .scenarios import SCENARIOS
from .simulator import SimError, Simulation

__all__ = ["run_scenario", "simulation_for"]


def simulation_for(name: str, seed: int, *, node_class: type[SimNode] = SimNode) -> Simulation:
    scenario = SCENARIOS[name]
    world = scenario.make_world(random.Random(f"{name}/{seed}/world"))
    return Simulation(f"{name}/{seed}", world, node_class=node_class)


def run_scenario(name: str, seed: int, *, node_class: type[SimNode] = SimNode) -> Simulation:
    sim = simulation_for(name, seed, node_class=node_class)
    try:
        SCENARIOS[name].safety(sim)
        require_convergence(sim)
    except Exception as error:  # a core exception is a failure of the run too
        raise SimError(sim.failure_report(error)) from error
    return sim
