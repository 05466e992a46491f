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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def output_at(commit: str, paths: Sequence[str], module: str, args: Sequence[str],
              *, this_tree: Sequence[Path] = ()) -> str:
    """The standard output of ``python -m module args`` run on ``paths`` of ``commit`` (e.g.
    ``src``, ``training``), with the files ``this_tree`` names copied in from this checkout (a
    bench module the older build does not have). Raises ``CalledProcessError`` with the child's
    stderr when it fails."""
    with tree_at(commit, paths, this_tree=this_tree) as (tmp, env):
        done = subprocess.run([sys.executable, "-m", module, *args], cwd=tmp, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
        return done.stdout


@contextmanager
def tree_at(
    commit: str, paths: Sequence[str], *, this_tree: Sequence[Path] = ()
) -> Iterator[tuple[str, dict[str, str]]]:
    """``paths`` of ``commit`` in a temporary folder (with ``this_tree``'s files copied in), and
    the environment a child process there imports that build's code with. For a child that
    stays up beside this process (a bench that takes turns between the builds)."""
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        archive = subprocess.run(["git", "archive", commit, *paths], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        for path in this_tree:
            target = Path(tmp) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        # (the tree is no checkout: an older bench that reads git history, bench/baselines.py,
        # reads this repository's)
        git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], check=True, capture_output=True,
                                 text=True).stdout.strip()
        yield tmp, {**os.environ, "PYTHONPATH": f"{tmp}/src{os.pathsep}{tmp}", "GIT_DIR": git_dir}
