"""The README and the docs site hold together: the README stays short enough to read top to bottom,
every command it shows is one CI runs or a named test runs, its client example is the one the
client-guide test executes, its links land on a page and heading that exist, every page of the
site is in its nav, and every reason a check can give is explained on the troubleshooting page.

Nothing here builds the site (CI runs ``mkdocs build --strict``, which also checks the pages' own
links and anchors); these checks need no docs dependencies, so they run in every environment.
"""

from __future__ import annotations

import ast
import re
import shlex
import unicodedata
from pathlib import Path

import pytest
import yaml

from truthlens.gateway.core.errors import REASONS

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 300
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.S | re.M)

# README commands that are not CI's, each with the test that runs it (the demo runs there with
# --free-ports so that it never collides with another test's ports).
WHEEL_TESTS = REPO / "tests" / "deploy" / "test_installed_wheel.py"
KNOWN_RUNS = {
    "truthlens demo": (WHEEL_TESTS, "test_demo_runs_from_an_empty_directory", ('"demo"',)),
    "truthlens demo --mode standard": (
        WHEEL_TESTS, "test_demo_mode_runs_in_one_command_and_says_what_changed", ('"--mode"', '"standard"')
    ),
}


def code_blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def commands(block: str) -> list[str]:
    """Each command of a shell block: comments dropped, ``a && b`` as two, blank lines skipped."""
    out = []
    for line in block.splitlines():
        line = line.split(" #", 1)[0].strip()
        out += [part.strip() for part in line.split(" && ") if part.strip()]
    return out


def ci_commands() -> list[str]:
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.split(" #", 1)[0].strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) and GitHub give a heading of plain words."""
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, flags=re.M)}


def nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in nav_pages(value)]
    if isinstance(node, list):
        return [page for item in node for page in nav_pages(item)]
    return []


def test_the_readme_is_short_enough_to_read_top_to_bottom() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move reference and results into docs/"


def test_the_readmes_setup_and_test_commands_are_the_ones_ci_runs() -> None:
    ci = ci_commands()
    shown = [c for block in code_blocks(README.read_text(encoding="utf-8"), "sh") for c in commands(block)]
    setup = [c for c in shown if not c.startswith("truthlens ")]
    assert setup == ["python3 -m venv .venv", ". .venv/bin/activate", "python -m pip install -e '.[dev]'",
                     "python -m pytest -q"]
    for command in setup:
        assert command in ci, f"the README shows {command!r}, which .ci/run does not run"
    # In the README's order: the venv, its activation, the setup, the tests.
    assert [ci.index(c) for c in setup] == sorted(ci.index(c) for c in setup)


def test_every_other_readme_command_is_run_by_a_named_test() -> None:
    ci = ci_commands()
    shown = [c for block in code_blocks(README.read_text(encoding="utf-8"), "sh") for c in commands(block)]
    others = [c for c in shown if c not in ci]
    assert others, "the README shows the demo"
    for command in others:
        assert command in KNOWN_RUNS, f"the README shows {command!r}: name the test that runs it in KNOWN_RUNS"
        path, test_name, arguments = KNOWN_RUNS[command]
        source = path.read_text(encoding="utf-8")
        functions = {node.name: ast.get_source_segment(source, node) or ""
                     for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)}
        assert test_name in functions, f"{path.name} has no {test_name}"
        assert shlex.split(command)[1] in functions[test_name]
        for argument in arguments:
            assert argument in source, f"{test_name} does not run {command!r} ({argument} missing)"


def test_the_readmes_client_example_is_the_one_the_client_guide_test_runs() -> None:
    (example,) = code_blocks(README.read_text(encoding="utf-8"), "python")
    guide = (DOCS / "clients.md").read_text(encoding="utf-8")
    assert example in code_blocks(guide, "python"), "copy the example from docs/clients.md, unchanged"
    runner = (REPO / "tests" / "envoy" / "test_client_guide.py").read_text(encoding="utf-8")
    assert '"docs" / "clients.md"' in runner and "exec(" in runner


def test_the_readmes_links_land_on_pages_and_headings_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", text)
    assert len(links) >= 10
    for target, anchor in links:
        page = REPO / target
        assert page.is_file(), f"README links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(page), f"README links to {target}#{anchor}: no such heading"


def test_every_page_in_the_nav_exists_and_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["docs_dir"] == "docs" and config["theme"]["name"] == "material"
    listed = nav_pages(config["nav"])
    assert len(listed) == len(set(listed))
    for page in listed:
        assert (DOCS / page).is_file(), f"mkdocs.yml lists {page}, which is not in docs/"
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk == set(listed), f"pages not in the nav: {sorted(on_disk - set(listed))}"


def test_the_site_has_the_pages_a_newcomer_and_an_operator_look_for() -> None:
    listed = set(nav_pages(yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]))
    for page in ("quickstart.md", "clients.md", "configuration.md", "configuration-reference.md", "operations.md",
                 "detector.md", "benchmarks.md", "security.md", "troubleshooting.md", "results.md",
                 "architecture.md"):
        assert page in listed


def test_every_pictures_file_is_there() -> None:
    for page in DOCS.rglob("*.md"):
        for image in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / image).is_file(), f"{page.name} shows {image}, which is not there"


@pytest.mark.parametrize("reason", sorted(REASONS))
def test_troubleshooting_explains_every_reason(reason: str) -> None:
    assert f"`{reason}`" in (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
