"""A template's context slot split back into the documents the framework joined into it.

- ``documents`` (the default): numbered documents (``Document 1:``, ``Passage 2:``, ``Source 3:``,
  ``[4]``, each at a line start, numbered 1, 2, 3, … in order) split at their markers, which are
  dropped; otherwise blank lines, as LangChain's ``format_docs`` and stuff chains
  (``"\\n\\n".join``) and LlamaIndex's node packing (``"\\n\\n".join``) join documents. A LlamaIndex
  node rendered with its metadata (``file_path: …`` lines, then a blank line, then its text)
  stays one passage: a block of ``key: value`` lines opens a passage and the blocks after it
  join it until the next such block.
- ``indented``: Haystack's documentation template (``{% for document in documents %}\\n
  {{ document.content }}\\n{% endfor %}``) renders each document after a blank line and four
  spaces: a blank line followed by an indented line starts a document.
- ``lines``: one passage per non-empty line. ``none``: the whole slot is one passage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from truthlens.gateway.apis.context.templates import Separator

_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_INDENTED_START = re.compile(r"\n[ \t]*\n(?=[ \t]{2,}\S)")
# A numbered document marker at a line start: "Document 1:", "Doc 2 -", "Passage 3.", "Source 4:", "[5]".
_MARKER = re.compile(
    r"^[ \t]*(?:(?:document|doc|passage|source|chunk|excerpt|context)[ \t]*#?[ \t]*(\d{1,3})[ \t]*[:.)\-]"
    r"|\[(\d{1,3})\])[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
# LlamaIndex's metadata template ("{key}: {value}", one per line): a lower-case identifier key
# (file_path, page_label, ...), so a prose line such as "Note: ..." is not taken for one.
_METADATA_LINE = re.compile(r"^[a-z_][a-z0-9_]{0,40}: \S.{0,300}$")
_MAX_METADATA_LINES = 12


def split(text: str, separator: Separator) -> list[str]:
    """The passages of a context slot (none empty)."""
    text = text.strip()
    if not text:
        return []
    if separator == "none":
        return [text]
    if separator == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
    if separator == "indented":
        return [_dedent(block) for block in _INDENTED_START.split(text) if block.strip()]
    numbered = numbered_documents(text)
    if numbered is not None:
        return numbered
    return _with_metadata(block.strip() for block in _BLANK_LINES.split(text) if block.strip())


def numbered_documents(text: str) -> list[str] | None:
    """The documents of a context written as numbered documents from 1 up, the first marker
    at its start (None: it is not); a preamble before marker 1 is not context."""
    run: list[re.Match[str]] = []
    for m in _MARKER.finditer(text):
        number = int(m.group(1) or m.group(2))
        if number == len(run) + 1:
            run.append(m)
    if not run or run[0].start() != _first_line_start(text):
        return None
    bounds = [m.end() for m in run]
    ends = [m.start() for m in run[1:]] + [len(text)]
    docs = [text[start:end].strip() for start, end in zip(bounds, ends, strict=True)]
    return [d for d in docs if d] or None


def _first_line_start(text: str) -> int:
    return len(text) - len(text.lstrip())


def _with_metadata(blocks: Iterable[str]) -> list[str]:
    """Blank-line blocks, each metadata block joined with the blocks after it up to the next."""
    passages: list[str] = []
    open_node = False  # the last passage began with a metadata block and takes what follows
    for block in blocks:
        if _is_metadata(block):
            passages.append(block)
            open_node = True
        elif open_node:
            passages[-1] = f"{passages[-1]}\n\n{block}"
        else:
            passages.append(block)
    return passages


def _is_metadata(block: str) -> bool:
    lines = block.splitlines()
    return len(lines) <= _MAX_METADATA_LINES and all(_METADATA_LINE.match(line) for line in lines)


def _dedent(block: str) -> str:
    return "\n".join(line.strip() for line in block.strip().splitlines())
