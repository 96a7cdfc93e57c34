"""Gauges in Prometheus' text exposition format (version 0.0.4).

A ``Family`` is one metric name with its help text, its type (gauge, counter
or summary) and its samples (each a label set and a value; a summary's
``_sum`` and ``_count`` samples carry that suffix); ``render`` writes
families one after the other, each with one ``# HELP`` and one ``# TYPE``
line, escaping what the format asks to be escaped (backslash and newline in
help texts; backslash, double quote and newline in label values).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

__all__ = ["CONTENT_TYPE", "Family", "Sample", "gauge", "parse_samples", "render"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
_NAME: Final = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_TYPES: Final = frozenset({"gauge", "counter", "summary"})


@attrs.frozen
class Sample:
    labels: Mapping[str, str]
    value: float
    suffix: str = ""  # appended to the family's name: a summary's "_sum" and "_count"


@attrs.frozen
class Family:
    name: str = attrs.field()
    help: str
    samples: tuple[Sample, ...]
    type: str = attrs.field(default="gauge")

    @name.validator
    def _check_name(self, _attribute: object, value: str) -> None:
        assert _NAME.fullmatch(value), f"{value!r} is not a metric name"

    @type.validator
    def _check_type(self, _attribute: object, value: str) -> None:
        assert value in _TYPES, f"{value!r} is not one of the types {sorted(_TYPES)}"


def gauge(name: str, help_text: str, value: float, **labels: str) -> Family:
    """A gauge with one sample."""
    return Family(name, help_text, (Sample(labels, value),))


def _value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _sample_line(family: str, sample: Sample) -> str:
    name = family + sample.suffix
    if not sample.labels:
        return f"{name} {_value(sample.value)}"
    for label in sample.labels:
        assert _LABEL.fullmatch(label), f"{label!r} is not a label name"
    labels = ",".join(f'{k}="{_label_value(v)}"' for k, v in sample.labels.items())
    return f"{name}{{{labels}}} {_value(sample.value)}"


def render(families: Iterable[Family]) -> str:
    """The text a scraper reads: every family, each line ended by a newline."""
    lines = []
    for family in families:
        help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"# HELP {family.name} {help_text}")
        lines.append(f"# TYPE {family.name} {family.type}")
        lines.extend(_sample_line(family.name, s) for s in family.samples)
    return "".join(f"{line}\n" for line in lines)


def parse_samples(text: str) -> dict[str, float]:
    """``name`` or ``name{labels}`` (as written) -> value, for every sample line of ``text``.

    For tools and tests reading our own output; comments and blank lines are skipped.
    """
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples
