"""The seeded simulation of partition replication on the production replica core.

``pytest tests/sim/replication --seed N`` replays one seed; ``--sim-seeds 1000``
runs more. See ``test_replication_sim`` for what a run does and checks.
"""
