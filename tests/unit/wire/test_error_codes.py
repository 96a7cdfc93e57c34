"""Kafka's error code table: codes, names, retriability, and unknown codes."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    # kafka-python 3.0.12 loads its schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors

from quorum.wire.error_codes import Errors

# Java's CorruptRecordException is a RetriableException; kafka-python does not
# mark CORRUPT_MESSAGE retriable.  We follow Kafka's Java definition.
KNOWN_DIFFERENCES = {Errors.CORRUPT_MESSAGE}


def test_codes_and_names_are_kafkas() -> None:
    assert Errors.UNKNOWN_SERVER_ERROR == -1
    assert Errors.NONE == 0
    assert Errors.NOT_LEADER_OR_FOLLOWER == 6
    assert Errors.UNSUPPORTED_VERSION == 35
    assert Errors.NOT_CONTROLLER == 41
    assert Errors.FENCED_LEADER_EPOCH == 74
    assert Errors.INCONSISTENT_CLUSTER_ID == 104
    assert Errors.INVALID_VOTER_KEY == 125


def test_the_table_has_every_code_without_gaps() -> None:
    assert sorted(e.value for e in Errors) == list(range(-1, max(Errors) + 1))
    assert max(Errors) >= 128


def test_retriable_codes_match_kafkas_retriable_exceptions() -> None:
    assert Errors.NOT_LEADER_OR_FOLLOWER.retriable
    assert Errors.NOT_CONTROLLER.retriable
    assert Errors.REQUEST_TIMED_OUT.retriable
    assert not Errors.UNSUPPORTED_VERSION.retriable
    assert not Errors.INCONSISTENT_CLUSTER_ID.retriable
    assert not Errors.NONE.retriable


def test_retriability_agrees_with_kafka_python_where_both_know_the_code() -> None:
    theirs = {}
    for name in dir(kafka_errors):
        cls = getattr(kafka_errors, name)
        if isinstance(cls, type) and issubclass(cls, kafka_errors.BrokerResponseError):
            errno = getattr(cls, "errno", None)
            if errno is not None:
                theirs[errno] = bool(getattr(cls, "retriable", False))
    assert len(theirs) > 100
    disagreements = {
        Errors(code) for code, retriable in theirs.items()
        if code in Errors._value2member_map_ and Errors(code).retriable != retriable
    }
    assert disagreements == KNOWN_DIFFERENCES
    assert set(theirs) <= {e.value for e in Errors}


def test_unknown_codes_read_as_unknown_server_error() -> None:
    assert Errors.from_code(6) is Errors.NOT_LEADER_OR_FOLLOWER
    assert Errors.from_code(32000) is Errors.UNKNOWN_SERVER_ERROR
    assert Errors.from_code(-7) is Errors.UNKNOWN_SERVER_ERROR
