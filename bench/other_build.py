"""Runs a bench module against another build's code: the build's files at a commit (``git
archive``) in a temporary folder, the module run there in a child process, its output returned.
So one bench run can print this build's figures beside an older one's, each with its own code
and model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path


def output_at(commit: str, paths: Sequence[str], module: str, args: Sequence[str],
              *, this_tree: Sequence[Path] = ()) -> str:
    """The standard output of ``python -m module args`` run on ``paths`` of ``commit`` (e.g.
    ``src``, ``training``), with the files ``this_tree`` names copied in from this checkout (a
    bench module the older build does not have). Raises ``CalledProcessError`` with the child's
    stderr when it fails."""
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        archive = subprocess.run(["git", "archive", commit, *paths], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        for path in this_tree:
            target = Path(tmp) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        env = {**os.environ, "PYTHONPATH": f"{tmp}/src{os.pathsep}{tmp}"}
        done = subprocess.run([sys.executable, "-m", module, *args], cwd=tmp, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
        return done.stdout
