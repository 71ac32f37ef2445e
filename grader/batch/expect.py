"""What a merge should have: `grade merge --expect CLASS` and `--shards N` (docs/batch.md, "Several
machines: Slurm, shards and `grade merge`").

Without them `grade merge` joins whatever rows it finds: a shard that never ran (a Slurm array submitted as
0-3 instead of 1-4), a task cancelled half-way or a student's file handed in after grading would give a
gradebook with rows missing, or stale, and exit 0. With them the merge knows what it should have:

  --expect CLASS  the class as `grade batch` finds it (grader.batch.discovery.find, the same ids): every
                  submission must have a row, graded on the bytes its file holds now (the row's sha256); rows
                  of ids that are no longer in the class are dropped from the gradebook, and said.
  --shards N      every shard K of N has its results file (results.shard-K-of-N.jsonl); with --expect, each
                  missing submission is named with its shard.

Something missing makes the merge exit 4 (EXIT_INCOMPLETE, as `grade batch` does for an unfinished batch): the
gradebook of the rows there are is still written, every missing one named on stderr and in gradebook.json's
settings (`missing`), so the merge fails loudly and a rerun of the missing shards, then of the merge,
completes it. grader.batch.command.run_merge calls check() once it has picked the row that counts for each id
(grader.batch.merging, after its checks of every line), and write_merge says messages() through its Reply (with
--json, report() is the document's `expected`).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.discovery import find, name_submitters, shard
from grader.batch.gradebook import BatchResult
from grader.batch.protocol import Item
from grader.batch.reply import Expected
from grader.core.errors import EXIT_INCOMPLETE, EXIT_PASS
from grader.core.text import printable

SHOWN = 20
"""How many ids a message names before "and N more"."""


def add_options(p: argparse.ArgumentParser) -> None:
    """Add --expect and --shards to `grade merge`'s parser `p`."""
    p.add_argument("--expect", action="append", metavar="CLASS",
                   help="the class folder (or files) the batch graded, as given to `grade batch`: exit 4 naming "
                        "every submission without a row, or whose row graded an earlier file; rows of "
                        "submissions no longer there are dropped (said on stderr). May be repeated")
    p.add_argument("--shards", type=_count, metavar="N",
                   help="the batch ran as N shards (--shard K/N): exit 4 naming each shard without its results "
                        "file")


def _count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give the number of shards, a whole number >= 1")
    return int(text)


@dataclass
class Expectation:
    """The merge's rows measured against what it should have (check()).

    rows: the rows to write (those of ids no longer in the class dropped); dropped: those ids; missing: ids of
    the class without a row; stale: ids whose row graded other bytes than the file holds now; lost_shards: the
    K of each shard without a results file; shard_of: the shard K of each missing or stale id (with --shards
    and --expect); checked: what was checked (the settings gradebook.json records)."""

    rows: list[BatchResult]
    dropped: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    lost_shards: list[int] = field(default_factory=list)
    shard_of: dict[str, int] = field(default_factory=dict)
    checked: dict[str, object] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether nothing is missing, stale or lost."""
        return not (self.missing or self.stale or self.lost_shards)

    @property
    def exit_code(self) -> int:
        """EXIT_PASS when complete, else EXIT_INCOMPLETE."""
        return EXIT_PASS if self.complete else EXIT_INCOMPLETE

    @property
    def settings(self) -> dict[str, object]:
        """What gradebook.json's settings record of the check: nothing when none was asked for."""
        if not self.checked:
            return {}
        return {**self.checked, "complete": self.complete, "missing": self.missing, "stale": self.stale,
                "lost_shards": self.lost_shards, "dropped": self.dropped}

    def messages(self) -> list[str]:
        """The lines `grade merge` prints on stderr: the dropped rows, then what is missing (with the fix)."""
        lines = []
        if self.dropped:
            lines.append(f"dropped {len(self.dropped)} row(s) of submissions no longer in the class: "
                         f"{_names(self.dropped)}")
        n = self.checked.get("shards")
        for k in self.lost_shards:
            lines.append(f"incomplete: shard {k} of {n} has no results file (results.shard-{k}-of-{n}.jsonl)")
        if self.missing:
            lines.append(f"incomplete: {len(self.missing)} of {self.checked.get('expected', '?')} submission(s) "
                         f"have no row: {self._with_shards(self.missing)}")
        if self.stale:
            lines.append(f"incomplete: {len(self.stale)} row(s) graded an earlier file than the class holds now: "
                         f"{self._with_shards(self.stale)}")
        if not self.complete:
            todo = sorted({self.shard_of[i] for i in self.missing + self.stale if i in self.shard_of}
                          | set(self.lost_shards))
            again = f"shard(s) {', '.join(map(str, todo))} of {n}" if todo else "the batch"
            lines.append(f"run {again} again (grade batch resumes: it grades only what is missing), then merge "
                         "again")
        return lines

    def report(self) -> Expected | None:
        """What `grade merge --json` says of the check (grader.batch.reply.Expected), or None when none was asked
        for."""
        return Expected.model_validate(self.settings) if self.checked else None

    def _with_shards(self, ids: list[str]) -> str:
        if not self.shard_of:
            return _names(ids)
        by_shard: dict[int, list[str]] = {}
        for i in ids:
            by_shard.setdefault(self.shard_of[i], []).append(i)
        return "; ".join(f"shard {k}: {_names(v)}" for k, v in sorted(by_shard.items()))


