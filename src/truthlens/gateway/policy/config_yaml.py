"""The config file's YAML: read safely, with a repeated key an error (plain YAML lets the second
silently win), and a syntax error turned into a config error that names its line and column."""

from __future__ import annotations

from typing import Any

import yaml

from truthlens.options import ConfigError


def load_yaml(data: bytes) -> Any:
    """The document in ``data``; ``yaml.YAMLError`` for bad syntax or a repeated key."""
    return yaml.load(data, Loader=_UniqueKeyLoader)  # safe: _UniqueKeyLoader is a SafeLoader subclass


class _UniqueKeyLoader(yaml.SafeLoader):
    """A repeated key silently overrides the first in plain YAML: here it is an error."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def yaml_error(exc: yaml.YAMLError) -> ConfigError:
    """A YAML syntax error as a config error whose key is the line and column (the caller names
    the file, as for every config error): ``line 5, column 4: invalid YAML: expected ',' or ']',
    but got ':' (while parsing a flow sequence started at line 4, column 12)``."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return ConfigError("file", f"invalid YAML: {exc}")
    mark = exc.problem_mark
    problem = exc.problem or "syntax error"
    context = exc.context
    if context and exc.context_mark is not None and exc.context_mark.line != mark.line:
        context = f"{context} started at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1}"
    text = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    return ConfigError(f"line {mark.line + 1}, column {mark.column + 1}", text)
