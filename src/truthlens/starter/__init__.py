"""The starter files shipped inside the package, so the gateway runs without a checkout:
``config.yaml`` (the processor), ``envoy.yaml`` (Envoy in front of it) and
``docker-compose.yaml`` (both, plus a scripted upstream) agree on their addresses, and
``truthlens init`` writes the three of them; ``demo_script.yaml`` is what the scripted upstream
answers in ``truthlens demo``. In a checkout the first two are the repository's own
``configs/config.yaml`` and ``envoy.yaml`` (the files the tests run), not copies."""

from __future__ import annotations

from pathlib import Path

STARTER_DIR = Path(__file__).resolve().parent
CONFIG = STARTER_DIR / "config.yaml"
ENVOY = STARTER_DIR / "envoy.yaml"
COMPOSE = STARTER_DIR / "docker-compose.yaml"
DEMO_SCRIPT = STARTER_DIR / "demo_script.yaml"
# What ``truthlens init`` writes, by the name it gives each file.
INIT_FILES: tuple[tuple[str, Path], ...] = (
    ("config.yaml", CONFIG),
    ("envoy.yaml", ENVOY),
    ("docker-compose.yaml", COMPOSE),
)


class InitError(RuntimeError):
    """``truthlens init`` would overwrite a file (without ``force``) or cannot write."""


def write_starter(target: Path, *, force: bool = False) -> list[Path]:
    """Write the starter files into ``target`` (created if missing); returns the paths written.
    Refuses, before writing anything, when one already exists and ``force`` is False."""
    target.mkdir(parents=True, exist_ok=True)
    existing = [target / name for name, _ in INIT_FILES if (target / name).exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise InitError(f"{names} already exist{'s' if len(existing) == 1 else ''} (--force overwrites)")
    written = []
    for name, source in INIT_FILES:
        out = target / name
        out.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        written.append(out)
    return written
