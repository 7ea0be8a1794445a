"""The upload's streaming JSON/YAML scanners accept and refuse what the loaders accept and refuse."""

from __future__ import annotations

import json

import pytest
import yaml

from knowledge.ingestion.limits import DEFAULT_LIMITS, IngestLimits, LimitExceeded
from knowledge.ingestion.structure_scan import json_scan_bounded, yaml_scan_bounded

KEYS = {"openapi", "swagger"}

JSON_TEXTS = [
    '{"openapi": "3.1.0", "info": {"title": "t"}, "paths": {}}',
    '  {"swagger": "2.0", "x": [1, -2.5e3, true, false, null, NaN, -Infinity, "a\\"b\\u00e9"]} ',
    '{"info": {"openapi": "nested, not top level"}, "openapi": 3.0}',
    "[1, [2, [3]], {}]",
    '"just a string"',
    "[1, 2",
    '{"a" 1}',
    "{a: 1}",
    "[1,]",
    '{"a": 1,}',
    "01",
    '"x" "y"',
    "",
    "[1 2]",
    "tru",
    '{"a": 1}x',
    '{"a": "\t"}',
    '["\\x"]',
]


@pytest.mark.parametrize("text", JSON_TEXTS)
def test_json_scan_agrees_with_json_loads(text):
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError:
        with pytest.raises(json.JSONDecodeError):
            json_scan_bounded(text, DEFAULT_LIMITS, KEYS)
        return
    expected = {k: v for k, v in loaded.items() if k in KEYS} if isinstance(loaded, dict) else None
    assert json_scan_bounded(text, DEFAULT_LIMITS, KEYS) == expected


YAML_TEXTS = [
    "openapi: 3.0\ninfo: {title: t}\n",
    "openapi: '3.1.0'\npaths: {}\n",
    "swagger: 2.0\n",
    "info:\n  openapi: 3.0\nx: [1, {openapi: 2}]\n",
    "- 1\n- 2\n",
    "",
    "a: &x [1, 2]\nb: *x\nopenapi: 3.0.1\n",
    "a: [1, 2\nb: {c: ]",
    "---\na: 1\n---\nb: 2\n",
    "openapi: !foo 3\n",
]


@pytest.mark.parametrize("text", YAML_TEXTS)
def test_yaml_scan_agrees_with_the_safe_loader(text):
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        with pytest.raises(yaml.YAMLError):
            yaml_scan_bounded(text, DEFAULT_LIMITS, KEYS)
        return
    expected = {k: v for k, v in loaded.items() if k in KEYS} if isinstance(loaded, dict) else None
    assert yaml_scan_bounded(text, DEFAULT_LIMITS, KEYS) == expected


def test_nodes_are_counted_with_keys_and_aliases():
    limits = IngestLimits(max_openapi_nodes=9)
    # The mapping, 3 keys, 2 scalar values, the list and its 2 items: 9 nodes.
    assert json_scan_bounded('{"a": 1, "b": [1, 2], "c": 3}', limits) == {}
    assert yaml_scan_bounded("a: 1\nb: [1, 2]\nc: 3\n", limits) == {}
    with pytest.raises(LimitExceeded, match="KNOWLEDGE_MAX_OPENAPI_NODES"):
        json_scan_bounded('{"a": 1, "b": [1, 2], "c": 3, "d": 4}', limits)
    with pytest.raises(LimitExceeded, match="KNOWLEDGE_MAX_OPENAPI_NODES"):
        yaml_scan_bounded("a: &x 1\nb: [1, 2]\nc: *x\n", IngestLimits(max_openapi_nodes=8))


def test_yaml_alias_expansion_is_counted_as_the_composer_counts_it():
    text = "a: &x [aaaa, bbbb]\nb: [*x, *x, *x]\n"  # each alias adds 1 + 4 + 4 = 9
    assert yaml_scan_bounded(text, IngestLimits(max_yaml_alias_expansion=27)) == {}
    with pytest.raises(LimitExceeded, match="KNOWLEDGE_MAX_YAML_ALIAS_EXPANSION"):
        yaml_scan_bounded(text, IngestLimits(max_yaml_alias_expansion=26))
