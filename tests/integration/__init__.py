"""The integration layer: real controller processes on loopback (``deploy.LocalCluster``).

    pytest tests/integration          # or: scripts/test integration

Elections and failover (kill -9, SIGSTOP), link partitions through
``deploy.LinkProxy``, ``kraft metadata-quorum`` output against a live
quorum, and bad input at a live node. Every wait polls with a deadline.
"""

__all__: list[str] = []
