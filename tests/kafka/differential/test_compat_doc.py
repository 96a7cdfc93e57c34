"""docs/compat.md is what the repository's data writes, and the corpus covers every API."""

from __future__ import annotations

from quorum.wire.api_keys import ApiKey
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS

from .cases import CASES
from .known import KNOWN
from .report import COMPAT_PATH, render

RAFT_KEYS = {ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH,
             ApiKey.FETCH_SNAPSHOT, ApiKey.DESCRIBE_QUORUM}


def test_compat_doc_is_up_to_date() -> None:
    assert COMPAT_PATH.read_text() == render(), (
        "docs/compat.md is stale: run python -m tests.kafka.differential.report")


def test_every_advertised_api_key_has_a_case() -> None:
    covered = {case.api_key for case in CASES if case.listener == "broker"}
    advertised = {key for key in CLIENT_LISTENER_VERSIONS if key < ApiKey.PYKRAFT_APPEND}
    assert advertised - covered == set()


def test_every_raft_rpc_has_a_controller_case() -> None:
    covered = {case.api_key for case in CASES if case.listener == "controller"}
    assert RAFT_KEYS - covered == set()


def test_every_case_runs_at_versions_its_listener_advertises() -> None:
    from quorum.wire.apis import CONTROLLER_LISTENER_VERSIONS

    for case in CASES:
        table = CLIENT_LISTENER_VERSIONS if case.listener == "broker" else \
            CONTROLLER_LISTENER_VERSIONS
        low, high = table[case.api_key]
        assert all(low <= v <= high for v in case.run_versions()), case.name


def test_case_names_are_unique_and_every_known_difference_names_a_case() -> None:
    import re

    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    ids = [case_id for case in CASES for case_id in case.ids()]
    for known in KNOWN:
        assert any(re.fullmatch(known.cases, case_id) for case_id in ids), known.name
