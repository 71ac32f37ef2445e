"""Counters per instruction, mapped to the student's line (issue 29): Nsight Compute's source-level counters of the
submission's launch, one row per SASS instruction, joined with the machine code's lines and buffers
(grader.feedback.sass_access), so an access hint can say "line 14, the store to out: each warp's stores touch 32
sectors where 4 would do" and judge each instruction against its own width (a cached scalar bias load, 16 bytes
apart across a warp, is 4 times its ideal sectors but no DRAM traffic: not "scattered").

One more profiled run of the child grader.pipeline.profiled (the same compile, with line information), its first
launch of the exercise's kernel only (the submission's), with the SourceCounters section (per-instruction counters, by
patching the code: ncu replays the launch), and LaunchStats and Occupancy (whose guided-analysis rules the tests
compare with the grader's hints), exported to a report file, then printed twice from it:

  ncu --section SourceCounters --section LaunchStats --section Occupancy --cache-control all --clock-control none
      --kernel-name KERNEL --launch-count 1 --export R CHILD...
  ncu --import R.ncu-rep --csv --page source --print-source sass      (SOURCE_COLUMNS, one row per instruction)
  ncu --import R.ncu-rep --csv --page details                         (RULE_COLUMNS, the rules' results)

The column names are those of Nsight Compute's source view as the NVIDIA documentation ("Source Counters",
"Source View" of the Profiling Guide) and published parsers of `--page source --csv` name them: "Address",
"Source", "Instructions Executed", "L2 Theoretical Sectors Global", "L2 Theoretical Sectors Global Ideal",
"L2 Theoretical Sectors Global Excessive". NOT CONFIRMED on this project's ncu 2025.3.1 (no GPU where this was
written): that "Address" is the instruction's absolute address (its offset is read relative to the first row's),
that a kernel's rows follow a header row starting "Address","Source" (and, with several kernels, a "Kernel Name"
row), and the details page's rule columns. benchmarks/ncu_record.py records both CSVs on the H200
(tests/data/ncu/h200_source_*.csv, h200_details_*.csv); tests/test_source_counters.py checks these readers on
them and skips, naming that script, until they exist.
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path

from grader.feedback import counters as ncu
from grader.feedback.code_paths import buffer, pointer_roles
from grader.feedback.counters import CountersUnavailable, InstructionCounters
from grader.feedback.sass import Instruction, division_start_indices, find_disassembler, sass_facts
from grader.feedback.sass_access import PARAM_BASE, accesses

SOURCE_COLUMNS = {"address": "Address", "source": "Source", "executed": "Instructions Executed",
                  "threads": "Thread Instructions Executed",
                  "sectors": "L2 Theoretical Sectors Global", "ideal": "L2 Theoretical Sectors Global Ideal",
                  "excessive": "L2 Theoretical Sectors Global Excessive"}
"""The source page's columns read (module docstring: not confirmed on ncu 2025.3.1)."""
RULE_COLUMNS = ("Rule Name", "Rule Type", "Rule Description")
"""The details page's columns of a guided-analysis rule's result (not confirmed on ncu 2025.3.1)."""
SECTIONS = ("SourceCounters", "LaunchStats", "Occupancy")

_SASS = re.compile(r"^\s*(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\s*(.*?)\s*;?\s*$")


def _csv_rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_source(text: str) -> list[list[dict[str, str]]]:
    """The instruction rows of `--page source --csv` output, one list per kernel (a header row starting
    "Address" begins one), each row a dict by column name. Lines that are not CSV are skipped."""
    blocks: list[list[dict[str, str]]] = []
    header: list[str] | None = None
    for row in _csv_rows(text):
        if not row:
            continue
        if row[0] == SOURCE_COLUMNS["address"]:
            header = row
            blocks.append([])
        elif header is not None and _address(row[0]) is not None:
            blocks[-1].append(dict(zip(header, row, strict=False)))
    return blocks


