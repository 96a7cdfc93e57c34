"""Java .properties syntax: what java.util.Properties.load reads, and store writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.config import (
    ConfigError,
    format_properties,
    parse_properties,
    parse_property_entries,
    read_properties_file,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a\tb", {"a": "b"}),
        ("  a  =  b", {"a": "b"}),
        ("a = = b", {"a": "= b"}),
        ("a : : b", {"a": ": b"}),
        ("a  : b", {"a": "b"}),
        ("a=", {"a": ""}),
        ("a", {"a": ""}),
        ("=b", {"": "b"}),
        ("a=b=c", {"a": "b=c"}),
        ("a=b   ", {"a": "b   "}),
        ("url=http://x:9092", {"url": "http://x:9092"}),
    ],
)
def test_separators_and_blanks_follow_java(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_comment_and_blank_lines_are_skipped() -> None:
    text = "# a comment\n! another\n\n   \n  # indented comment\nkey=value\n"
    assert parse_properties(text) == {"key": "value"}


def test_a_hash_inside_a_value_is_not_a_comment() -> None:
    assert parse_properties("a=b # not a comment") == {"a": "b # not a comment"}


def test_a_backslash_at_the_end_continues_the_line_without_leading_blanks() -> None:
    text = "voters=1@a:1,\\\n        2@b:2,\\\n   3@c:3\nnext=x"
    assert parse_properties(text) == {"voters": "1@a:1,2@b:2,3@c:3", "next": "x"}


def test_an_escaped_backslash_at_the_end_does_not_continue() -> None:
    assert parse_properties("a=b\\\\\nc=d") == {"a": "b\\", "c": "d"}


def test_a_comment_ending_in_a_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\na=b") == {"a": "b"}


def test_a_continued_line_may_start_with_a_hash() -> None:
    assert parse_properties("a=b\\\n#c") == {"a": "b#c"}


def test_a_continuation_into_an_empty_line_ends_the_entry() -> None:
    assert parse_properties("a=b\\\n\n c=d") == {"a": "b", "c": "d"}


def test_a_continuation_at_the_end_of_the_file_is_dropped() -> None:
    assert parse_properties("a=b\\") == {"a": "b"}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_java_line_ending_separates_entries(newline: str) -> None:
    text = newline.join(["a=1", "b=2\\", "  3", "c=4"])
    assert parse_properties(text) == {"a": "1", "b": "23", "c": "4"}


def test_other_control_characters_do_not_end_a_line() -> None:
    assert parse_properties("a=b\x0bc\x1cd") == {"a": "b\x0bc\x1cd"}


def test_escapes_in_keys_and_values() -> None:
    text = r"key\ with\=odd\:chars = tab\there\nnew \u00e9\u0041 \q"
    assert parse_properties(text) == {"key with=odd:chars": "tab\there\nnew éA q"}


def test_a_malformed_unicode_escape_names_the_source_and_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_properties("a=1\n\nb=\\u12g4\n", source="x.properties")
    assert str(caught.value).startswith("x.properties:3: malformed \\uXXXX escape")


def test_a_short_unicode_escape_is_malformed() -> None:
    with pytest.raises(ConfigError, match="malformed"):
        parse_properties("a=\\u12")


def test_entries_keep_their_first_line_number_and_order() -> None:
    entries = parse_property_entries("# c\na=1\nb=2\\\n 3\n\nc=4\na=5\n")
    assert [(e.key, e.value, e.line) for e in entries] == [
        ("a", "1", 2), ("b", "23", 3), ("c", "4", 6), ("a", "5", 7),
    ]


def test_a_repeated_key_keeps_its_last_value() -> None:
    assert parse_properties("a=1\na=2") == {"a": "2"}


def test_reading_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.properties"
    with pytest.raises(ConfigError, match=r"absent\.properties: cannot read"):
        read_properties_file(path)


def test_reading_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.properties"
    path.write_bytes(b"a=1\nb=caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin1.properties:2: the file is not valid UTF-8"):
        read_properties_file(path)


def test_formatting_escapes_what_java_escapes() -> None:
    text = format_properties({"a key": " lead=trail ", "k#!": "x:y\\z\t"}, comments=["", "hi"])
    assert text == "#\n#hi\na\\ key=\\ lead\\=trail \nk\\#\\!=x\\:y\\\\z\\t\n"


@settings(max_examples=150)
@given(st.dictionaries(st.text(), st.text(), max_size=8))
def test_formatted_properties_parse_back_to_the_same_mapping(values: dict[str, str]) -> None:
    assert parse_properties(format_properties(values)) == values


@settings(max_examples=50)
@given(st.dictionaries(st.text(), st.text(), max_size=4))
def test_a_written_file_reads_back_the_same(tmp_path_factory: pytest.TempPathFactory,
                                            values: dict[str, str]) -> None:
    path = tmp_path_factory.mktemp("props") / "x.properties"
    path.write_text(format_properties(values, comments=["generated"]), encoding="utf-8")
    assert read_properties_file(path) == values


def test_a_byte_order_mark_does_not_become_part_of_the_first_key(tmp_path: Path) -> None:
    path = tmp_path / "bom.properties"
    path.write_bytes(b"\xef\xbb\xbfnode.id=1\n")
    assert read_properties_file(path) == {"node.id": "1"}
