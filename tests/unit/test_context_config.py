"""A route's ``context.templates``: the shipped config reads every built-in template with no
configuration; an application's own template or delimiters are read first; a template that
cannot be read back, an unknown name or a clash is refused by ``check-config`` with the key named.
Real YAML files; nothing is scripted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from truthlens import cli
from truthlens.gateway.apis.chat.body import decode_chat_request
from truthlens.gateway.apis.context.reading import BUILTIN, FRAMEWORKS
from truthlens.gateway.policy.config import parse_config
from truthlens.options import ConfigError

SHIPPED = Path(__file__).resolve().parents[2] / "configs" / "config.yaml"


def with_templates(templates: Any, *, in_decision: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(SHIPPED.read_text())
    if in_decision:
        doc["decisions"][0]["plugins"][0]["configuration"]["context"] = {"templates": templates}
    else:
        doc["hallucination"]["context"]["templates"] = templates
    return doc


def test_the_shipped_config_reads_every_framework_template_and_no_plain_layout() -> None:
    doc: dict[str, Any] = yaml.safe_load(SHIPPED.read_text())
    for decision in parse_config(doc).decisions:
        assert decision.route is not None and decision.route.context.templates == FRAMEWORKS


def test_plain_names_the_plain_layouts() -> None:
    route = parse_config(with_templates(["builtin", "plain"], in_decision=True)).decisions[0].route
    assert route is not None and route.context.templates == BUILTIN


def test_a_decision_reads_its_own_template_first_then_the_ones_it_names() -> None:
    own = {"name": "acme", "template": "Manuals:\n{context}\n\nCustomer asks: {question}", "separator": "lines"}
    route = parse_config(with_templates([own, "llamaindex-text-qa"], in_decision=True)).decisions[0].route
    assert route is not None
    assert [r.name for r in route.context.templates] == ["acme", "llamaindex-text-qa"]
    body = b'{"messages": [{"role": "user", "content": "Manuals:\\nRed button resets.\\nHold it 5 s.\\n\\n' \
           b'Customer asks: How do I reset?"}]}'
    request = decode_chat_request(body).read(route.context)
    assert request.passages == ("Red button resets.", "Hold it 5 s.")
    assert request.question == "How do I reset?" and request.context_source == "template:acme"


def test_own_delimiters_in_the_system_message() -> None:
    own = {"name": "docs", "start": "<<DOCS>>", "end": "<</DOCS>>", "in": "system"}
    route = parse_config(with_templates([own])).hallucination
    body = (b'{"messages": [{"role": "system", "content": "Be brief. <<DOCS>>Paris is in France.<</DOCS>>"},'
            b' {"role": "user", "content": "Where is Paris?"}]}')
    request = decode_chat_request(body).read(route.context)
    assert request.passages == ("Paris is in France.",) and request.question == "Where is Paris?"
    assert request.context_source == "template:docs"


def test_no_templates_reads_none() -> None:
    route = parse_config(with_templates([])).hallucination
    body = b'{"messages": [{"role": "user", "content": "Context: Paris is in France.\\nQuestion: Where is Paris?"}]}'
    request = decode_chat_request(body).read(route.context)
    assert request.passages == () and request.context_source == ""


@pytest.mark.parametrize(("templates", "key", "problem"), [
    ("builtin", "hallucination.context.templates", "must be a list"),
    (["langchain"], "hallucination.context.templates[0]", "unknown built-in template 'langchain'"),
    (["builtin", "haystack-rag"], "hallucination.context.templates[1]", "listed twice"),
    ([{"name": "x", "template": "Docs: {context}"}], "hallucination.context.templates[0].template",
     "needs a {question} slot"),
    ([{"name": "x", "template": "{context}\n{question}"}], "hallucination.context.templates[0].template",
     "need literal text between them"),
    ([{"name": "x", "template": "Docs: {documents}\nQ: {question}"}], "hallucination.context.templates[0].template",
     "unknown slot {documents}"),
    ([{"name": "langchain-rag-prompt", "template": "D: {context} Q: {question}"}],
     "hallucination.context.templates[0].name", "is taken"),
    ([{"name": "acme", "template": "{context} the {question}"}, "builtin"],  # round 4, CF2
     "hallucination.context.templates[0].template", "too short to tell the template from ordinary chat"),
    ([{"name": "x", "start": "<<"}], "hallucination.context.templates[0].end", "non-empty string"),
    ([{"name": "x", "template": "D: {context} Q: {question}", "start": "<<"}], "hallucination.context.templates[0]",
     "needs exactly one of template, start"),
    ([{"name": "x", "template": "D: {context} Q: {question}", "in": "assistant"}],
     "hallucination.context.templates[0].in", "assistant"),
    ([{"name": "x", "template": "D: {context} Q: {question}", "separator": "commas"}],
     "hallucination.context.templates[0].separator", "commas"),
    ([{"name": "x", "template": "D: {context} Q: {question}", "slots": 2}],
     "hallucination.context.templates[0].slots", "unknown key"),
])
def test_a_bad_templates_entry_names_its_key(templates: Any, key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(with_templates(templates))
    assert info.value.key == key and problem in info.value.problem


def test_check_config_refuses_a_bad_own_template_and_accepts_a_good_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(with_templates([{"name": "acme", "template": "Manuals: {context}"}],
                                                 in_decision=True)))
    assert cli.main(["check-config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "decisions[0].plugins[0].configuration.context.templates[0].template" in err
    assert "needs a {question} slot" in err
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(with_templates([{"name": "acme", "template": "Manuals: {context}\nQ: {question}"},
                                                   "builtin"], in_decision=True)))
    assert cli.main(["check-config", str(good)]) == 0