def parse_rules(text: str) -> list[tuple[str, str, str]]:
    """(rule name, type, description) of each guided-analysis result in `--page details --csv` output, each once."""
    rows = _csv_rows(text)
    if not rows or not all(c in rows[0] for c in RULE_COLUMNS):
        return []
    idx = [rows[0].index(c) for c in RULE_COLUMNS]
    found = []
    for row in rows[1:]:
        got = tuple(row[i] if i < len(row) else "" for i in idx)
        if got[0] and got not in found:
            found.append(got)
    return found


def _address(text: str) -> int | None:
    t = text.strip()
    try:
        return int(t, 16) if t.lower().startswith("0x") else int(t) if t.isdigit() else None
    except ValueError:
        return None


def _number(text: str | None) -> float | None:
    try:
        return float(str(text).replace(",", ""))
    except (TypeError, ValueError):
        return None


def join(rows: list[dict[str, str]], lines: dict[int, int | None], roles: dict[int, str], arch: str
         ) -> list[InstructionCounters]:
    """The global memory instructions of one kernel's source rows (parse_source), each with its counters, the
    student's line (`lines`: offset -> line, from our own disassembly of the same compile; empty: none) and its
    buffer (the parameter its address comes from: `roles`, offset in the parameter buffer -> name,
    grader.feedback.code_paths.pointer_roles), its address read from ncu's own SASS text."""
    if not rows:
        return []
    first = _address(rows[0][SOURCE_COLUMNS["address"]]) or 0
    body, by_offset = [], {}
    for row in rows:
        m = _SASS.match(row.get(SOURCE_COLUMNS["source"], ""))
        off = (_address(row[SOURCE_COLUMNS["address"]]) or 0) - first
        if m:
            body.append(Instruction(m.group(2), m.group(3), (m.group(1) or "").strip(), lines.get(off), off))
            by_offset[off] = row
    out = []
    for a in accesses(body, PARAM_BASE.get(arch, PARAM_BASE["sm_90"])):
        if a.op == "fence":
            continue
        row = by_offset.get(a.offset, {})
        out.append(InstructionCounters(
            offset=a.offset or 0, sass=row.get(SOURCE_COLUMNS["source"], "").strip(), line=a.line,
            buffer=buffer(a, roles),
            op=a.op, nbytes=a.nbytes, executed=_number(row.get(SOURCE_COLUMNS["executed"])),
            sectors=_number(row.get(SOURCE_COLUMNS["sectors"])), ideal=_number(row.get(SOURCE_COLUMNS["ideal"])),
            excessive=_number(row.get(SOURCE_COLUMNS["excessive"]))))
    return out


def division_threads(rows: list[dict[str, str]]) -> float | None:
    """Thread-level executions of the integer divisions by a run-time value in one kernel's source rows
    (parse_source): each division starts with an I2F...RP (the divisor as a float, rounded up) whose result a later
    MUFU.RCP takes (grader.feedback.sass.division_starts' rule: a 64-bit routine's starts with I2F.U64.RP, an
    inline 32-bit one with I2F.U32.RP or I2F.RP); None where the page has no thread counts (tests/data/ncu's
    h200_source_transposed.csv: 251,658,240 for each of its two 32-bit divisions at 61440 x 4096, one per element,
    and 0 for its 64-bit routine, whose fast path every launch took)."""
    body = []
    for row in rows:
        m = _SASS.match(row.get(SOURCE_COLUMNS["source"], ""))
        if m:
            body.append((Instruction(m.group(2), m.group(3), (m.group(1) or "").strip()), row))
    starts = division_start_indices([ins for ins, _ in body])
    counts = [_number(body[i][1].get(SOURCE_COLUMNS["threads"])) for i in starts]
    if any(c is None for c in counts):
        return None
    return float(sum(counts))


