"""Where a route finds the grounding passages of a request (:class:`ContextSettings`), and its
``context.templates``: which templates and layouts its requests' context is read from.

```yaml
context:
  templates:
    - name: acme-support            # the application's own template
      template: "Answer from our manuals.\\n\\nManuals:\\n{context}\\n\\nCustomer: {question}"
      in: user                      # user (default) | system (the question is then the user's message)
      separator: documents          # documents (default) | indented | lines | none
    - name: acme-docs               # or delimiters around the context
      start: "<<DOCS>>"
      end: "<</DOCS>>"
    - builtin                       # every framework's template (or name some)
    - plain                         # the plain layouts too (plain-labels, plain-delimited)
```

Absent: ``[builtin]``: the frameworks' exact templates, never the plain layouts, whose labels an
end user can type over text that is not retrieved material (a route whose application writes
its own plain layout names ``plain``, or one of them). ``[]``: no template is read. The route's
own entries are tried before any built-in one, whatever the order of the list; built-in names
(``langchain-rag-prompt``, ``plain-labels``, ...) select those alone. Every problem is a
:class:`~truthlens.options.ConfigError` naming the entry's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from truthlens.gateway.apis.context.reading import (
    BUILTIN_BY_NAME,
    FRAMEWORKS,
    LAYOUTS,
    LayoutReader,
    Reader,
    TemplateReader,
)
from truthlens.gateway.apis.context.templates import SEPARATORS, Role, Template, TemplateError
from truthlens.options import ConfigError, Section

BUILTIN_ALL = "builtin"  # every framework template
PLAIN_ALL = "plain"  # every plain layout
_GROUPS: dict[str, tuple[Reader, ...]] = {BUILTIN_ALL: FRAMEWORKS, PLAIN_ALL: LAYOUTS}
DEFAULT_READERS: tuple[Reader, ...] = FRAMEWORKS
_ROLES: tuple[Role, ...] = ("user", "system")


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """Where a route finds the grounding passages of a request."""

    # Request field holding passages; stripped before the body goes upstream. None: not used.
    extension_field: str | None = "truthlens_context"
    tool_messages: bool = True  # ``role: tool`` message contents are passages
    system_messages: bool = False  # system message paragraphs are passages
    # Templates and layouts read when the field and tool messages hold none (see the module docstring).
    templates: tuple[Reader, ...] = DEFAULT_READERS


def parse_templates(section: Section) -> tuple[Reader, ...]:
    """The readers ``section.templates`` lists (absent: every framework template)."""
    key = section.key("templates")
    raw = section.get("templates", [BUILTIN_ALL])
    if not isinstance(raw, list):
        raise ConfigError(key, f"must be a list of built-in names ({BUILTIN_ALL}, ...) and template entries")
    own: list[Reader] = []
    chosen: list[Reader] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        where = f"{key}[{i}]"
        if isinstance(item, str):
            picked = _builtin(item, where)
            if any(r.name in names for r in picked):
                raise ConfigError(where, f"{item!r} is listed twice")
            chosen.extend(picked)
            names.update(r.name for r in picked)
            continue
        reader = _own(Section(item, where))
        if reader.name in names or reader.name in BUILTIN_BY_NAME or reader.name in _GROUPS:
            raise ConfigError(f"{where}.name", f"{reader.name!r} is taken (by a built-in template or another entry)")
        names.add(reader.name)
        own.append(reader)
    return (*own, *chosen)


def _builtin(name: str, where: str) -> tuple[Reader, ...]:
    if name in _GROUPS:
        return _GROUPS[name]
    reader = BUILTIN_BY_NAME.get(name)
    if reader is None:
        raise ConfigError(where, f"unknown built-in template {name!r} (expected {BUILTIN_ALL}, {PLAIN_ALL} or one of "
                                 f"{', '.join(BUILTIN_BY_NAME)}; an own template is a mapping with name and template)")
    return (reader,)


def _own(s: Section) -> Reader:
    s.allow("name", "template", "start", "end", "in", "separator", "instruction")
    name = s.string("name")
    role: Role = s.choice("in", "user", _ROLES)
    separator = s.choice("separator", "documents", SEPARATORS)
    form, _ = s.one_of(("template", "start"))
    if form == "start":
        for absent in ("template", "instruction"):
            if absent in s:
                raise ConfigError(s.key(absent), "does not go with start/end delimiters")
        start, end = s.string("start"), s.string("end")
        return LayoutReader(name, "between", separator, start=start, end=end, role=role)
    if "end" in s:
        raise ConfigError(s.key("end"), "goes with start (delimiters), not with template")
    text = s.string("template")
    instruction: Any = s.optional_string("instruction")
    try:
        return TemplateReader(Template(name=name, text=text, role=role, separator=separator, instruction=instruction))
    except TemplateError as exc:
        raise ConfigError(s.key("template"), str(exc)) from None
