"""`grade batch` and `grade merge`: grade a whole class, each submission in its own process, resumably.

This module finds the submissions (grader.batch.discovery: their ids and paths, whose metadata names them, the files
that are not `.cu`, the links it refuses), keys each row for resume, starts the workers (grader.batch.pool,
grader.batch.worker) and writes the class's outputs (grader.batch.outputs: every file in one table, written by one
writer from the settled gradebook); `grade merge` reads the shards' results files (grader.batch.merging). Both answer
through grader.batch.reply (stderr, and one JSON document with --json). What each of those does for the instructor,
with every option and output: docs/batch.md; what a hostile submission can and cannot do: docs/security.md.

Exit codes:
  0  every submission has a row (whatever the verdicts)
  2  nothing graded: bad option, nothing to grade, OUT locked by another batch, a metadata file that cannot be
     read (without --no-metadata), a --gpus naming no visible GPU, no NVRTC sandbox on this machine without
     --unsandboxed, a GPU the installed NVRTC cannot compile for
  3  no GPU: every submission has a row, but verification and timing were skipped (rows are no-gpu or error)
  4  incomplete: --limit reached, interrupted once grading began (Ctrl-C, SIGTERM), a worker could not start,
     a row is busy (the GPU was shared while timing), or the install is incomplete (a CUDA extra missing:
     nothing graded, no row written); run the same command again to finish
  130 interrupted (Ctrl-C) before grading began (finding the submissions, probing the GPUs)
`grade merge`: 0 merged; 2 nothing written (a RESULTS or --expect path missing, no result rows, or rows that cannot
be trusted: torn, foreign, duplicate or not as their reports say, without --accept-problems); 4 incomplete (with
--expect or --shards: a submission without a row, a stale row, a shard without its results file; the gradebook of
the rows there are is still written: grader.batch.expect); 130 interrupted.
With --format gradescope every exit writes OUT/results.json (not graded, with the reason, where nothing was).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader import exercises
from grader.batch import discovery, expect, gpus, merging, outputs, people, pool, protocol, reply, slurm, worker
from grader.batch import gradebook as gb
from grader.batch.discovery import (  # noqa: F401
    ARCHIVE_SUFFIXES,
    LINK_REFUSED,
    SOURCE_SUFFIXES,
    discover,
    parse_shard,
    shard,
    unique_ids,
)
from grader.batch.gpus import GpuPlan, plan_gpus, probe_gpus, run_probe  # noqa: F401 - the batch's GPUs
from grader.batch.outputs import Settled, write_outputs, write_report
from grader.batch.pool import Progress, Slot, item_error, run_jobs
from grader.batch.protocol import (
    DEFAULT_COMPILE_LIMIT,
    DEFAULT_MEMORY_LIMIT_GIB,
    DEFAULT_RUN_LIMIT,
    BatchSettings,
    Item,
)
from grader.batch.reply import ClassRun, Reply, files_shown
from grader.compile import sandbox
from grader.compile.toolkit import arch_type
from grader.core.errors import (
    EXIT_INCOMPLETE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NO_GPU,
    EXIT_PASS,
    InputError,
    Interrupted,
    Stage,
    WorkerStartError,
    exit_codes_help,
)
from grader.core.options import (
    HelpFormatter,
    add_format_options,
    gpu_list,
    positive_number,
    positive_seconds,
    seed_type,
)
from grader.core.text import printable
from grader.core.version import __version__
from grader.output.report import GradeReport

RESULT_SUFFIXES = (".py", ".cu", ".json")
"""The grader files whose digest is part of the resume key, at any depth under grader/ (grader_digest)."""
PLUMBING = (pool, worker, gb, protocol, discovery, expect, slurm, gpus, merging, people, reply, outputs)
"""The batch's own modules (with this one): left out of the digest, as they do not change a grade."""


# --- settings and resume keys --------------------------------------------------------------------------
def plumbing_files() -> set[str]:
    """The paths, relative to grader/ (POSIX), of the batch's own modules (PLUMBING and this one)."""
    base = Path(__file__).resolve().parents[1]
    return {Path(f).resolve().relative_to(base).as_posix() for f in (__file__, *(m.__file__ for m in PLUMBING))}


