"""The plain layouts applications write by hand, read only when their structure is all there.

- ``plain-labels``: a context section and a question section, each opened by a label at a line
  start (``Context:``, ``Documents:``, ``Passages:``, ``Sources:``, ``Information:``, … and
  ``Question:``, ``Query:``, ``Q:``; also as ``**Context:**`` or a ``## Context`` heading), in
  either order, after optional instructions and before an optional closing ``Answer:`` line. A run
  of numbered documents from ``Document 1:`` (or ``Passage 1:``, ``Source 1:``) may stand for the
  context section. In a user message both sections must be there; in a system message (the question
  is then the user's message) the context section must be the message's last, its label alone
  on its line or numbered documents: a system prompt that says ``Context: the user is a premium
  customer`` in passing is not retrieved context.
- ``plain-delimited``: one block between two identical delimiter lines (five or more of
  ``-``, ``=``, ``*``, ``#``, ``~`` or ``_``), introduced by a line that names what it holds
  (context, information, documents, passages, sources, excerpts, text, article, below), or one
  ``<context>`` … ``</context>`` block (also ``<documents>``, ``<sources>``, ``<passages>``,
  ``<information>``, ``<retrieved_context>``, ``<search_results>``); ``<document>`` elements
  inside are the passages. In a user message the question is the text after the block (less
  its ``Question:`` label and a closing ``Answer:``), else the text before it.

A message with a word such as "context" in a sentence or a Markdown rule is none of these, and
nothing inside a code fence (a line opening with three or more backticks or tildes, to the line
that closes it, or to the end) is read: a ``<context>`` element in a prompt builder's code, a
React ``Context.Provider`` or a ``context:`` key in a YAML file is code, not a layout. A fenced
block inside a context section is kept as the section's text.

These layouts are read only on a route that names them (``plain``): their labels are typed by
end users as often as by applications (docs/context.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from truthlens.gateway.apis.context.passages import numbered_documents
from truthlens.gateway.apis.context.templates import Role, Separator

_CONTEXT_WORDS = (r"context|contexts|retrieved context|documents|docs|passages|sources|information|background"
                  r"|references|knowledge|search results|excerpts")
_QUESTION_WORDS = r"question|user question|query|q"
# "Label:" (also "**Label:**" or "**Label**:"), or a Markdown heading "## Label" alone on its line.
_LABEL = r"^[ \t]*(?:#{{1,6}}[ \t]+(?:{words})[ \t]*:?[ \t]*$|(?:\*\*)?(?:{words})(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*)"
_CONTEXT_LABEL = re.compile(_LABEL.format(words=_CONTEXT_WORDS), re.IGNORECASE | re.MULTILINE)
_QUESTION_LABEL = re.compile(_LABEL.format(words=_QUESTION_WORDS), re.IGNORECASE | re.MULTILINE)
_FIRST_DOCUMENT = re.compile(r"^[ \t]*(?:document|passage|source)[ \t]*#?[ \t]*1[ \t]*[:.)\-]",
                             re.IGNORECASE | re.MULTILINE)
_ANSWER_LINE = re.compile(r"\n[ \t]*(?:helpful |final )?answer[ \t]*:?[ \t]*\Z", re.IGNORECASE)
_RULE = re.compile(r"^[ \t]*(-{5,}|={5,}|\*{5,}|#{5,}|~{5,}|_{5,})[ \t]*$", re.MULTILINE)
_INTRO = re.compile(r"\b(?:context|information|documents?|passages?|sources?|excerpts?|text|article|below)\b",
                    re.IGNORECASE)
_BLOCK_TAGS = re.compile(r"<(context|documents|sources|passages|information|retrieved_context|search_results)"
                         r"(?:\s[^<>]{0,200})?>", re.IGNORECASE)
_DOCUMENT_TAG = re.compile(r"<(document)(?:\s[^<>]{0,200})?>", re.IGNORECASE)
_INNER_TAG = re.compile(r"</?[A-Za-z_][\w\-]{0,40}(?:\s[^<>]{0,200})?>")


MAX_SIGN_OFF_WORDS = 4  # "Thanks!", "Thank you so much!": after a block, not the request
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*$", re.MULTILINE)


def without_fences(text: str) -> str:
    """``text`` with every fenced code block blanked (its characters spaces, its line breaks
    kept): the layouts' labels and tags are looked for in this text, and the sections sliced
    from the original at the same offsets."""
    out, pos = [], 0
    while (opening := _FENCE.search(text, pos)) is not None:
        marker = opening.group(1)
        closing = re.compile(rf"^[ \t]*{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", re.MULTILINE)
        shut = closing.search(text, opening.end())
        end = len(text) if shut is None else shut.end()
        out.append(text[pos:opening.start()])
        out.append(re.sub(r"[^\n]", " ", text[opening.start():end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Layout:
    """What a plain layout found: the context text, how it splits, and the question (None: the
    user's message is the question)."""

    context: str
    question: str | None
    separator: Separator = "documents"
    passages: tuple[str, ...] | None = None  # already split (tagged documents)


def labelled(text: str, role: Role) -> Layout | None:
    """``plain-labels`` (see the module's docstring)."""
    code = without_fences(text)  # where labels are looked for
    context_at = _context_start(code)
    if context_at is None:
        return None
    start, body = context_at
    if role == "system":
        if _QUESTION_LABEL.search(code, body) or _is_inline_label(code, start, body):
            return None
        return Layout(text[body:].strip(), None) if text[body:].strip() else None
    after = list(_QUESTION_LABEL.finditer(code, body))
    if after:  # context, then question: the context runs to the last question label
        return _layout(text[body:after[-1].start()], text[after[-1].end():])
    before = [m for m in _QUESTION_LABEL.finditer(code, 0, start)]
    if len(before) != 1:
        return None
    return _layout(_without_answer_line(text[body:]), text[before[0].end():start])


def delimited(text: str, role: Role) -> Layout | None:
    """``plain-delimited`` (see the module's docstring)."""
    code = without_fences(text)  # where tags and rules are looked for
    blocks = list(_elements(code, _BLOCK_TAGS))
    if len(blocks) == 1:
        start, (body_start, body_end), end = blocks[0]
        body = text[body_start:body_end]
        inner = [_INNER_TAG.sub(" ", body[a:b]).strip() for _, (a, b), _ in _elements(body, _DOCUMENT_TAG)]
        passages = tuple(p for p in inner if p) or None
        return _outside(text[:start], text[end:], body, role, passages)
    rules = list(_RULE.finditer(code))
    if len(rules) != 2 or rules[0].group(1) != rules[1].group(1):
        return None
    intro = text[:rules[0].start()]
    last_line = intro.rstrip().rpartition("\n")[2]
    if not _INTRO.search(last_line):
        return None
    return _outside(intro, text[rules[1].end():], text[rules[0].end():rules[1].start()], role, None)


def _elements(text: str, opening: re.Pattern[str]) -> list[tuple[int, tuple[int, int], int]]:
    """Each element an opening tag starts and its closing tag ends (start, body span, end), found
    in one pass: never a lazy match that could rescan a long message once per opening tag."""
    found = []
    pos = 0
    while (m := opening.search(text, pos)) is not None:
        close = _find_closing(text, m.group(1), m.end())
        if close < 0:
            break
        end = close + len(m.group(1)) + 3
        found.append((m.start(), (m.end(), close), end))
        pos = end
    return found


def _find_closing(text: str, tag: str, pos: int) -> int:
    m = re.compile(rf"</{re.escape(tag)}>", re.IGNORECASE).search(text, pos)
    return -1 if m is None else m.start()


def _outside(before: str, after: str, body: str, role: Role, passages: tuple[str, ...] | None) -> Layout | None:
    if not body.strip():
        return None
    if role == "system":
        return Layout(body.strip(), None, passages=passages)
    after_text, before_text = _question_text(after), _question_text(before)
    # The request is the side with words of its own: a sign-off after the block ("Thanks!") is not
    # what the user asks when the text before it is.
    question = before_text if before_text and _is_sign_off(after_text, after) else (after_text or before_text)
    return Layout(body.strip(), question, passages=passages) if question else None


def _is_sign_off(text: str, raw: str) -> bool:
    """A few words that ask nothing: no question mark and no question label."""
    return len(text.split()) <= MAX_SIGN_OFF_WORDS and "?" not in text and _QUESTION_LABEL.search(raw) is None


def _context_start(text: str) -> tuple[int, int] | None:
    """Where the context section's label starts and its text begins (the first context label,
    else the first numbered document, whose marker stays for the splitter)."""
    label = _CONTEXT_LABEL.search(text)
    first_doc = _FIRST_DOCUMENT.search(text)
    if label is not None and (first_doc is None or label.start() <= first_doc.start()):
        return label.start(), label.end()
    if first_doc is not None and numbered_documents(text[first_doc.start():]) is not None:
        return first_doc.start(), first_doc.start()
    return None


def _is_inline_label(text: str, start: int, body: int) -> bool:
    """A ``Context: some words`` line (text after the label on its line) rather than a label
    that opens a section; numbered documents (no label) are never inline."""
    if start == body:
        return False
    return bool(text[body:].split("\n", 1)[0].strip())


def _layout(context: str, question: str) -> Layout | None:
    context, question = context.strip(), _without_answer_line(question).strip()
    return Layout(context, question) if context and question else None


def _question_text(text: str) -> str:
    """The question in text outside a context block: less a question label and an answer line."""
    text = _without_answer_line(text).strip()
    label = _QUESTION_LABEL.search(text)
    if label is not None:
        text = text[label.end():]
    return text.strip()


def _without_answer_line(text: str) -> str:
    return _ANSWER_LINE.sub("", text.rstrip())


def between(text: str, role: Role, start: str, end: str) -> Layout | None:
    """A route's own delimiters: the context is what lies between the first ``start`` and the
    last ``end`` after it; in a user message the question is the text outside them."""
    code = without_fences(text)
    opened = code.find(start)
    if opened < 0:
        return None
    closed = code.rfind(end, opened + len(start))
    if closed < 0:
        return None
    return _outside(text[:opened], text[closed + len(end):], text[opened + len(start):closed], role, None)
