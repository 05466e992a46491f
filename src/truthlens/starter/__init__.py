"""The starter files shipped inside the package, so the gateway runs without a checkout:
``config.yaml`` (the processor), ``envoy.yaml`` (Envoy in front of it) and
``docker-compose.yaml`` (both, plus a scripted upstream) agree on their addresses, and
``truthlens init`` writes the three of them; ``demo_script.yaml`` is what the scripted upstream
answers in ``truthlens demo`` (and ``truthlens upstream --demo``); ``examples/`` holds the example
configs (``truthlens init --example NAME``); ``truthlens-config.schema.json`` is the config's JSON
Schema (``truthlens schema``), written beside the config so editors check it. In a checkout
these are the repository's own ``configs/config.yaml``, ``envoy.yaml``,
``deploy/demo_script.yaml``, ``configs/examples/`` and ``docs/truthlens-config.schema.json``
(the files the tests run), not copies; the wheel holds them as files."""

from __future__ import annotations

from pathlib import Path

from truthlens.starter.render import (
    InitError,
    compose_text,
    config_text,
    envoy_text,
    parse_upstream,
    with_schema_line,
)

__all__ = ["CONFIG", "COMPOSE", "DEMO_SCRIPT", "ENVOY", "EXAMPLES_DIR", "INIT_NAMES", "SCHEMA", "InitError",
           "examples", "write_starter"]

STARTER_DIR = Path(__file__).resolve().parent
CONFIG = STARTER_DIR / "config.yaml"
ENVOY = STARTER_DIR / "envoy.yaml"
COMPOSE = STARTER_DIR / "docker-compose.yaml"
DEMO_SCRIPT = STARTER_DIR / "demo_script.yaml"
SCHEMA = STARTER_DIR / "truthlens-config.schema.json"
EXAMPLES_DIR = STARTER_DIR / "examples"
# What ``truthlens init`` writes (the names it gives the files).
INIT_NAMES = ("config.yaml", "envoy.yaml", "docker-compose.yaml", SCHEMA.name)


def examples() -> list[str]:
    """The example configs ``truthlens init --example`` writes, by name."""
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.yaml"))


def write_starter(target: Path, *, force: bool = False, example: str | None = None,
                  upstream: str | None = None) -> list[Path]:
    """Write the starter config (or the example ``example``), the envoy.yaml with its routes and
    the compose file into ``target`` (created if missing), the model server at ``upstream`` (a URL;
    default ``http://127.0.0.1:8000/v1``) in both config and Envoy; returns the paths written.
    A file that already holds what would be written is left as it is (and not returned). Refuses,
    before writing anything, when one exists with other contents and ``force`` is False, or when
    what would be written is invalid."""
    source = CONFIG
    if example is not None:
        source = EXAMPLES_DIR / f"{example}.yaml"
        if example not in examples():
            raise InitError(f"--example {example!r}: no such example (one of {', '.join(examples())})")
    where = parse_upstream(upstream) if upstream is not None else None
    config = config_text(source.read_text(encoding="utf-8"), where)
    texts = {
        "config.yaml": with_schema_line(config, SCHEMA.name),
        "envoy.yaml": envoy_text(ENVOY.read_text(encoding="utf-8"), config, where),
        "docker-compose.yaml": compose_text(COMPOSE.read_text(encoding="utf-8"), where),
        SCHEMA.name: SCHEMA.read_text(encoding="utf-8"),
    }
    # A file that already holds what would be written is fine (a checkout's own envoy.yaml, a second
    # run of the same init): only a file that differs needs --force.
    different = [target / n for n in INIT_NAMES if (target / n).exists() and not _holds(target / n, texts[n])]
    if different and not force:
        names = ", ".join(str(p) for p in different)
        raise InitError(f"{names} already exist{'s' if len(different) == 1 else ''} with other contents "
                        "(--force overwrites; or name another folder: truthlens init DIR)")
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in INIT_NAMES:
        out = target / name
        if out.exists() and _holds(out, texts[name]):
            continue
        out.write_text(texts[name], encoding="utf-8")
        written.append(out)
    return written


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False