def run_source(child: list[str], kernel: str, timeout_s: float = ncu.SOURCE_TIMEOUT_S, ncu_path: str | None = None,
               on_start=None) -> tuple[str, str]:
    """Profile the first launch of the function `kernel` (the exercise's kernel, the submission's launch) in
    `child` (an argv, grader.feedback.counters.profiled_child) with SECTIONS and return (the source page's CSV, the
    details page's CSV) (module docstring). Raises CountersUnavailable with the reason (no ncu, no permission, a
    failed or timed-out run)."""
    path = ncu_path or ncu.find_ncu()
    if path is None:
        raise CountersUnavailable("no Nsight Compute here (`ncu` not on PATH, CUDA_HOME or the usual folders)")
    with tempfile.TemporaryDirectory(prefix="grade-ncu-src-") as tmp:
        rep, err = Path(tmp) / "source", Path(tmp) / "stderr.txt"
        cmd = [path, *(a for s in SECTIONS for a in ("--section", s)), "--cache-control", "all", "--clock-control",
               "none", "--kernel-name", kernel, "--launch-count", "1", "--export", str(rep),
               "--force-overwrite", *child]
        _, code = ncu._run(cmd, tmp, timeout_s, "ncu (source counters)", on_start, stderr=err)
        problem = ncu._ncu_problem(ncu._tail(err, 4096))
        if problem or code != 0 or not rep.with_suffix(".ncu-rep").exists():
            raise CountersUnavailable(problem or f"the source-level profile failed (exit {code})")
        pages = []
        for page in (["--page", "source", "--print-source", "sass"], ["--page", "details"]):
            log = Path(tmp) / f"page{len(pages)}.csv"
            ncu._run([path, "--import", str(rep.with_suffix(".ncu-rep")), "--csv", *page, "--log-file", str(log)],
                     tmp, ncu.VERSION_TIMEOUT_S, "ncu --import", on_start)
            if log.exists() and log.stat().st_size > ncu.MAX_LOG_BYTES:
                raise CountersUnavailable("ncu's source page is too large; not read")
            pages.append(log.read_text(errors="replace") if log.exists() else "")
        return pages[0], pages[1]


def source_instructions(path: str, rows: int | None, cols: int | None, arch: str, ex, device: int = 0, on_start=None,
                        keep: tuple[Path, Path] | None = None
                        ) -> tuple[list[InstructionCounters], str, float | None]:
    """(the submission's global memory instructions with their counters, "", the thread-level executions of its
    integer divisions: division_threads) for the file at `path` profiled at rows x cols on a card of `arch` (the
    child compiles for it), a submission of exercise `ex` (a grader.core.exercise.Exercise), or ([], the reason,
    None) when they cannot be had.
    Compiles the file here too for `arch` (sandboxed, with line information), for the lines. `keep`: files that
    get the two CSVs verbatim (benchmarks/ncu_record.py). Never raises for the counters' own failures."""
    from grader.compile.nvrtc import compile_kernels
    from grader.source.read import read_submission

    try:
        source, details = run_source(ncu.profiled_child(path, ex, rows, cols, device), ex.kernel_name,
                                     on_start=on_start)
    except CountersUnavailable as err:
        return [], str(err), None
    if keep is not None:
        keep[0].write_text(source)
        keep[1].write_text(details)
    blocks = parse_source(source)
    if not blocks:
        return [], "ncu's source page had no instruction rows", None
    sub = read_submission(path, ex)
    c = compile_kernels(sub.compile_text, sub.name, (ex.kernel_name,), arch, lineinfo=True)
    info = c.kernels[ex.kernel_name]
    facts = sass_facts(c.cubin, info.mangled, find_disassembler())
    lines = {a.offset: a.line for a in facts.accesses} if facts else {}
    roles = pointer_roles(sub.contract.launch_spec(tuple(p.size for p in info.params)))
    return join(blocks[0], lines, roles, c.arch), "", division_threads(blocks[0])