def digest_files(grader_dir: Path) -> list[tuple[str, Path]]:
    """(name, path) of every file a grade depends on, sorted by name: each RESULT_SUFFIXES file at any depth
    under `grader_dir` (names `grader/...`; hidden folders, __pycache__ and plumbing_files() left out). The
    page's chain kernels are among them (grader/exercises/bias_gelu/chain.cu,
    grader/exercises/bias_gelu/page_kernels.py): a grading reads
    nothing of reference_kernels/."""
    skipped = plumbing_files()
    found = []
    for f in grader_dir.rglob("*"):
        rel = f.relative_to(grader_dir)
        if (f.suffix in RESULT_SUFFIXES and f.is_file() and rel.as_posix() not in skipped
                and not any(part.startswith(".") or part == "__pycache__" for part in rel.parts)):
            found.append((f"grader/{rel.as_posix()}", f))
    return sorted(found)


def grader_digest(grader_dir: Path | None = None) -> str:
    """sha256 (first 16 hex digits) of the names and bytes of digest_files(): a change to any of them changes
    every row's key, so the next batch regrades. The folder defaults to the installed grader/. Raises OSError
    when one of the files cannot be read."""
    grader_dir = grader_dir or Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for name, f in digest_files(grader_dir):
        h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def settings_for(settings: BatchSettings, cards: list[str]) -> dict[str, object]:
    """The grader settings a result depends on, part of every row's key (module docstring): the grader's version
    and digest, the settings' arch and seed, the GPU models `cards`; `counters` and `counters_when_slow` only
    when on, so rows graded without them keep their keys; `exercise` only when not the default. The limits and the
    sandbox are not in it."""
    key = {"grader": __version__, "grader_source": grader_digest(), "arch": settings.arch,
           "seed": settings.seed, "cards": sorted(set(cards))}
    if settings.counters:
        key["counters"] = True
    if settings.counters_when_slow:
        key["counters_when_slow"] = True
    if settings.exercise and settings.exercise != exercises.DEFAULT:
        key["exercise"] = settings.exercise
    return key


def result_key(item: Item, settings: dict[str, object]) -> str:
    """The resume key of `item` under `settings` (settings_for): sha256 of its id, its content hash (or, for an
    item that cannot be read, its problem) and the settings. The id is part of it: two students who hand in the
    same bytes get a row each."""
    what = {"id": item.id, "sha256": item.sha256} if item.sha256 else {"id": item.id, "problem": item.problem}
    return hashlib.sha256(json.dumps({**what, **settings}, sort_keys=True).encode()).hexdigest()


