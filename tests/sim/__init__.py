"""The deterministic simulation layer: the real Raft core under seeded faults.

``simulator.Simulation`` runs 3-5 voters and 0-3 observers of ``RaftCore``
over a simulated network (``network``), disk (``disk``) and clock
(``events``), each node behind a driver that follows the Ready contract
(``driver``). ``invariants`` are checked after every event; ``scenarios``
are the safety phases and ``liveness`` the convergence phase after them.

Runs (from the repository root):

    pytest tests/sim                                 # CI: 40 seeds per scenario
    pytest tests/sim --seed 1234                     # replay seed 1234 of every test
    pytest 'tests/sim/test_scenarios.py::test_a_random_mix_of_faults_is_safe' --seed 7
    pytest tests/sim/test_scenarios.py --sim-seeds 2000              # a long run
    pytest tests/sim/test_scenarios.py --sim-seeds 500 --sim-first-seed 100000
    python -m tests.sim.failover 50                  # failure-detection figures

The same seed gives the same event trace (``test_determinism``).
"""

__all__: list[str] = []
