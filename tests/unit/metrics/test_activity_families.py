"""A node's activity in the text format: rendered, checked line by line against the
families it declares, and parsed back to the figures it was built from."""

from __future__ import annotations

import math
import random
import re

from quorum.log import MemoryLog
from quorum.metrics import (
    NodeActivity,
    NodeMetrics,
    activity_families,
    controller_event_families,
    parse_samples,
    render,
)
from quorum.raft import RaftCore
from tests.unit.broker.records import fold, metadata_version

EVENTS = "kafka_controller_controllereventmanager_"
_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_]\w*="(?:[^"\\]|\\.)*",?)*\})? (\S+)')


def declared_names(text: str) -> dict[str, str]:
    """Each sample name the ``# TYPE`` lines allow -> its family's type."""
    allowed = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            allowed[name] = kind
            if kind == "summary":
                allowed[f"{name}_sum"] = allowed[f"{name}_count"] = kind
    return allowed


def check_format(text: str) -> None:
    """Every line a comment or a sample of a declared family, with a number for a value."""
    allowed = declared_names(text)
    for line in text.splitlines():
        if line.startswith("#"):
            assert line.startswith(("# HELP ", "# TYPE ")), line
            continue
        match = _SAMPLE.fullmatch(line)
        assert match is not None, line
        assert match.group(1) in allowed, f"{line}: no # TYPE line for it"
        float(match.group(3))


def busy_activity() -> NodeActivity:
    activity = NodeActivity()
    activity.record_stall(0.250, 30.0)
    activity.record_stall(0.003, 150.0)
    activity.record_slice("replay", 1000, 0.020, 100.0)
    activity.record_slice("replay", 1500, 0.004, 101.0)
    activity.record_slice("snapshot-write", 800, 0.060, 102.0)
    for i in range(1, 101):
        activity.record_controller_event(queue_ms=float(i), processing_ms=0.5, now_s=140.0)
    for second in range(10):
        activity.record_applied(300, 141.0 + second)
    return activity


def test_the_activity_renders_in_the_text_format_and_parses_back() -> None:
    snapshot = busy_activity().snapshot(151.0)
    text = render(activity_families(snapshot) + controller_event_families(snapshot))
    check_format(text)
    samples = parse_samples(text)
    assert samples['pykraft_event_loop_max_stall_ms{window="all"}'] == 250.0
    assert samples['pykraft_event_loop_max_stall_ms{window="1m"}'] == 3.0
    assert samples['pykraft_work_slices_total{kind="replay"}'] == 2
    assert samples['pykraft_work_slice_units_total{kind="replay"}'] == 2500
    assert samples['pykraft_work_slices_over_bound_total{kind="replay"}'] == 1
    assert samples['pykraft_work_slices_over_bound_total{kind="snapshot-write"}'] == 1
    assert samples['pykraft_work_slice_max_units{kind="replay",window="all"}'] == 1500
    assert samples['pykraft_work_slice_max_ms{kind="snapshot-write",window="1m"}'] == 60.0
    assert samples[f'{EVENTS}eventqueuetimems{{quantile="0.5"}}'] == 50.0
    assert samples[f'{EVENTS}eventqueuetimems{{quantile="0.99"}}'] == 99.0
    assert samples[f"{EVENTS}eventqueuetimems_count"] == 100
    assert samples[f"{EVENTS}eventqueuetimems_sum"] == 5050.0
    assert samples[f'{EVENTS}eventqueuetimems_max{{window="all"}}'] == 100.0
    assert samples[f'{EVENTS}eventqueueprocessingtimems{{quantile="0.95"}}'] == 0.5
    assert samples["pykraft_metadata_records_applied_total"] == 3000
    assert samples["pykraft_metadata_records_applied_per_second"] == 300.0
    types = declared_names(text)
    assert types[f"{EVENTS}eventqueuetimems"] == "summary"
    assert types["pykraft_metadata_records_applied_total"] == "counter"
    assert types["pykraft_event_loop_max_stall_ms"] == "gauge"


def test_a_quiet_node_renders_empty_families_and_nan_quantiles() -> None:
    snapshot = NodeActivity().snapshot(0.0)
    text = render(activity_families(snapshot) + controller_event_families(snapshot))
    check_format(text)
    samples = parse_samples(text)
    assert samples['pykraft_event_loop_max_stall_ms{window="1m"}'] == 0.0
    assert not any(k.startswith("pykraft_work_slice") for k in samples)
    assert "# TYPE pykraft_work_slice_max_ms gauge\n" in text
    assert math.isnan(samples[f'{EVENTS}eventqueuetimems{{quantile="0.5"}}'])
    assert samples[f"{EVENTS}eventqueuetimems_count"] == 0


def core() -> RaftCore:
    return RaftCore(node_id=1, voters=[1], log=MemoryLog(), cluster_id="c",
                    rng=random.Random(0), now_ms=0)


async def test_node_metrics_show_the_activity_on_every_node_and_event_times_on_controllers() -> None:
    activity = busy_activity()
    image = fold([metadata_version()])
    broker = NodeMetrics(core=core, image=lambda: image, activity=activity, clock=lambda: 151.0)
    controller = NodeMetrics(core=core, image=lambda: image, activity=activity,
                             controller_active=lambda: True, clock=lambda: 151.0)
    on_broker, on_controller = parse_samples(await broker.text()), parse_samples(await controller.text())
    for samples in (on_broker, on_controller):
        assert samples['pykraft_event_loop_max_stall_ms{window="1m"}'] == 3.0
    assert not any(k.startswith(EVENTS) for k in on_broker)
    assert on_controller[f"{EVENTS}eventqueuetimems_count"] == 100
    check_format(await controller.text())