# --- the command ---------------------------------------------------------------------------------------
def batch_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade batch` (options and defaults as in the module docstring)."""
    p = argparse.ArgumentParser(
        prog="grade batch",
        description="Grade a class: every submission compiled, verified and timed in its own process, one per "
        "GPU; results kept as they come, so a rerun finishes an interrupted batch.",
        epilog=exit_codes_help(
            (EXIT_PASS, "every submission has a row (whatever the verdicts)"),
            (EXIT_INPUT, "nothing graded: bad option, nothing to grade, OUT locked by another batch, a metadata "
                         "file that cannot be read, a --gpus naming no visible GPU, no NVRTC sandbox without "
                         "--unsandboxed, a GPU the installed NVRTC cannot compile for"),
            (EXIT_NO_GPU, "no GPU: every submission has a row, static checks only (verification and timing need one)"),
            (EXIT_INCOMPLETE, "incomplete: --limit reached, interrupted once grading began (Ctrl-C, SIGTERM: the "
                              "rows so far are kept), a worker could not start, a row is busy, or the install "
                              "lacks its CUDA extra (nothing graded); run the same command again to finish"),
            (EXIT_INTERRUPTED, "interrupted (Ctrl-C) before grading began (finding the submissions, probing the "
                               "GPUs)")),
        formatter_class=HelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a class folder (one .cu per student, or one folder "
                   "per student holding one .cu), or several: .cu files, student folders (`uploads/*`: the ids "
                   "the class folder gives), and a submission_metadata.yml that names them")
    p.add_argument("--out", default="results", help="folder for results.jsonl, the gradebook, reports/ and index.html "
                   "(default: results)")
    p.add_argument("--compile-limit", type=positive_seconds, default=DEFAULT_COMPILE_LIMIT, metavar="S",
                   help=f"seconds NVRTC may take per submission (default {DEFAULT_COMPILE_LIMIT:g})")
    p.add_argument("--run-limit", type=positive_seconds, default=DEFAULT_RUN_LIMIT, metavar="S",
                   help=f"seconds for start-up, and for verification plus timing (default {DEFAULT_RUN_LIMIT:g})")
    p.add_argument("--memory-limit", type=positive_number, default=DEFAULT_MEMORY_LIMIT_GIB, metavar="GIB",
                   help=f"stop a worker whose resident memory passes this (default {DEFAULT_MEMORY_LIMIT_GIB:g} GiB)")
    p.add_argument("--shard", metavar="K/N", help="grade only slice K of N (1-based; sorted by id, round robin)")
    p.add_argument("--gpus", type=gpu_list, metavar="LIST", help="use only these visible GPUs (positions, e.g. 0,2); "
                   "default all; naming a GPU where none is visible is an error")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="parallel workers when there is no GPU (static checks only); default 1")
    p.add_argument("--limit", type=int, metavar="N", help="grade at most N submissions in this run (exit 4 if "
                   "some are left; a rerun continues)")
    p.add_argument("--retry-errors", action="store_true", help="regrade submissions whose recorded verdict is error")
    p.add_argument("--regrade", action="store_true", help="ignore earlier results and grade everything again")
    p.add_argument("--arch", type=arch_type, default=None, help="compile target when there is no GPU (default sm_90)")
    p.add_argument("--exercise", choices=exercises.names(), default=exercises.DEFAULT,
                   help=f"the exercise every submission answers (default {exercises.DEFAULT})")
    p.add_argument("--seed", type=seed_type, help="the same input seed for every submission (default: fresh per run)")
    add_format_options(p, ("text", "json", "gradescope"), {
        "text": "the summary table on stdout (default)",
        "json": "the run's summary as one JSON document on stdout, progress and warnings on stderr",
        "gradescope": "one submission (PATH: the student's folder): also write OUT/results.json for Gradescope"})
    p.add_argument("--no-metadata", action="store_true", help="read no submission_metadata.yml or .json: grade "
                   "without the students' names and emails (a metadata file that cannot be read otherwise stops "
                   "the batch)")
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary table (warnings still "
                   "go to stderr)")
    p.add_argument("--counters", action="store_true",
                   help="also measure each timed kernel's DRAM and L2 bytes with Nsight Compute (ncu); never "
                        "changes a verdict")
    p.add_argument("--counters-when-slow", action="store_true",
                   help="measure the counters of a correct kernel under half the one-float-per-thread copy, as "
                        "`grade FILE` does (its hints then name the measured cause); never changes a verdict")
    p.add_argument("--unsandboxed", action="store_true",
                   help="grade even where NVRTC cannot be confined by Landlock (not Linux 5.13+): the include "
                        "filter alone then keeps submissions from reading this machine's files; recorded in "
                        "the gradebook")
    return p


def merge_parser() -> argparse.ArgumentParser:
    """The argument parser of `grade merge OUT RESULTS...`."""
    p = argparse.ArgumentParser(prog="grade merge", description="Join the results of batch shards into one "
                                "gradebook in OUT: the files a batch writes in each folder given (results.jsonl, "
                                "results.shard-K-of-N.jsonl), or results files given by path.",
                                epilog=exit_codes_help((EXIT_PASS, "merged"),
                                                       (EXIT_INPUT, "nothing written: bad option, a RESULTS or "
                                                                    "--expect path missing, no result rows, or rows "
                                                                    "that cannot be trusted (torn, foreign, "
                                                                    "duplicate, not as their reports say; each "
                                                                    "named by file and line) without "
                                                                    "--accept-problems"),
                                                       (EXIT_INCOMPLETE, "incomplete (--expect, --shards): "
                                                                         "submissions or shards missing, named on "
                                                                         "stderr; the gradebook of the rows found "
                                                                         "is written"),
                                                       EXIT_INTERRUPTED),
                                formatter_class=HelpFormatter)
    p.add_argument("out", metavar="OUT", help="folder for gradebook.csv, gradebook.json, summary.md, scores.csv, "
                   "reports/ and index.html")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="folders holding a batch's results files, or "
                   "results files")
    add_format_options(p, ("text", "json"), {"text": "the files written, on stdout (default)",
                                             "json": "the merge's summary as one JSON document on stdout"})
    p.add_argument("--accept-problems", action="store_true", help="write the gradebook even though rows are torn, "
                   "foreign, duplicated or not as their reports say (each is still listed, and kept in "
                   "gradebook.json); a duplicated id keeps its latest row")
    p.add_argument("--quiet", action="store_true", help="print nothing but warnings and errors")
    expect.add_options(p)
    return p


def main(argv: list[str]) -> int:
    """`grade batch ...` or `grade merge ...` (argv[0] is 'batch' or 'merge'); returns the exit code."""
    if argv and argv[0] == "merge":
        return merge_main(argv[1:])
    return batch_main(argv[1:] if argv and argv[0] == "batch" else argv)


def batch_main(argv: list[str]) -> int:
    """`grade batch` (module docstring); returns the exit code."""
    parser = batch_parser()
    return run_batch(parser.parse_args(argv), parser)


def run_batch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """`grade batch` on arguments parsed by batch_parser() (or the `grade` command's copy of it, `parser`, which
    reports a bad option); returns the exit code. The steps: find the items and who handed them in, plan (GPUs,
    sandbox, settings, keys), resume (the rows already graded), grade the rest, write the outputs."""
    k, n = _checked_options(args, parser)
    say = Reply("batch", args.format == "json", args.out)
    if args.format == "gradescope":  # never a Gradescope run without results.json: the student sees why
        say.on_fail = lambda message: _not_graded(Path(args.out), message)
    found = find_items(args, k, n, say)
    if isinstance(found, int):
        return found
    items, exports = found
    plan = plan_batch(args, items, exports, (k, n), say)
    if isinstance(plan, int):
        return plan
    try:
        store = gb.ResultStore(plan.results_path)
    except OSError as err:
        return say.fail(f"cannot write {plan.results_path} ({err.strerror or err}); is another batch using this "
                        "folder?")
    reading = merging.read_results(merging.results_files([str(plan.out)])[0])
    known = {row.key: row for row, _, _ in reading.rows}
    todo, kept = resume(plan.items, known, regrade=args.regrade, retry_errors=args.retry_errors,
                        gpu_seen=bool(plan.gpus.names))
    rows = RowWriter(plan, store, kept)
    progress = Progress(len(plan.items), len(kept), len(plan.gpus.entries), args.quiet)
    try:
        complete = grade_items(plan, todo[: args.limit] if args.limit is not None else todo, rows, progress)
    finally:
        progress.end()
        store.close()
    return write_batch(plan, rows.results, complete, args, say)


def _checked_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[int, int]:
    """The shard (K, N) of `args` ((1, 1) without --shard); a bad option goes to parser.error (exit 2)."""
    try:
        k, n = parse_shard(args.shard) if args.shard else (1, 1)
        if args.workers < 1 or (args.limit is not None and args.limit < 1):
            raise ValueError("--workers and --limit must be positive whole numbers")
        if not args.out.strip():
            raise ValueError("--out: give a folder for the results")
    except ValueError as err:
        parser.error(str(err))
    return k, n


def find_items(args: argparse.Namespace, k: int, n: int, say: Reply) -> tuple[list[Item], dict] | int:
    """(the submissions to grade, the metadata files that named them) (grader.batch.discovery: find, then
    name_submitters; shard k of n with --shard; one for --format gradescope), or the exit code when nothing can be
    graded (no such path, an --out that is a file, a metadata file that cannot be read, nothing to grade). What
    was ignored, and the remarks on submissions, are said as warnings."""
    if not any(os.path.lexists(raw) for raw in args.paths):  # a typo'd class folder: not a student's row
        return say.fail(f"no such file or folder: {', '.join(printable(m, 80) for m in args.paths[:5])}; nothing "
                        "was graded")
    out_problem = _out_problem(Path(args.out))
    if out_problem:
        return say.fail(out_problem)
    gradescope = args.format == "gradescope"
    found = discovery.find(args.paths, exclude=Path(args.out), one=gradescope)
    exports: dict[str, dict[str, int]] = {}
    if args.no_metadata:
        found.ignored += [f"{printable(str(m), 120)}: not read (--no-metadata)" for m in found.metadata]
    else:
        try:
            exports, warnings = discovery.name_submitters(found, lenient=gradescope)
        except InputError as err:
            return say.fail(f"{err}; fix it, or add --no-metadata to grade without names")
        found.ignored += warnings
    for line in found.ignored + [r for it in found.items for r in it.remarks]:
        say.warn(line)
    items = shard(found.items, k, n) if args.shard else found.items
    if gradescope and any(not it.stray for it in items):
        items = [it for it in items if not it.stray]  # one student's folder: a .cpp beside the .cu is host code
    if gradescope and len(items) != 1:
        listed = ", ".join(printable(it.id, 40) for it in items[:5]) or "none"
        write_outputs(Path(args.out), Settled(gradescope=True, refused=(
            f"Expected exactly one .cu file with your {exercises.get(args.exercise).kernel_name} kernel; found "
            f"{len(items)} ({listed}).")))
        say.on_fail = None
        return say.fail(f"--format gradescope grades one submission; {len(items)} found ({listed})")
    if not items:
        return say.fail("nothing to grade: no .cu file or student folder under " + " ".join(args.paths))
    return items, exports


def _not_graded(out: Path, message: str) -> None:
    """Write OUT/results.json saying the submission was not graded, and why (the Gradescope route's every exit
    where nothing was graded: the student must never see only "autograder failed"); a folder that cannot be written
    is left as it is."""
    try:
        write_outputs(out, Settled(gradescope=True, not_graded=_not_graded_here(message)))
    except OSError:
        pass


def _not_graded_here(message: str) -> str:
    """What results.json says when nothing was graded because of `message`: not the submission's fault."""
    return (f"not graded: the grader could not grade here ({printable(message, 300)}); this is not your submission's "
            "fault: tell the course staff")


@dataclass
class BatchPlan:
    """What a batch grades and how: its items (each with its resume key), the Gradescope metadata files that named
    them (grader.batch.discovery.name_submitters), the GPU slots, the settings (and `key`, their part of every row's
    key: settings_for), the sandbox's state, the output folder, the shard ("K/N", None without --shard) and its
    `suffix` of the output names."""

    items: list[Item]
    exports: dict[str, dict[str, int]]
    gpus: GpuPlan
    settings: BatchSettings
    key: dict[str, object]
    box: sandbox.SandboxState
    out: Path
    suffix: str
    shard: str | None
    gradescope: bool

    @property
    def results_path(self) -> Path:
        """The results file this batch appends to (the first file of grader.batch.outputs.OUTPUTS)."""
        return self.out / outputs.OUTPUTS[0].file(self.suffix)


def plan_batch(args: argparse.Namespace, items: list[Item], exports: dict[str, dict[str, int]],
               slice: tuple[int, int], say: Reply) -> BatchPlan | int:
    """The plan of a batch on `items` (BatchPlan; every item's key set; `slice`: the shard (K, N)), or the exit code
    when nothing can be graded: a bad --gpus, an incomplete install or a GPU the installed NVRTC cannot compile
    for, no sandbox without --unsandboxed."""
    try:
        plan = plan_gpus(args.gpus, args.workers)
    except ValueError as err:
        return say.fail(str(err))
    if plan.problem:  # nothing can be graded on this machine: stop before any row, and say why
        return say.fail(f"{plan.problem}; nothing was graded", plan.problem_exit)
    box = sandbox.state()
    if not box.available and not args.unsandboxed:
        return say.fail(f"NVRTC cannot be sandboxed here ({box.reason}), so a submission could make it read "
                        "this machine's files; grade on Linux 5.13+ with Landlock, or add --unsandboxed to rely "
                        "on the include filter alone")
    if not box.available:
        say.warn(f"warning: grading without the NVRTC sandbox ({box.reason}); recorded in the gradebook")
    settings = BatchSettings(arch=args.arch, seed=args.seed, sandbox=box.available, counters=args.counters,
                             counters_when_slow=args.counters_when_slow, exercise=args.exercise,
                             compile_limit=args.compile_limit,
                             run_limit=args.run_limit, memory_limit_gib=args.memory_limit)
    key = settings_for(settings, plan.names)
    for it in items:
        it.key = result_key(it, key)
    k, n = slice
    return BatchPlan(items=items, exports=exports, gpus=plan, settings=settings, key=key, box=box,
                     out=Path(args.out), suffix=f".shard-{k}-of-{n}" if args.shard else "",
                     shard=f"{k}/{n}" if args.shard else None, gradescope=args.format == "gradescope")


def resume(items: list[Item], known: dict[str, gb.BatchResult], *, regrade: bool = False,
           retry_errors: bool = False, gpu_seen: bool = False) -> tuple[list[Item], dict[str, gb.BatchResult]]:
    """(the items to grade, in order; the rows kept, by key) given the rows `known` by key from earlier runs:
    an item is graded again when it has no row, with `regrade`, with `retry_errors` for an error row, and, when
    a GPU is seen (`gpu_seen`), for a no-gpu or busy row. A kept row gets what the item says now: its submitters,
    its path (relative to the class folder: its report's file too) and its remarks."""
    todo = [it for it in items if regrade or it.key not in known
            or (retry_errors and known[it.key].verdict == "error")
            or (gpu_seen and known[it.key].verdict in ("no-gpu", "busy"))]  # no GPU, or a busy one, last time
    again = {it.key for it in todo}
    kept = {it.key: _as_found_now(known[it.key], it) for it in items if it.key in known and it.key not in again}
    return todo, kept


def _as_found_now(row: gb.BatchResult, item: Item) -> gb.BatchResult:
    """`row`, an earlier run's, with what `item` says now (resume)."""
    report = row.report.model_copy(update={"file": item.path}) if row.report is not None else None
    return row.model_copy(update={"submitters": item.submitters, "submitted_at": item.submitted_at,
                                  "path": item.path, "remarks": item.remarks, "report": report})


class RowWriter:
    """Where each row lands the moment it is known: appended to the results file (`store`), its report written
    under the plan's output folder (grader.batch.outputs.write_report), and kept in `results` by key (with the rows
    kept from earlier runs)."""

    def __init__(self, plan: BatchPlan, store: gb.ResultStore, kept: dict[str, gb.BatchResult]) -> None:
        self.out, self.shard, self.store, self.results = plan.out, plan.shard, store, dict(kept)

    def record(self, item: Item, report: GradeReport, phases: dict[str, float], entry: str | None) -> None:
        """The row of `item` graded to `report` (phases: seconds; entry: its GPU's CUDA_VISIBLE_DEVICES value)."""
        row = gb.make_result(id=item.id, path=item.path, key=item.key, sha256=item.sha256, report=report,
                             grader_version=__version__, device=entry, phases=phases,
                             submitters=item.submitters, submitted_at=item.submitted_at, shard=self.shard,
                             remarks=item.remarks)
        self.results[item.key] = row = self.store.append(row)  # as written: escaped, as a rerun or merge reads it
        write_report(self.out, row.id, row.report, row.submitters, row.submitted_at)  # ready to send back at once


def grade_items(plan: BatchPlan, todo: list[Item], rows: RowWriter, progress: Progress) -> bool:
    """Grade `todo`: an item with a problem becomes its error row at once, the rest go to the workers
    (grader.batch.pool.run_jobs). Returns False when interrupted (Ctrl-C, SIGTERM) or a worker could not start
    (said on stderr), else True."""
    for it in [it for it in todo if it.problem]:
        rows.record(it, item_error(it, Stage.INPUT, it.problem, plan.settings.exercise), {}, None)
        progress.done += 1
    todo = [it for it in todo if not it.problem]
    if not todo:
        return True
    tmp = Path(tempfile.mkdtemp(prefix="grade-batch-"))
    try:
        with _interrupt_on_signals():
            return run_jobs(todo, [Slot(entry=e) for e in plan.gpus.entries], plan.settings, on_result=rows.record,
                            progress=progress, tmp=tmp)
    except Interrupted:
        return False
    except WorkerStartError as err:
        print(f"grade batch: {printable(str(err), None)}; the batch stopped (rows so far are kept: fix the install "
              "and run again)", file=sys.stderr)
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _interrupt_on_signals():
    """While inside: SIGINT and SIGTERM raise Interrupted (once: a second Ctrl-C must not break the clean-up);
    the handlers before are put back after. Off the main thread, signals are left alone."""
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    stopping = []

    def interrupt(signum, frame):
        if not stopping:
            stopping.append(signum)
            raise Interrupted()

    for s in old:
        try:
            signal.signal(s, interrupt)
        except ValueError:  # not the main thread: no clean stop on a signal
            pass
    try:
        yield
    finally:
        for s, h in old.items():
            try:
                signal.signal(s, h)
            except (ValueError, TypeError):
                pass


def write_batch(plan: BatchPlan, results: dict[str, gb.BatchResult], complete: bool, args: argparse.Namespace,
                say: Reply) -> int:
    """Write the gradebook of every row there is (every file of grader.batch.outputs.OUTPUTS it wants: the
    gradebook's, the reports, the page, Gradescope's results.json on its route), say the
    students on more than one submission, print the summary (text unless quiet, or the ClassRun with --json), and
    return the exit code (module docstring): 4 when incomplete or a row is busy, 3 when a row is no-gpu or there
    is no GPU, else 0."""
    rows = [results[it.key] for it in plan.items if it.key in results]
    complete = complete and len(rows) == len(plan.items)
    s = plan.settings
    book = gb.build_gradebook(rows, __version__, {**plan.key, "shard": plan.shard, "compile_limit":
                                                         s.compile_limit, "run_limit": s.run_limit,
                                                         "memory_limit_gib": s.memory_limit_gib,
                                                         "sandbox": plan.box.describe(),
                                                         **({"gradescope_export": plan.exports} if plan.exports
                                                            else {})})
    stopped = _not_graded_here("the batch stopped before the submission was graded; run it again")
    paths = write_outputs(plan.out, Settled(book, plan.suffix, gradescope=plan.gradescope, not_graded=stopped))
    for who in book.shared:
        say.warn(who.describe())
    if not complete or any(r.verdict == "busy" for r in rows):  # a busy row is graded again by a rerun
        code = EXIT_INCOMPLETE
    else:
        code = EXIT_NO_GPU if any(r.verdict == "no-gpu" for r in rows) or not plan.gpus.names else EXIT_PASS
    if not args.quiet and args.format != "json":
        _print_summary(book, paths, plan.gpus, complete, len(plan.items) - len(rows))
    return say.finish(ClassRun(command="batch", exit_code=code, out=str(plan.out), complete=complete,
                               submissions=len(plan.items), left=len(plan.items) - len(rows), counts=book.counts,
                               gpus=plan.gpus.names, no_gpu="" if plan.gpus.names else plan.gpus.reason,
                               files=files_shown(paths)))


def merge_main(argv: list[str]) -> int:
    """`grade merge OUT RESULTS...`: the latest row of each id over all inputs, written as one gradebook."""
    return run_merge(merge_parser().parse_args(argv))


def run_merge(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """`grade merge` on arguments parsed by merge_parser() or the `grade` command's copy of it (`parser`, unused:
    for the same call as run_batch's); returns the exit code. Reads the results files (grader.batch.merging), stops
    on rows that cannot be trusted unless --accept-problems, picks the row that counts for each id, checks them
    against --expect and --shards (grader.batch.expect) and writes one gradebook of them (write_merge)."""
    say = Reply("merge", args.format == "json", args.out)
    files, notes, missing = merging.results_files(args.results)
    if missing:
        return say.fail(f"{printable(missing[0], 200)}: no such file or folder; nothing was merged")
    out_problem = _out_problem(Path(args.out)) or expect.expect_problem(args)
    if out_problem:
        return say.fail(out_problem)
    try:
        reading = merging.read_results(files)
    except OSError as err:
        return say.fail(f"{printable(str(err.filename or ''), 200)}: cannot be read ({err.strerror or err}); nothing "
                        "was merged")
    for note in notes + reading.notes:
        say.warn(note)
    merged = merging.latest(reading)
    if not merged:
        return say.fail("nothing to merge: no result rows in " + " ".join(args.results), problems=reading.problems)
    if reading.problems and not args.accept_problems:
        return say.fail(f"{len(reading.problems)} row(s) cannot be trusted as they are (listed above, by file and "
                        "line); nothing was written: fix or leave out what each line says, or add "
                        "--accept-problems to write the gradebook anyway", problems=reading.problems)
    return write_merge(expect.check(merged, files, args), files, reading, args, say)


def write_merge(expected: expect.Expectation, files: list[Path], reading: merging.Reading,
                args: argparse.Namespace, say: Reply) -> int:
    """Write the merged gradebook of `expected.rows` (the rows that count, read from `files`, less those of
    submissions no longer in the class) to OUT, with what --expect and --shards found in its settings; say what
    was accepted, who is on more than one submission, and what was dropped or is missing; return the exit code:
    0, or 4 when the check found something missing (grader.batch.expect)."""
    for problem in reading.problems:  # accepted: still said, and kept in the gradebook
        say.warn(f"accepted: {problem.describe()}")
    merged = expected.rows
    versions = sorted({r.grader_version for r in merged})
    book = gb.build_gradebook(merged, ", ".join(versions), {
        "merged_from": [str(f) for f in files],
        "problems_accepted": [p.model_dump(mode="json") for p in reading.problems], **expected.settings})
    paths = write_outputs(Path(args.out), Settled(book))
    for who in book.shared:
        say.warn(who.describe())
    if not args.quiet and args.format != "json":
        print(f"merged {len(merged)} submissions from {len(files)} file(s)")
        for kind, path in paths.items():
            print(f"  {kind}: {path}")
    for line in expected.messages():
        say.warn(line)
    return say.finish(ClassRun(command="merge", exit_code=expected.exit_code, out=str(args.out),
                               complete=expected.complete, submissions=len(merged),
                               left=len(expected.missing) + len(expected.stale), counts=book.counts,
                               files=files_shown(paths), problems=reading.problems,
                               expected=expected.report()))


def write_class_outputs(book: gb.Gradebook, out: Path, suffix: str = "") -> dict[str, Path]:
    """What a batch (with `suffix`: its shard's) or a merge writes from `book` into `out` off Gradescope's route:
    write_outputs of Settled(book, suffix). Returns {kind: path} (kind "reports" is the folder)."""
    return write_outputs(out, Settled(book, suffix))


def _out_problem(out: Path) -> str | None:
    """Why the output folder `out` cannot be used (it, or a folder above it, is a file), or None."""
    for where in (out, *out.parents):
        if where.exists():
            return None if where.is_dir() else f"--out {printable(str(out), 80)}: {printable(str(where), 80)} is a " \
                                                 "file, not a folder; give a folder for the results"
    return None


def _print_summary(book: gb.Gradebook, paths: dict[str, Path], plan: GpuPlan, complete: bool, left: int) -> None:
    print(gb.counts_table(book.counts, "simple"))
    if not plan.names:
        print(f"no GPU ({plan.reason}): static checks only; verification and timing need a CUDA GPU")
    if not complete:
        print(f"incomplete: {left} submission(s) not graded yet; run the same command again to finish")
    for kind, path in paths.items():
        print(f"{kind}: {path}")
