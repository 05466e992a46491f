"""Old detector models that benchmarks compare against, restored on demand from git history.

The baselines (three ~23 MB ONNX graphs) left the working tree so that a checkout carries only the
models that serve. Each one is still in the repository's history: :func:`restore` writes it back to
``bench/baselines/<name>/`` (git-ignored) with ``git show <commit>:<path>`` the first time a benchmark
asks, and hands back the folder from then on.

    python -m bench.baselines [NAME ...]     # restore them ahead of time (default: all)

A shallow clone lacks the history: then the error says to deepen it (``git fetch --unshallow``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = Path(__file__).with_name("baselines")
FILES = ("manifest.json", "model.onnx", "tokenizer.json")

# name -> the last commit whose tree holds bench/baselines/<name>/ (they left the tree right after it).
BASELINES = {
    # run 6: the shipped model before run 9; bench.detector_quality's "previous" row
    "run6": "863d14e0366063b64871a1b540bcf6c6ca255b56",
    # the HaluEval-trained model run 3 started from (training/README.md, Runs 1-2)
    "halueval-v2": "863d14e0366063b64871a1b540bcf6c6ca255b56",
    # the first synthetic-data model
    "synthetic-v1": "863d14e0366063b64871a1b540bcf6c6ca255b56",
}


class BaselineUnavailable(RuntimeError):
    """The baseline cannot be restored here; the message says what to do."""


def restore(name: str) -> Path:
    """The folder of baseline ``name``, written from git history if it is not here yet."""
    if name not in BASELINES:
        raise BaselineUnavailable(f"unknown baseline {name!r} (known: {', '.join(sorted(BASELINES))})")
    folder = FOLDER / name
    if all((folder / f).is_file() for f in FILES):
        return folder
    commit = BASELINES[name]
    contents = {f: _git_show(commit, f"bench/baselines/{name}/{f}") for f in FILES}
    folder.mkdir(parents=True, exist_ok=True)
    for filename, data in contents.items():
        partial = folder / f".{filename}.partial"
        partial.write_bytes(data)
        partial.replace(folder / filename)  # a half-written model never looks restored
    return folder


def _git_show(commit: str, path: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
                              capture_output=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BaselineUnavailable(f"cannot run git to restore {path} from commit {commit}: {exc}") from exc
    if done.returncode == 0:
        return done.stdout
    raise BaselineUnavailable(f"{path} is not at commit {commit} here: {_why(done.stderr)}")


def _why(stderr: bytes) -> str:
    """What to do when ``git show`` failed: a shallow clone needs its history fetched."""
    shallow = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, check=False, timeout=30)
    if shallow.stdout.strip() == "true":
        return ("this is a shallow clone, which lacks the history the baselines are kept in; run "
                "`git fetch --unshallow` (or clone without --depth) and try again")
    if shallow.returncode != 0:
        return "this is not a git checkout (the baselines are kept in the repository's history); use a clone"
    return stderr.decode("utf-8", "replace").strip() or "git show failed"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.baselines", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"default: all ({', '.join(BASELINES)})")
    args = parser.parse_args(argv)
    try:
        for name in args.names or list(BASELINES):
            print(f"{name}: {restore(name)}")
    except BaselineUnavailable as exc:
        print(f"bench.baselines: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
