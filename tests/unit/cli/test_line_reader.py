"""``cli.line_reader``: lines into records as Kafka's LineMessageReader reads them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.console_properties import ConsoleOptionError
from cli.line_reader import (
    LineFormatError,
    LineReaderConfig,
    LineRecord,
    LineSplitter,
    parse_line,
)


def config(**properties: str) -> LineReaderConfig:
    return LineReaderConfig.from_properties({k.replace("_", "."): v for k, v in properties.items()})


def test_by_default_the_whole_line_is_the_value_without_key_or_headers() -> None:
    assert parse_line(config(), "a\tb:c", 1) == LineRecord(key=None, value=b"a\tb:c")


def test_parse_key_splits_at_the_first_key_separator() -> None:
    assert parse_line(config(parse_key="true"), "k\tv\tw", 1) == LineRecord(b"k", b"v\tw")
    assert parse_line(config(parse_key="TRUE ", key_separator="::"), "k::v", 1) == LineRecord(
        b"k", b"v"
    )


def test_a_line_without_the_key_separator_is_an_error_naming_the_line() -> None:
    with pytest.raises(LineFormatError, match="No key separator found on line number 7: 'kv'"):
        parse_line(config(parse_key="true"), "kv", 7)


def test_ignore_error_turns_a_missing_key_separator_into_a_null_key() -> None:
    reader = config(parse_key="true", ignore_error="true")
    assert parse_line(reader, "kv", 1) == LineRecord(key=None, value=b"kv")


def test_headers_come_first_then_the_key_then_the_value() -> None:
    reader = config(parse_key="true", parse_headers="true")
    assert parse_line(reader, "h1:v1,h2:v2\tkey\tvalue", 1) == LineRecord(
        key=b"key", value=b"value", headers=(("h1", b"v1"), ("h2", b"v2"))
    )


def test_header_separators_are_configurable() -> None:
    reader = config(parse_headers="true", headers_delimiter="|", headers_separator=";",
                    headers_key_separator="=")
    assert parse_line(reader, "a=1;b=x=y|value", 1) == LineRecord(
        key=None, value=b"value", headers=(("a", b"1"), ("b", b"x=y"))
    )


def test_headers_separator_is_a_regular_expression_and_trailing_empties_go() -> None:
    reader = config(parse_headers="true", headers_separator="[,;]")
    assert parse_line(reader, "a:1;b:2,\tv", 1).headers == (("a", b"1"), ("b", b"2"))


def test_a_header_pair_without_its_separator_is_an_error_or_a_null_value() -> None:
    with pytest.raises(LineFormatError, match="No header key separator found in pair 'b'"):
        parse_line(config(parse_headers="true"), "a:1,b\tv", 3)
    lenient = config(parse_headers="true", ignore_error="true")
    assert parse_line(lenient, "a:1,b\tv", 3).headers == (("a", b"1"), ("b", None))


def test_a_missing_headers_delimiter_is_an_error_or_no_headers() -> None:
    with pytest.raises(LineFormatError, match="No headers delimiter found on line number 2"):
        parse_line(config(parse_headers="true"), "value", 2)
    assert parse_line(config(parse_headers="true", ignore_error="true"), "value", 2) == LineRecord(
        key=None, value=b"value"
    )


def test_null_marker_makes_key_value_header_values_and_the_header_list_null() -> None:
    reader = config(parse_key="true", parse_headers="true", null_marker="<null>")
    assert parse_line(reader, "h:<null>\t<null>\t<null>", 1) == LineRecord(
        key=None, value=None, headers=(("h", None),)
    )
    assert parse_line(reader, "<null>\tk\tv", 1) == LineRecord(key=b"k", value=b"v")


def test_a_header_key_equal_to_the_null_marker_is_an_error() -> None:
    reader = config(parse_headers="true", null_marker="N")
    with pytest.raises(LineFormatError, match="Header keys should not be equal to the null marker"):
        parse_line(reader, "N:1\tv", 1)


def test_text_is_sent_as_utf8() -> None:
    assert parse_line(config(parse_key="true"), "clé\tvaleur ✓", 1) == LineRecord(
        "clé".encode(), "valeur ✓".encode()
    )


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"headers.delimiter": ","}, "headers.delimiter and headers.separator may not be equal"),
        ({"headers.delimiter": ":"}, "headers.delimiter and headers.key.separator may not be equal"),
        ({"headers.separator": ":"}, "headers.separator and headers.key.separator may not be equal"),
        ({"null.marker": "\t"}, "null.marker and key.separator may not be equal"),
        ({"null.marker": ","}, "null.marker and headers.separator may not be equal"),
        ({"null.marker": ":"}, "null.marker and headers.key.separator may not be equal"),
        ({"key.separator": "|", "null.marker": "\t"},
         "null.marker and headers.delimiter may not be equal"),
        ({"parse.keys": "true"}, "Unknown --property parse.keys"),
        ({"headers.separator": "("}, "headers.separator is not a valid regular expression"),
    ],
)
def test_ambiguous_or_unknown_properties_are_refused_with_kafkas_words(
    properties: dict[str, str], message: str
) -> None:
    with pytest.raises(ConsoleOptionError, match=message.replace("(", r"\(")):
        LineReaderConfig.from_properties(properties)


# -- LineSplitter ----------------------------------------------------------------------------


def split_all(data: bytes, cuts: list[int]) -> list[str]:
    splitter, lines, start = LineSplitter(), [], 0
    for cut in sorted(cuts):
        lines += splitter.feed(data[start:cut])
        start = cut
    lines += splitter.feed(data[start:])
    return lines + splitter.finish()


def test_lines_end_at_lf_crlf_or_cr_and_a_last_line_needs_no_end() -> None:
    assert split_all(b"a\nb\r\nc\rd", []) == ["a", "b", "c", "d"]
    assert split_all(b"a\n\nb\n", []) == ["a", "", "b"]
    assert split_all(b"", []) == []


def test_a_crlf_cut_between_chunks_is_one_line_end() -> None:
    assert split_all(b"a\r\nb", [2]) == ["a", "b"]


def test_bad_utf8_is_replaced_not_fatal() -> None:
    assert split_all(b"ok\xff\n", []) == ["ok\ufffd"]


@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=8), max_size=8),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_chunking_never_changes_the_lines(
    texts: list[str], end: str, cuts: list[int]
) -> None:
    lines = [t.replace("\r", "").replace("\n", "") for t in texts]
    data = "".join(line + end for line in lines).encode()
    assert split_all(data, [c for c in cuts if c <= len(data)]) == lines


@given(
    key=st.text(min_size=0, max_size=6).filter(lambda s: "\t" not in s),
    value=st.text(max_size=10),
    headers=st.lists(
        st.tuples(st.text(max_size=4).filter(lambda s: not set(s) & set(",:\t")),
                  st.text(max_size=4).filter(lambda s: not set(s) & set(",\t"))),
        min_size=1, max_size=4,
    ),
)
def test_a_line_written_with_the_separators_reads_back_as_its_parts(
    key: str, value: str, headers: list[tuple[str, str]]
) -> None:
    line = ",".join(f"{k}:{v}" for k, v in headers) + "\t" + key + "\t" + value
    record = parse_line(config(parse_key="true", parse_headers="true"), line, 1)
    assert record == LineRecord(
        key=key.encode(), value=value.encode(),
        headers=tuple((k, v.encode()) for k, v in headers),
    )