def _names(ids: list[str]) -> str:
    shown = ", ".join(printable(i, 60) for i in ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def expect_problem(args: argparse.Namespace) -> str | None:
    """Why `--expect` cannot be checked (a CLASS path that does not exist), or None. A usage error: nothing merged."""
    gone = [p for p in (args.expect or []) if not os.path.lexists(p)]
    return f"--expect {printable(gone[0], 80)}: no such file or folder" if gone else None


def check(rows: list[BatchResult], files: list[Path], args: argparse.Namespace) -> Expectation:
    """`rows` (the latest row of each id, read from `files`) measured against `args.expect` (the class's paths,
    discovered as `grade batch` does, leaving out the merge's OUT and every RESULTS folder) and `args.shards`
    (N: each results.shard-K-of-N.jsonl among `files`). Without either, every row is kept and nothing is
    checked. Never raises for a bad class path: check expect_problem() first."""
    out = Expectation(rows=list(rows))
    n = getattr(args, "shards", None)
    if n:
        names = {f.name for f in files}
        out.lost_shards = [k for k in range(1, n + 1) if f"results.shard-{k}-of-{n}.jsonl" not in names]
        out.checked["shards"] = n
    if not getattr(args, "expect", None):
        return out
    items = _class_items(args)
    by_id = {it.id: it for it in items}
    have = {r.id: r for r in rows}
    out.rows = [r for r in rows if r.id in by_id]
    out.dropped = [r.id for r in rows if r.id not in by_id]
    out.missing = [it.id for it in items if it.id not in have]
    out.stale = [it.id for it in items if it.id in have and it.sha256 and have[it.id].sha256
                 and it.sha256 != have[it.id].sha256]
    if n:
        out.shard_of = {it.id: k for k in range(1, n + 1) for it in shard(items, k, n)}
    out.checked.update({"expect": [printable(p, None) for p in args.expect], "expected": len(items)})
    return out


def _class_items(args: argparse.Namespace) -> list[Item]:
    """The submissions of `args.expect` as `grade batch` finds them (grader.batch.discovery.find, with the ids an
    autograder's metadata file gives: name_submitters, lenient: a file that cannot be read names no one), sorted by
    id, less the entries that are the merge's OUT or one of its RESULTS folders (or inside one: a batch's --out
    kept in the class folder is no student)."""
    found = find(args.expect)
    name_submitters(found, lenient=True)
    skip = [_real(Path(p)) for p in [args.out, *args.results] if Path(p).is_dir()]
    left_out = {id(it) for root, members in found.roots.items() for it in members
                if it.entry and _inside(_real(root / it.entry), skip)}
    return [it for it in found.items if id(it) not in left_out]


def _real(path: Path) -> Path:
    """`path` resolved (links, `..`), or made absolute where it cannot be."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return Path(os.path.abspath(path))


def _inside(real: Path, folders: list[Path]) -> bool:
    """Whether the resolved path `real` is one of `folders` or inside one."""
    return any(real == f or f in real.parents for f in folders)
