"""Tags in any script (issue 11, item 10): letters and digits of every script, NFC-normalised when written and
when used as filters; the rule lives in memhub/core/validation.py with a JSON Schema pattern for tool schemas."""

from __future__ import annotations

import re
import unicodedata

import grpc
import jsonschema
import pytest
from conftest import Stack, rpc_error

from memhub.client import memory_input
from memhub.core import validation as v
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

CAFE_NFC = "caf\u00e9"
CAFE_NFD = "cafe\u0301"  # the same word typed with a combining accent
VALID = ["中文", CAFE_NFC, "v2.7", "ticket:4312", "billing", "Ünïcödé", "日本語-タグ", "हिन्दी", "ملف", "x" * 64, "中" * 64, "٣٤"]
INVALID = {
    "space": "has space",
    "ideographic space": "中\u3000文",
    "no-break space": "a\u00a0b",
    "tab": "a\tb",
    "newline": "a\nb",
    "line separator": "a\u2028b",
    "leading dash": "-lead",
    "leading dot": ".hidden",
    "leading colon": ":x",
    "leading combining mark": "\u0301a",
    "too long": "x" * 65,
    "too long in Chinese": "中" * 65,
    "empty": "",
    "emoji": "deploy🔥",
    "comma": "a,b",
    "full stop": "完成。",
}


def test_cafe_strings_differ_before_normalisation() -> None:
    assert CAFE_NFD != CAFE_NFC and unicodedata.normalize("NFC", CAFE_NFD) == CAFE_NFC


@pytest.mark.parametrize("tag", VALID)
def test_the_hub_accepts_letters_and_digits_of_any_script(tag: str) -> None:
    assert v.tags([tag], "tags") == (unicodedata.normalize("NFC", tag),)


@pytest.mark.parametrize("tag", INVALID.values(), ids=INVALID.keys())
def test_the_hub_refuses_spaces_controls_leading_punctuation_and_long_tags(tag: str) -> None:
    with pytest.raises(InvalidArgument) as excinfo:
        v.tags(["fine", tag], "tags")
    assert excinfo.value.field == "tags[1]"


def test_decomposed_and_precomposed_forms_are_one_tag() -> None:
    assert v.tags([CAFE_NFD, CAFE_NFC, "中文"], "tags") == (CAFE_NFC, "中文")


def test_the_schema_pattern_agrees_with_the_hub_on_ascii_and_admits_other_scripts() -> None:
    schema = {"type": "string", "pattern": v.TAG_PATTERN}
    for tag in VALID:
        jsonschema.validate(tag, schema)  # Python's re, as jsonschema applies a pattern
    # On ASCII the pattern is exact: every printable character, first and later, decides as the hub does.
    for first in map(chr, range(0x20, 0x7F)):
        for tag in (first, f"a{first}", f"{first}bc"):
            assert (re.search(v.TAG_PATTERN, tag) is not None) == _hub_accepts(tag), repr(tag)
    for name in ("space", "ideographic space", "no-break space", "tab", "newline", "line separator", "too long", "empty"):
        assert re.search(v.TAG_PATTERN, INVALID[name]) is None, name


def _hub_accepts(tag: str) -> bool:
    try:
        v.tag(tag, "tag")
    except InvalidArgument:
        return False
    return True


def test_tag_rule_is_one_sentence_the_error_repeats(stack: Stack, ns: str) -> None:
    assert "\n" not in v.TAG_RULE and "letters (any script)" in v.TAG_RULE
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.write([memory_input(ns, "bad tag", tags=["中 文"])])
    code, details = rpc_error(excinfo)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details == f"memories[0].tags[0]: '中 文' is not a valid tag: {v.TAG_RULE}"


def test_chinese_and_accented_tags_are_written_listed_and_filtered(stack: Stack, ns: str) -> None:
    items = [
        memory_input(ns, "部署在周五冻结", type="rule", tags=["中文", "部署"]),
        memory_input(ns, "The café on 5th street closes at 6", type="fact", tags=[CAFE_NFD, "v2.7"]),
        memory_input(ns, "Ticket 4312 is about the cache", tags=["ticket:4312"]),
    ]
    written = stack.client.write(items, wait_indexed=True).results
    chinese, cafe, ticket = (r.memory.id for r in written)
    assert list(written[1].memory.tags) == [CAFE_NFC, "v2.7"]  # stored NFC

    def listed(*tags: str) -> set[str]:
        return {m.id for m in stack.client.list([ns], tags=list(tags)).memories}

    def searched(query: str, *tags: str) -> set[str]:
        return {h.memory.id for h in stack.client.search(query, [ns], tags=list(tags)).hits}

    assert {m.id: list(m.tags) for m in stack.client.list([ns]).memories}[chinese] == ["中文", "部署"]
    assert listed("中文") == {chinese}
    assert listed(CAFE_NFD) == listed(CAFE_NFC) == {cafe}  # a decomposed filter matches the NFC tag
    assert listed("中文", "ticket:4312") == {chinese, ticket}
    assert listed("中") == set()  # whole tags only
    assert searched("周五 部署 cafe cache", "中文") == {chinese}
    assert searched("周五 部署 cafe cache", CAFE_NFD) == {cafe}

    forgotten = stack.client.forget(
        filter=pb.ForgetFilter(namespace=ns, tags=[CAFE_NFD]), reason="test: tag filter"
    ).forgotten_ids
    assert list(forgotten) == [cafe]
