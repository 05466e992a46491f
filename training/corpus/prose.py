"""Real English filler prose: sentences from the docstrings of Python's standard library.

Padding passages made of this text teach the detector to ignore irrelevant context. The
module list is split in two so held-out examples are padded with sentences never seen in
training. Deterministic: the same Python version gives the same sentences.
"""

from __future__ import annotations

import functools
import importlib
import re

_TRAIN_MODULES = (
    "json", "collections", "functools", "itertools", "random", "statistics", "decimal", "fractions", "datetime",
    "calendar", "textwrap", "difflib", "heapq", "bisect", "shutil", "tempfile", "logging", "argparse", "csv",
    "sqlite3", "pathlib", "subprocess", "threading", "queue", "socket", "ssl", "email", "mailbox", "zipfile",
    "tarfile", "gzip", "pickle", "copy", "pprint", "string", "struct", "codecs", "unicodedata", "locale",
    "gettext", "typing", "dataclasses", "enum", "abc", "contextlib", "inspect", "dis", "ast", "tokenize",
)
_HELDOUT_MODULES = (
    "asyncio", "http.client", "urllib.request", "xml.dom.minidom", "configparser", "hashlib", "hmac", "secrets",
    "uuid", "ipaddress", "mimetypes", "base64", "binascii", "wave", "colorsys", "sched", "selectors", "signal",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_CLEAN = re.compile(r"^[A-Za-z][A-Za-z0-9 ,;:'\-]+[.!?]$")


def _docstrings(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    docs = [module.__doc__ or ""]
    for name in sorted(vars(module)):
        obj = getattr(module, name)
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        docs.append(getattr(obj, "__doc__", None) or "")
    return docs


@functools.cache
def sentences(split: str) -> tuple[str, ...]:
    """Clean prose sentences (6–35 words) for the ``"train"`` or ``"heldout"`` split."""
    modules = _TRAIN_MODULES if split == "train" else _HELDOUT_MODULES
    out: dict[str, None] = {}  # ordered de-duplication
    for module_name in modules:
        for doc in _docstrings(module_name):
            for raw in _SENTENCE.split(" ".join(doc.split())):
                sentence = raw.strip()
                if _CLEAN.match(sentence) and 6 <= len(sentence.split()) <= 35:
                    out[sentence] = None
    return tuple(out)
