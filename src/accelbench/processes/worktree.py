"""--ab-ref REF: the project's code at a git ref, checked out in a worktree that the run makes
and removes (the parent side: git is run here, never in a worker).

An A/B run's environment A then imports the project from that worktree: its PYTHONPATH leads
with the worktree's copies of this interpreter's paths that lie inside the repository (a src/
layout installed editable), and ACCELBENCH_ROOT_MAP maps the repository onto the worktree for
the user's modules (user_modules.import_modules). Everything outside the repository, the
interpreter and its packages included, is the same on both sides: the two differ by the
commits between REF and the working tree, which is what a pull request asks about.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from accelbench.environments import Environment
from accelbench.user_modules import ROOT_MAP_VARIABLE


class WorktreeError(RuntimeError):
    """The ref could not be checked out: one line naming it and git's reason."""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        reason = next(iter(done.stderr.strip().splitlines()), f"git exited with status {done.returncode}")
        raise WorktreeError(f"--ab-ref: git {' '.join(args[:2])}: {reason}")
    return done.stdout.strip()


@dataclass
class Worktree:
    ref: str
    commit: str
    repository: Path  # the working tree's top level
    path: Path  # the worktree's top level
    folder: Path  # the temporary folder holding it

    @staticmethod
    def resolve(ref: str, inside: Path) -> tuple[Path, str]:
        """(the repository's top level, the commit `ref` names); WorktreeError where either is not."""
        if shutil.which("git") is None:
            raise WorktreeError("--ab-ref: git is not installed here")
        repository = Path(_git(inside, "rev-parse", "--show-toplevel"))
        try:
            return repository, _git(repository, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        except WorktreeError:
            raise WorktreeError(f"--ab-ref: {ref!r} names no commit in {repository}") from None

    @classmethod
    def checkout(cls, ref: str, inside: Path) -> Worktree:
        """A detached worktree of `ref` for the repository that holds `inside`."""
        repository, commit = cls.resolve(ref, inside)
        folder = Path(tempfile.mkdtemp(prefix="accelbench-ref-"))
        path = folder / "tree"
        try:
            _git(repository, "worktree", "add", "--detach", str(path), commit)
        except WorktreeError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(ref, commit, repository, path, folder)

    def mapped(self, paths: Sequence[str]) -> list[str]:
        """The worktree's copies of the paths that lie inside the repository."""
        found = []
        for entry in paths:
            try:
                inner = Path(entry).resolve().relative_to(self.repository.resolve())
            except ValueError:
                continue
            found.append(str(self.path / inner))
        return list(dict.fromkeys(found))

    def environment(self, name: str) -> Environment:
        """This interpreter, importing the project from the worktree."""
        python_path = os.pathsep.join([*self.mapped(sys.path), *filter(None, [os.environ.get("PYTHONPATH")])])
        variables = ((ROOT_MAP_VARIABLE, f"{self.repository.resolve()}{os.pathsep}{self.path}"),)
        if python_path:
            variables = (("PYTHONPATH", python_path), *variables)
        return Environment(name, sys.executable, variables, label=f"git {self.ref} = {self.commit[:10]}")

    def remove(self) -> None:
        """The worktree and its folder gone; git's record of it pruned."""
        subprocess.run(
            ["git", "-C", str(self.repository), "worktree", "remove", "--force", str(self.path)], capture_output=True
        )
        shutil.rmtree(self.folder, ignore_errors=True)
        subprocess.run(["git", "-C", str(self.repository), "worktree", "prune"], capture_output=True)
