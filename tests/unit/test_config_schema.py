"""``truthlens schema``: the JSON Schema and the reference page come from the validator's own readers,
the committed copies equal what it prints, and the schema accepts what validation accepts.

Real: the validator over the shipped configs, ``jsonschema`` (draft 2020-12)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from truthlens import cli
from truthlens.gateway.policy import schema
from truthlens.gateway.policy.preflight import validate

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SHIPPED = sorted([ROOT / "configs" / "config.yaml", *(ROOT / "configs" / "examples").glob("*.yaml"),
                  *(ROOT / "deploy" / "compose").glob("config*/config.yaml")])


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    return schema.build()


@pytest.fixture(scope="module")
def validator(built: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(built)
    return jsonschema.Draft202012Validator(built)


def test_the_committed_schema_and_reference_are_what_truthlens_schema_prints(built: dict[str, Any]) -> None:
    stale = f"out of date: regenerate with `{schema.REGENERATE}`"
    assert (DOCS / "truthlens-config.schema.json").read_text(encoding="utf-8") == schema.schema_json(), stale
    assert (DOCS / "configuration-reference.md").read_text(encoding="utf-8") == schema.markdown(built), stale


def test_the_cli_prints_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"] == schema.SCHEMA_ID
    assert cli.main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("# Configuration reference")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_config_validates_and_points_editors_at_the_schema(
    path: Path, validator: jsonschema.Draft202012Validator,
) -> None:
    validate(str(path))  # the validator accepts it ...
    text = path.read_text(encoding="utf-8")
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(text))]
    assert errors == []  # ... and so does the schema
    first = text.splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (path.parent / first.split("=", 1)[1]).resolve() == (DOCS / "truthlens-config.schema.json").resolve()


def _shipped() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "configs" / "config.yaml").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _route(doc: dict[str, Any]) -> dict[str, Any]:
    """The configuration of the first decision that has one."""
    return next(d for d in doc["decisions"] if d.get("plugins"))["plugins"][0]["configuration"]


@pytest.mark.parametrize("edit", [
    pytest.param(lambda d: d["detector"].__setitem__("mdoel", "builtin"), id="misspelt detector key"),
    pytest.param(lambda d: d["hallucination"].__setitem__("thresold", 0.4), id="misspelt global key"),
    pytest.param(lambda d: _route(d).__setitem__("mdoe", "standard"), id="misspelt route key"),
    pytest.param(lambda d: d["hallucination"].__setitem__("threshold", 1.5), id="threshold over 1"),
    pytest.param(lambda d: d["hallucination"].__setitem__("fail_policy", "closd"), id="unknown choice"),
    pytest.param(lambda d: d.__setitem__("version", 2), id="unknown version"),
    pytest.param(lambda d: _route(d).update(mode="lightweight", max_iterations=2), id="another mode's key"),
])
def test_the_schema_rejects_what_validation_rejects(edit: Any, validator: jsonschema.Draft202012Validator,
                                                    tmp_path: Path) -> None:
    doc = copy.deepcopy(_shipped())
    edit(doc)
    assert list(validator.iter_errors(doc)), "the schema accepted it"
    bad = tmp_path / "config.yaml"
    bad.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(ValueError):  # ConfigError: the validator agrees
        validate(str(bad))


def test_a_key_a_reader_reads_is_in_the_schema_with_its_type_and_range(built: dict[str, Any]) -> None:
    gateway = built["properties"]["gateway"]
    assert gateway["properties"]["max_streams"] == {"type": "integer", "default": 2048, "minimum": 1}
    assert gateway["additionalProperties"] is False
    models = built["properties"]["models"]["additionalProperties"]  # models: names the user chooses
    assert models["required"] == ["base_url"] and "api_key_env" in models["properties"]
    rule = built["$defs"]["rule"]["properties"]
    assert {"operator", "conditions", "type", "prefix", "regex", "present", "any"} <= set(rule)
