"""A template's context slot split back into the documents the framework joined into it.

- ``documents`` (the default): numbered documents (``Document 1:``, ``Passage 2:``, ``Source 3:``,
  ``[4]``, each at a line start, numbered 1, 2, 3, … in order) split at their markers, which are
  dropped; otherwise blank lines, as LangChain's ``format_docs`` and stuff chains
  (``"\\n\\n".join``) and LlamaIndex's node packing (``"\\n\\n".join``) join documents. A LlamaIndex
  node rendered with its metadata (``file_path: …`` lines, then a blank line, then its text)
  stays one passage: a block of ``key: value`` lines opens a passage and the blocks after it
  join it until the next such block. The metadata lines themselves are left out: they describe
  the file, not what it says, and beside the text they made the detector flag faithful answers
  (RAGTruth dev part, ``bench.request_shapes``: 50% of faithful records flagged with them, 0%
  without).
- ``indented``: Haystack's documentation template (``{% for document in documents %}\\n
  {{ document.content }}\\n{% endfor %}``) renders each document after a blank line and four
  spaces: a blank line followed by an indented line starts a document.
- ``lines``: one passage per non-empty line. ``none``: the whole slot is one passage.

Two renderings are read whatever the separator: a context that is a Python list of strings
(LlamaIndex's ``simple_summarize`` formats its list of chunks into the prompt as it is: each
string is a chunk, split as above), and, for tool results (:func:`tool_passages`), blocks of
``Source: …`` and ``Content: …`` lines (the retrieval tool of LangChain's v1 RAG agent: each
block's content is a passage, its source line left out, as metadata lines are).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from truthlens.gateway.apis.context.templates import Separator

_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_INDENTED_START = re.compile(r"\n[ \t]*\n(?=[ \t]{2,}\S)")
# A numbered document marker at a line start: "Document 1:", "Doc 2 -", "Passage 3.", "Source 4:", "[5]".
_MARKER = re.compile(
    r"^[ \t]*(?:(?:document|doc|passage|source|chunk|excerpt|context)[ \t]*#?[ \t]*(\d{1,3})[ \t]*[:.)\-]"
    r"|\[(\d{1,3})\])[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
# LlamaIndex's metadata template ("{key}: {value}", one per line): lower-case identifier keys,
# one of them a key its readers write (SimpleDirectoryReader's file keys, the PDF readers'
# page_label, ...), so neither a prose line such as "Note: ..." nor a record's fields are taken for it.
_METADATA_LINE = re.compile(r"^([a-z_][a-z0-9_]{0,40}): \S.{0,300}$")
_METADATA_KEYS = frozenset({"file_path", "file_name", "file_type", "file_size", "creation_date", "last_modified_date",
                            "last_accessed_date", "page_label", "doc_id", "document_title", "url", "source"})
_MAX_METADATA_LINES = 12
# A block of a tool result: a "Source: {...}" line, then "Content: " (LangChain's v1 RAG agent:
# f"Source: {doc.metadata}\nContent: {doc.page_content}", blocks joined with blank lines).
_SOURCE_BLOCK = re.compile(r"^[ \t]*Source:[^\n]*\n[ \t]*Content:[ \t]*", re.MULTILINE)


def split(text: str, separator: Separator) -> list[str]:
    """The passages of a context slot (none empty)."""
    text = text.strip()
    if not text:
        return []
    listed = _list_of_strings(text)
    if listed is not None:
        return [p for chunk in listed for p in split(chunk, separator)]
    if separator == "none":
        return [text]
    if separator == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
    if separator == "indented":
        return [_dedent(block) for block in _INDENTED_START.split(text) if block.strip()]
    numbered = numbered_documents(text)
    if numbered is not None:
        return numbered
    return _with_metadata([block.strip() for block in _BLANK_LINES.split(text) if block.strip()])


def tool_passages(text: str) -> list[str]:
    """A tool result's passages: the content of each ``Source: …`` / ``Content: …`` block when
    the whole result is made of them, else the result as one passage."""
    starts = list(_SOURCE_BLOCK.finditer(text))
    if not starts or text[:starts[0].start()].strip():
        return [text] if text.strip() else []
    ends = [m.start() for m in starts[1:]] + [len(text)]
    contents = [text[m.end():end].strip() for m, end in zip(starts, ends, strict=True)]
    return [c for c in contents if c]


def _list_of_strings(text: str) -> list[str] | None:
    """The strings of a context written as a Python list of strings (None: it is not one)."""
    if not (text.startswith(("['", '["')) and text.endswith(("']", '"]'))):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    return None


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


def _with_metadata(blocks: Sequence[str]) -> list[str]:
    """Blank-line blocks, each metadata block (one followed by text: a block of ``key: value``
    lines with nothing after it is content, a record say) replaced by the text blocks after it
    up to the next metadata block."""
    heads = [_is_metadata(b) and i + 1 < len(blocks) and not _is_metadata(blocks[i + 1]) for i, b in enumerate(blocks)]
    passages: list[str] = []
    in_node = False  # the last passage is a node's text, and takes the blocks that follow
    for block, head in zip(blocks, heads, strict=True):
        if head:
            passages.append("")
            in_node = True
        elif in_node:
            passages[-1] = f"{passages[-1]}\n\n{block}" if passages[-1] else block
        else:
            passages.append(block)
    return passages


def _is_metadata(block: str) -> bool:
    lines = block.splitlines()
    if len(lines) > _MAX_METADATA_LINES:
        return False
    keys = [m.group(1) if (m := _METADATA_LINE.match(line)) else None for line in lines]
    return None not in keys and not _METADATA_KEYS.isdisjoint(keys)


def _dedent(block: str) -> str:
    return "\n".join(line.strip() for line in block.strip().splitlines())
