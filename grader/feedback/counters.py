"""Hardware counters: the DRAM and L2 bytes a kernel really moved, measured by Nsight Compute, beside the byte
model (`grade FILE --counters`, `grade batch --counters`, `grade selfcheck --counters`).

The course page: "That is an assumption about the cache, not an arithmetic fact, and Nsight Compute counters
are what settle it." One profiled launch of each kernel, in a child process run under `ncu` (found on PATH,
under CUDA_HOME/CUDA_PATH, or in the usual install folders), with caches flushed before each launch
(`--cache-control all`), so every byte the kernel needs comes from DRAM once:

  dram__bytes_read.sum, dram__bytes_write.sum   bytes read from and written to DRAM
  lts__t_bytes.sum                              bytes through the L2 (every request the SMs make of it)

The child (`python -m grader.pipeline.profiled FILE --exercise NAME --rows R --cols C`) compiles the submission
(sandboxed, as always), draws the exercise's inputs at the benchmark shape, then launches the submission once and
the 16-byte copy once. The
counters never change a verdict; without `ncu`, or without permission to read the counters, the report says
why in one line (NVIDIA's ERR_NVGPUCTRPERM: profiling needs root or the driver option
NVreg_RestrictProfilingToAdminUsers=0, which /proc/driver/nvidia/params shows as RmProfilingAdminOnly: 0).
CUPTI is not a fallback: cupti-python 13.4 on the H200's 13.0 driver enabled PM sampling but failed to create
a profiler-host configuration (CUPTI_ERROR_INVALID_PARAMETER), and its range profiler has no Python binding.

Since issue 23 the child also launches the exercise's model answer (16-byte accesses) and the page's answer
(4-byte accesses) and the one-float copy (grader.pipeline.profiled), and ncu also reads how the launches access memory
and how much work they do (METRICS; every name checked against ncu 2025.3.1 on the H200, whose raw CSVs are in
tests/data/ncu/):

  l1tex__t_sectors / _requests_pipe_lsu_mem_global_op_ld / _st .sum   32-byte sectors and warp requests of
                                              global loads and stores: a coalesced 4-byte warp access is 4
                                              sectors, a 16-byte one 16, a scattered one 32
  smsp__inst_executed.sum                     warp instructions executed
  sm__issue_active.avg.pct_of_peak_sustained_elapsed   issue slots busy, % of the launch
  sm__inst_executed_pipe_P.avg.pct_of_peak_sustained_active   each pipe P's instructions, % of its peak
  gpu__dram_throughput, lts__throughput, l1tex__throughput (.avg.pct_of_peak_sustained_elapsed)
                                              each memory unit's throughput, % of its peak
  sm__warps_active.avg.pct_of_peak_sustained_active    warps resident per SM, % of what it can hold
  gpu__time_duration.sum                      the launch's time (ncu runs with --clock-control none, so the
                                              card's own clocks: the same times the grading measured)

Findings, against the exercise's byte model (Exercise.floats_per_element: for both exercises 2 floats, 8 bytes per
element, an input read once and out written once; bias_gelu's bias and rope's tables are read from cache), in the
exercise's words (Exercise.counter_texts):
- measured over the model by more than MODEL_SLACK: which side (reads or writes) and the usual causes;
- measured under what a correct kernel must move (what the 16-byte copy moved on each side, less
  UNDER_SLACK): a kernel that skips work, or a measurement that did not see the launch;
- then, where measured, the sectors per request of loads and stores against a coalesced access of the same
  width, the warp instructions per element against the page's answer and the model answer, the issue slots
  and the busiest pipe, the memory units and the resident warps (access_findings). grader.feedback.worth turns them
  into hints with what fixing each is worth.

What the report says, for the student: docs/grading.md ("Counters").
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
from glob import glob
from pathlib import Path

from grader.core import exercise as course
from grader.core.exercise import Exercise
from grader.core.model import ReportModel
from grader.core.procs import kill_group

BYTE_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum")
"""DRAM bytes read and written, L2 bytes: what `grade selfcheck --counters` reads of every reference kernel."""
ACCESS_METRICS = ("gpu__time_duration.sum",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
PIPES = {"alu": "ALU", "fma": "FMA", "fp64": "FP64", "xu": "XU", "lsu": "LSU", "adu": "ADU"}
"""The pipes read (ncu's names and how the report names them): integer and logic (ALU), float multiply-add (FMA),
double (FP64), special functions and conversions (XU: MUFU, I2F, F2I), loads and stores (LSU), address
divergence and branches (ADU)."""
MEMORY_UNITS = {"DRAM": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                "L2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
                "L1": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"}
WORK_METRICS = ("smsp__inst_executed.sum", "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
                *(f"sm__inst_executed_pipe_{p}.avg.pct_of_peak_sustained_active" for p in PIPES),
                *MEMORY_UNITS.values(), "sm__warps_active.avg.pct_of_peak_sustained_active")
METRICS = BYTE_METRICS + ACCESS_METRICS + WORK_METRICS
"""What a submission's profile reads (module docstring)."""
MODEL_SLACK = 0.05
"""Measured bytes per element may pass the model by this share before it is a finding (DRAM refresh, ECC and
the bias row's one read add well under 1% at the benchmark shape)."""
UNDER_SLACK = 0.05
"""A kernel that reads or writes less than (1 - UNDER_SLACK) x what the copy moved on that side (at most 4
bytes per element) cannot be correct."""
TIMEOUT_S = 120.0
"""Longest the profiled child may run (start-up, compile, one profiled launch of each kernel)."""
VERSION_TIMEOUT_S = 30.0
"""Longest `ncu --version` may take."""
MAX_LOG_BYTES = 16 * 2**20
"""A larger ncu report is not read (two launches' raw page is about 20 KB; the self-check's about 0.5 MB)."""
SOURCE_TIMEOUT_S = 90.0
"""Longest the source-level pass may profile (grader.feedback.source_counters: one launch, patched, replayed); its two
reads of the report file get VERSION_TIMEOUT_S each."""
LIMIT_S = TIMEOUT_S + VERSION_TIMEOUT_S + SOURCE_TIMEOUT_S + 2 * VERSION_TIMEOUT_S + 30.0
"""What one grading's counters may take in all (the raw pass and, for scattered-looking accesses, the source-level
pass): a batch gives its counters stage this long."""
SEARCH = ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
          "/usr/local/NVIDIA-Nsight-Compute*/ncu")
"""Where `ncu` is looked for after PATH, CUDA_HOME and CUDA_PATH."""

SECTOR_BYTES = 32
"""Bytes of one sector: the L1's and L2's unit of transfer."""


_UNITS = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12, "kibyte": 2**10, "mibyte": 2**20,
          "gibyte": 2**30, "ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
          "second": 1e9, "s": 1e9}
"""Unit multiples to base units (bytes, nanoseconds); other units (%, sector, inst) are kept as they are."""


class CountersUnavailable(Exception):
    """The counters cannot be read here; `str(err)` is the one-line reason (no ncu, no permission, ...)."""


class KernelCounters(ReportModel):
    """What one profiled launch moved and did: `label` (the version), the kernel's name as ncu gives it, elements
    of its output, DRAM bytes read and written, L2 bytes; then (None or empty where ncu gave no value) its time
    in ns, the 32-byte sectors and warp requests of its global loads and stores, the warp instructions it
    executed, its issue slots busy (% of the launch), each of PIPES' instructions (% of that pipe's peak),
    each MEMORY_UNITS' throughput (% of its peak) and the warps resident per SM (% of the most it holds)."""

    label: str
    kernel: str
    elements: int
    dram_read: float | None = None
    dram_write: float | None = None
    l2_bytes: float | None = None
    duration_ns: float | None = None
    ld_sectors: float | None = None
    ld_requests: float | None = None
    st_sectors: float | None = None
    st_requests: float | None = None
    instructions: float | None = None
    issue_pct: float | None = None
    pipes: dict[str, float] = {}
    memory: dict[str, float] = {}
    warps_pct: float | None = None

    def per_elem(self, value: float | None) -> float | None:
        """`value` (bytes, sectors, instructions) per element of the output."""
        return None if value is None or not self.elements else value / self.elements

    @property
    def dram_per_elem(self) -> float | None:
        """DRAM bytes read plus written per element."""
        if self.dram_read is None or self.dram_write is None:
            return None
        return self.per_elem(self.dram_read + self.dram_write)

    def sectors_per_request(self, side: str) -> float | None:
        """Sectors each warp request of global loads (`side` "ld") or stores ("st") touched, on average."""
        sectors, requests = (self.ld_sectors, self.ld_requests) if side == "ld" else (self.st_sectors, self.st_requests)
        return None if sectors is None or not requests else sectors / requests

    @property
    def bytes_per_thread_access(self) -> float | None:
        """Bytes each thread stores per store instruction, from elements per store request (every element is
        stored once, 4 bytes, by one lane of a 32-thread warp request): 4 for float, 16 for float4."""
        if not self.st_requests or not self.elements:
            return None
        return course.BYTES_PER_FLOAT * self.elements / self.st_requests / 32

    @property
    def instructions_per_elem(self) -> float | None:
        """Warp instructions executed per element of the output."""
        return self.per_elem(self.instructions)

    @property
    def busiest_pipe(self) -> tuple[str, float] | None:
        """(report name, % of its peak) of the pipe that ran closest to its peak; None when none was read."""
        if not self.pipes:
            return None
        name = max(self.pipes, key=lambda p: self.pipes[p])
        return PIPES.get(name, name), self.pipes[name]

    @property
    def busiest_memory(self) -> tuple[str, float] | None:
        """(unit, % of its peak) of the memory unit that ran closest to its peak; None when none was read."""
        if not self.memory:
            return None
        name = max(self.memory, key=lambda u: self.memory[u])
        return name, self.memory[name]


class InstructionCounters(ReportModel):
    """One global memory instruction of the submission's launch as Nsight Compute's source page counted it
    (grader.feedback.source_counters): its offset in the kernel, its SASS, the student's `line` and the `buffer` it
    reads or writes (from the machine code, grader.feedback.sass_access), what it does (`op`: ld, st, atom, red)
    and bytes per thread (`nbytes`); the warp-level executions, and the L2 sectors its addresses touched, would
    touch if perfectly coalesced (`ideal`) and touched beyond that (`excessive`); None where ncu gave no value."""

    offset: int
    sass: str = ""
    line: int | None = None
    buffer: str | None = None
    op: str = ""
    nbytes: int | None = None
    executed: float | None = None
    sectors: float | None = None
    ideal: float | None = None
    excessive: float | None = None

    def per_request(self, value: float | None) -> float | None:
        """`value` (sectors) per warp-level execution."""
        return None if value is None or not self.executed else value / self.executed


class Counters(ReportModel):
    """The counters of a grading: the tool, each profiled launch, the model's bytes per element, findings,
    `unavailable` (the reason) when nothing could be measured, `why` they were measured when nobody asked
    (counters_wanted), and, where the source-level pass ran, each global memory instruction of the submission
    (`instructions`, or `instructions_unavailable`: why not); `seconds`: what measuring them took."""

    tool: str = ""
    kernels: list[KernelCounters] = []
    model_bytes_per_elem: float = course.COPY_FLOATS_PER_ELEMENT * course.BYTES_PER_FLOAT
    findings: list[str] = []
    unavailable: str = ""
    why: str = ""
    instructions: list[InstructionCounters] = []
    instructions_unavailable: str = ""
    seconds: float | None = None
    """Wall time the counters took (the profiled child under ncu, and the source-level pass where it ran), s."""
    division_threads: float | None = None
    """Thread-level executions of the submission's integer divisions by a run-time value in the profiled launch
    (grader.feedback.source_counters.division_threads; None: the source-level pass did not run)."""

    def get(self, label: str) -> KernelCounters | None:
        """The launch labelled `label` (the kernel's name, COPY_VEC4, COPY_SCALAR; MODEL or PAGE_ANSWER: the
        reference of that role, whatever width its label gives), or None."""
        if label in LAUNCH_ORDER:
            return next((k for k in self.kernels if role_of(k.label) == label), None)
        return next((k for k in self.kernels if k.label == label), None)

    @property
    def yours(self) -> KernelCounters | None:
        """The submission's launch: the one not labelled as a reference or a copy (its label is the kernel's
        name), or None."""
        return next((k for k in self.kernels if role_of(k.label) not in SAID), None)


def find_ncu() -> str | None:
    """The path of Nsight Compute's `ncu`: PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin, then SEARCH; None if absent."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if root and os.access(os.path.join(root, "bin", "ncu"), os.X_OK):
            return os.path.join(root, "bin", "ncu")
    for pattern in SEARCH:
        for path in sorted(glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def run_ncu(child: list[str], kernels: str | None = None, timeout_s: float = TIMEOUT_S,
            ncu: str | None = None, on_start=None,
            metrics: tuple[str, ...] = BYTE_METRICS, keep_log: Path | None = None) -> tuple[str, list[dict[str, str]]]:
    """Run `child` (an argv) under ncu, each kernel launch whose name matches the regular expression `kernels`
    (every launch when None) profiled once with caches flushed and the card's clocks left alone
    (`--clock-control none`), reading `metrics`; returns ncu's version line and one dict per profiled launch,
    in launch order (keys: "Kernel Name", "Grid Size", ..., each metric as "name" -> its value in base units,
    bytes and nanoseconds, as text).

    ncu and the child run in a session of their own (POSIX), with stdout discarded (the profiled kernel's
    printf lands there, so nothing it prints is read: not as CSV, not as a reason); ncu's report comes from
    its --log-file, at most MAX_LOG_BYTES of it, and stderr's last line from at most its last 4 KiB. On a
    timeout, an error or an interrupt the whole session is killed. on_start(pgid), when given, is called with
    the session's process group as soon as it runs (a batch worker tells its parent, which kills that group
    too if it has to stop the worker). `keep_log`: a file that gets ncu's CSV log verbatim (the recordings of
    tests/data/ncu). Raises CountersUnavailable with the reason, and nothing else (a KeyboardInterrupt passes
    through)."""
    ncu = ncu or find_ncu()
    if ncu is None:
        raise CountersUnavailable("no Nsight Compute here (`ncu` not on PATH, CUDA_HOME or the usual folders); "
                                  "install the CUDA toolkit's Nsight Compute to measure bytes")
    with tempfile.TemporaryDirectory(prefix="grade-ncu-") as tmp:
        version, _ = _run([ncu, "--version"], tmp, VERSION_TIMEOUT_S, "ncu --version", on_start, keep_stdout=True)
        log, err_path = Path(tmp) / "ncu.csv", Path(tmp) / "stderr.txt"
        cmd = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--cache-control", "all",
               "--clock-control", "none", "--metrics", ",".join(metrics), "--log-file", str(log),
               *(["--kernel-name", f"regex:{kernels}"] if kernels else []), *child]
        _, returncode = _run(cmd, tmp, timeout_s, "ncu", on_start, stderr=err_path)
        if log.exists() and log.stat().st_size > MAX_LOG_BYTES:
            raise CountersUnavailable(f"ncu's report is over {MAX_LOG_BYTES // 2**20} MiB; not read")
        text = log.read_text(errors="replace") if log.exists() else ""
        if keep_log is not None:
            keep_log.write_text(text)
        stderr = _tail(err_path, 4096)
        problem = _ncu_problem(text + "\n" + stderr)
        if problem:
            raise CountersUnavailable(problem)
        if returncode != 0:
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            raise CountersUnavailable(f"the profiled run failed (exit {returncode}: {last[:200]})")
        return _version(version), parse_csv(text)


def _run(cmd: list[str], cwd: str, timeout_s: float, what: str, on_start, *, keep_stdout: bool = False,
         stderr: Path | None = None) -> tuple[str, int]:
    """Run `cmd` in a session of its own; returns (the first 4 KiB of its stdout with `keep_stdout`, else "";
    its exit status). stdout is otherwise discarded, and stderr goes to the file `stderr` (or is discarded).
    Kills the session on a timeout, an error or an interrupt; raises CountersUnavailable for a timeout or a
    failed start."""
    out_path = Path(cwd) / "stdout.txt"
    try:
        with open(out_path if keep_stdout else os.devnull, "wb") as out, \
                open(stderr if stderr else os.devnull, "wb") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd,
                                    start_new_session=os.name != "nt")
    except OSError as err:
        raise CountersUnavailable(f"{what} could not be started ({err.strerror or err})") from None
    try:
        if on_start is not None and os.name != "nt":
            on_start(proc.pid)
        returncode = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise CountersUnavailable(f"{what} did not finish within {timeout_s:g} s") from None
    finally:
        _kill_session(proc)
    return (_tail(out_path, 4096, head=True) if keep_stdout else ""), returncode


def _kill_session(proc: subprocess.Popen) -> None:
    """Kill `proc`'s session: what it left running (the profiled child) too. The group id cannot name another
    process while any process of the group lives, and killing an empty group fails harmlessly."""
    if os.name == "nt":
        try:
            proc.kill()
        except OSError:  # it ended meanwhile
            pass
    kill_group(proc.pid)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot end
        pass


def _tail(path: Path, size: int, head: bool = False) -> str:
    """At most `size` bytes of the file at `path` (its end, or with `head` its start), decoded leniently;
    "" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            if not head:
                f.seek(max(0, f.seek(0, os.SEEK_END) - size))
            return f.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def _ncu_problem(text: str) -> str:
    """The reason in ncu's log or stderr that counters cannot be read, or ""."""
    if "ERR_NVGPUCTRPERM" in text:
        return ("no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): profiling needs root "
                "or the driver option NVreg_RestrictProfilingToAdminUsers=0")
    for line in text.splitlines():
        if line.startswith("==ERROR=="):
            return f"ncu: {line.removeprefix('==ERROR==').strip()[:200]}"
    return ""


def _version(text: str) -> str:
    """"ncu VERSION" from `ncu --version`'s output (its last line, "Version 2025.3.1.0")."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "ncu " + (lines[-1].removeprefix("Version ") if lines else "?")


def parse_csv(text: str) -> list[dict[str, str]]:
    """The rows of ncu's `--csv --page raw` output (one per profiled launch, after the header and the units
    row), values scaled to base units (bytes, nanoseconds) where the units row names a multiple (_UNITS).
    Lines ncu writes that are not CSV (`==PROF==`, the program's own output) are skipped."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    header = reader[0]
    units = reader[1] if len(reader) > 1 and not reader[1][0].strip().isdigit() else None
    rows = []
    for raw in reader[2 if units else 1:]:
        row = dict(zip(header, raw, strict=False))
        if units:
            for name, unit in zip(header, units, strict=False):
                scale = _UNITS.get(unit.strip().lower())
                if scale and scale != 1 and _number(row.get(name)) is not None:
                    row[name] = repr(_number(row[name]) * scale)
        rows.append(row)
    return rows


def _number(text: str | None) -> float | None:
    try:
        return float(str(text).replace(",", ""))
    except (TypeError, ValueError):
        return None


def kernel_counters(label: str, row: dict[str, str], elements: int) -> KernelCounters:
    """KernelCounters of one parsed ncu row (parse_csv: values in bytes and ns) for a launch over `elements`
    output elements; a metric missing from the row, or not a number, is None (left out of pipes and memory)."""
    def get(name: str) -> float | None:
        return _number(row.get(name))

    pipes = {p: v for p in PIPES if (v := get(f"sm__inst_executed_pipe_{p}.avg.pct_of_peak_sustained_active"))
             is not None}
    memory = {u: v for u, name in MEMORY_UNITS.items() if (v := get(name)) is not None}
    return KernelCounters(label=label, kernel=row.get("Kernel Name", "?"), elements=elements,
                          dram_read=get(BYTE_METRICS[0]), dram_write=get(BYTE_METRICS[1]),
                          l2_bytes=get(BYTE_METRICS[2]),
                          duration_ns=get("gpu__time_duration.sum"),
                          ld_sectors=get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                          ld_requests=get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
                          st_sectors=get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                          st_requests=get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
                          instructions=get("smsp__inst_executed.sum"),
                          issue_pct=get("sm__issue_active.avg.pct_of_peak_sustained_elapsed"), pipes=pipes,
                          memory=memory, warps_pct=get("sm__warps_active.avg.pct_of_peak_sustained_active"))


# --- the submission ----------------------------------------------------------------------------------------
MODEL = "model answer, 16 B/thread"
PAGE_ANSWER = "page's answer, 4 B/thread"
"""The references' roles, and their labels where their stores are that wide (bias_gelu's); a reference's label gives
its measured width (reference_label: rope's model answer is "model answer, 8 B/thread")."""
COPY_VEC4 = "copy, 16 B/thread"
COPY_SCALAR = "copy, 1 float/thread"
LAUNCH_ORDER = (MODEL, PAGE_ANSWER)
"""The labels of the child's launches of the references, in the order it makes them after the submission's
(grader.pipeline.profiled): ncu names a reference as its function, which may be the student kernel's name, so the
order of the launches named as the exercise's kernels (profiled_names) tells them apart: the submission's first,
labelled with the kernel's name, then these. The copies come after them (copyVec4, then copyScalar)."""
_COPIES = {"copyVec4": COPY_VEC4, "copyScalar": COPY_SCALAR}
SAID = {MODEL: "the model answer", PAGE_ANSWER: "the page's answer", COPY_VEC4: "the 16-byte copy",
        COPY_SCALAR: "the one-float copy"}
"""How the findings name each launch but the submission's ("yours")."""


def said(label: str) -> str:
    """How the findings name the launch labelled `label` (SAID; the submission's is "yours")."""
    return SAID.get(role_of(label), "yours")


def role_of(label: str) -> str:
    """MODEL or PAGE_ANSWER for a reference's label (reference_label), else the label itself."""
    return next((role for role in LAUNCH_ORDER if label.split(",")[0] == role.split(",")[0]), label)


def reference_label(role: str, k: KernelCounters) -> str:
    """The label of the reference launch `k` of `role` (MODEL, PAGE_ANSWER): its role with the bytes its stores
    move per thread as measured ("model answer, 8 B/thread"); the role's name alone where ncu gave no store
    requests."""
    width = k.bytes_per_thread_access
    head = role.split(",")[0]
    return f"{head}, {round(width)} B/thread" if width else head


def profiled_names(ex: Exercise) -> tuple[str, ...]:
    """The functions' names of the child's launches of the submission and the references (Exercise.references),
    each once."""
    return tuple(dict.fromkeys((ex.kernel_name, *ex.reference_names)))


def profiled_kernels(ex: Exercise) -> str:
    """ncu's --kernel-name regex for the profiled child's launches (it matches the function's own name)."""
    return "|".join((*profiled_names(ex), *_COPIES))


def profiled_child(path: str, ex: Exercise, rows: int | None = None, cols: int | None = None,
                   device: int = 0) -> list[str]:
    """The command line of the child ncu profiles (grader.pipeline.profiled) for the submission at `path` to
    exercise `ex` at rows x cols (None: the card's benchmark shape) on CUDA device `device`."""
    child = [sys.executable, "-m", "grader.pipeline.profiled", str(Path(path).resolve()), "--exercise", ex.name,
             "--device", str(device)]
    return child + (["--rows", str(rows), "--cols", str(cols)] if rows and cols else [])


def submission_counters(path: str, ex: Exercise, rows: int | None = None, cols: int | None = None, device: int = 0,
                        on_start=None) -> Counters:
    """Profile one launch each of the submission at `path` (to exercise `ex`), the model answer, the page's answer
    and the two copies at rows x cols (the graded benchmark shape; None: the card's benchmark shape, for a kernel
    that was not timed) in a child process under ncu (grader.pipeline.profiled); return the counters and findings.
    on_start: as for run_ncu. Never raises (but a KeyboardInterrupt passes through): when the counters cannot be
    read, `unavailable` says why."""
    try:
        tool, rows_ = run_ncu(profiled_child(path, ex, rows, cols, device), kernels=profiled_kernels(ex),
                              on_start=on_start, metrics=METRICS)
    except CountersUnavailable as err:
        return Counters(unavailable=str(err))
    return counters_of(tool, rows_, ex, (rows or 0) * (cols or 0))


def counters_of(tool: str, rows: list[dict[str, str]], ex: Exercise, elements: int = 0) -> Counters:
    """The Counters of the child's profiled launches of exercise `ex` (`rows`, parse_csv's, in launch order): the
    launches named as the exercise's kernels (profiled_names) labelled in order by the kernel's name and
    LAUNCH_ORDER, the copies by their kernel's name, each once; `elements` per launch is worked out from the
    16-byte copy's grid, else taken as given."""
    n = _launched(rows) or elements
    picked: dict[str, KernelCounters] = {}
    labels = (ex.kernel_name, *LAUNCH_ORDER)
    order, names = iter(labels), profiled_names(ex)
    for row in rows:
        name = kernel_base(row.get("Kernel Name", ""))
        label = next(order, None) if name in names else _COPIES.get(name)
        if label is not None and label not in picked:
            picked[label] = kernel_counters(label, row, n)
    for role in LAUNCH_ORDER:
        if role in picked:
            picked[role] = picked[role].model_copy(update={"label": reference_label(role, picked[role])})
    kernels = [picked[k] for k in (*labels, COPY_VEC4, COPY_SCALAR) if k in picked]
    model = ex.floats_per_element * course.BYTES_PER_FLOAT
    if ex.kernel_name not in picked:
        return Counters(tool=tool, kernels=kernels, model_bytes_per_elem=model,
                        unavailable="ncu profiled no launch of the submission's kernel")
    c = Counters(tool=tool, kernels=kernels, model_bytes_per_elem=model)
    c.findings = findings(picked[ex.kernel_name], picked.get(COPY_VEC4), ex) + access_findings(c, ex)
    return c


def kernel_base(name: str) -> str:
    """The function's own name in ncu's demangled "Kernel Name": "kernel" of
    "kernel(const float *, ...)" and of a template's "void kernel<4>(const float *, ...)" (how ncu
    names the model answer and the page's answer, templates such as grader/exercises/bias_gelu/chain.cu's; on the
    H200 a startswith test missed both, so no hint had a reference to be measured against)."""
    head = name.split("(", 1)[0].split("<", 1)[0].strip()
    return head.rsplit(" ", 1)[-1].rsplit("::", 1)[-1]


def _launched(rows: list[dict[str, str]]) -> int:
    """Elements of the profiled launches: the "n" of the child's JSON line, which ncu's log does not hold, so
    it is worked out from the copy's grid instead (copyVec4: one float4 per thread, 256 threads per block)."""
    for row in rows:
        if _COPIES.get(kernel_base(row.get("Kernel Name", ""))) == COPY_VEC4:
            grid = [int(v) for v in row.get("Grid Size", "").strip("()").split(",") if v.strip().isdigit()]
            if grid:
                return grid[0] * course.BLOCK * 4
    return 0


def verdict_allows(report) -> str:
    """"" when `report`'s kernel can be profiled (it compiled, matched the launch and ran), else the reason
    (a GradeReport; no GPU, a compile error, a refused or faulting kernel)."""
    if report.verdict == "no-gpu":
        return "no GPU here"
    if report.compile is None or report.verdict == "error":
        return f"the kernel did not run ({report.stage}: not profiled)"
    return ""


def findings(yours: KernelCounters, copy: KernelCounters | None, ex: Exercise) -> list[str]:
    """What the counters say of exercise `ex`'s byte model (module docstring), as sentences for the report.

    yours, copy: the submission's launch and the 16-byte copy's, in bytes (per element: KernelCounters).
    Over the model: a side (reads or writes) above half the model (4 bytes) x (1 + MODEL_SLACK) per element.
    Under it: a side below (1 - UNDER_SLACK) x what the copy moved on that side in the same process (4 bytes per
    element where the copy was not measured). The copy is the yardstick because a correct kernel moves what it
    moves, and its measured writes sit under 4 (the L2 still holds dirty lines when a launch ends: up to the L2's size,
    1/16 of a buffer at the benchmark shape)."""
    model = ex.floats_per_element * course.BYTES_PER_FLOAT
    side = model / 2
    read, write = yours.per_elem(yours.dram_read), yours.per_elem(yours.dram_write)
    if read is None or write is None:
        if not yours.elements:
            return ["ncu gave no launch of the 16-byte copy, so the elements per launch are not known"]
        return ["ncu gave no DRAM byte counts for the kernel"]
    out = []
    total = read + write
    copy_text = ""
    copy_read = copy_write = side
    if copy is not None and copy.dram_per_elem is not None:
        copy_text = f"; the 16-byte copy moved {copy.dram_per_elem:.2f}"
        copy_read = min(side, copy.per_elem(copy.dram_read))
        copy_write = min(side, copy.per_elem(copy.dram_write))
    out.append(f"DRAM: {read:.2f} bytes read and {write:.2f} written per element, {total:.2f} in all, against the "
               f"model's {model:g} ({total / model:.3f} of it){copy_text}")
    if read > side * (1 + MODEL_SLACK):
        out.append(f"reads exceed the model ({read:.2f} > {side:g} bytes per element): {ex.counter_texts.reread}")
    if write > side * (1 + MODEL_SLACK):
        out.append(f"writes exceed the model ({write:.2f} > {side:g} bytes per element): out is written more than "
                   "once, or stores fill only part of each 32-byte sector (partial writes DRAM must merge)")
    need_read, need_write = copy_read * (1 - UNDER_SLACK), copy_write * (1 - UNDER_SLACK)
    if read < need_read or write < need_write:
        out.append(f"fewer bytes than a correct kernel must move ({read:.2f} read, {write:.2f} written per element, "
                   f"at least {need_read:.2f} and {need_write:.2f}): a kernel that skips work, or a measurement "
                   "that missed it; the verdict rests on the checked outputs, not on this")
    l2 = yours.per_elem(yours.l2_bytes)
    if l2 is not None:
        ratio = f" ({l2 / total:.2f} x the DRAM bytes)" if total > 0 else ""
        out.append(f"L2: {l2:.2f} bytes per element through the L2{ratio}")
    return out


def ideal_sectors(k: KernelCounters, side: str) -> float | None:
    """Sectors per warp request of a coalesced access as wide as `k`'s (side "ld" or "st"): a warp's request
    covers 32 threads x the bytes each thread moves; those bytes are what the kernel must move per element
    (loads: 8 bytes, bias_gelu's x and a bias entry, rope's in and half its pair's cos and sin; stores: out, 4)
    times elements per request, over 32 bytes a sector. 4 for one float per thread, 16 for a float4."""
    requests = k.ld_requests if side == "ld" else k.st_requests
    need = 2 * course.BYTES_PER_FLOAT if side == "ld" else course.BYTES_PER_FLOAT
    if not requests or not k.elements:
        return None
    return need * k.elements / requests / SECTOR_BYTES


def access_findings(c: Counters, ex: Exercise) -> list[str]:
    """One sentence each, from what ncu read beyond bytes (module docstring): sectors per request against a
    coalesced access of the same width, warp instructions per element against the page's answer and the model
    answer, issue slots and the busiest pipe, the memory units and resident warps, and the launches' times.
    Sentences whose counters ncu did not give are left out."""
    k, model, page = c.yours, c.get(MODEL), c.get(PAGE_ANSWER)
    out = []
    ld, st = k.sectors_per_request("ld"), k.sectors_per_request("st")
    ideal_ld, ideal_st = ideal_sectors(k, "ld"), ideal_sectors(k, "st")
    if ld is not None and st is not None and ideal_ld and ideal_st:
        out.append(f"accesses: each warp's loads touched {ld:.1f} sectors per request and its stores {st:.1f}, where "
                   f"coalesced accesses as wide as yours touch {ideal_ld:.0f} and {ideal_st:.0f} "
                   f"({k.per_elem(k.ld_sectors):.3f} and {k.per_elem(k.st_sectors):.3f} sectors per element; "
                   f"{ex.counter_texts.loads}, out 0.125)")
    ipe = k.instructions_per_elem
    if ipe is not None:
        refs = [f"{said(r.label)} {r.instructions_per_elem:.2f}" for r in (page, model)
                if r is not None and r.instructions_per_elem is not None]
        text = f"work: {ipe:.2f} warp instructions per element" + (f" ({', '.join(refs)})" if refs else "")
        if k.issue_pct is not None:
            text += f"; issue slots busy {k.issue_pct:.0f}% of the launch"
        if k.busiest_pipe:
            text += f"; the busiest pipe {k.busiest_pipe[0]} at {k.busiest_pipe[1]:.0f}% of its peak"
        out.append(text)
    if k.memory:
        units = ", ".join(f"{u} {v:.0f}%" for u, v in sorted(k.memory.items(), key=lambda kv: -kv[1]))
        warps = f"; warps resident {k.warps_pct:.0f}% of what the SMs hold" if k.warps_pct is not None else ""
        out.append(f"memory units, % of peak throughput: {units}{warps}")
    times = [f"{said(x.label)} {x.duration_ns / 1e6:.3f}" for x in c.kernels if x.duration_ns]
    if times:
        out.append("times under ncu, ms: " + ", ".join(times))
    return out


AUTO_BELOW = 0.5
"""`grade FILE` (and `grade batch --counters-when-slow`) measure the counters unasked for a correct kernel below
this fraction of the one-float-per-thread copy, whether or not ncu is here (without it the report says why there
are none): far below even a scalar kernel's ceiling, where the copies and the machine code cannot say why (issue 23)."""


def counters_wanted(report, asked: bool, when_slow: bool, ncu_found: bool | None = None) -> str:
    """Why counters should be measured for `report` (a GradeReport): "asked" (asked is true), or the reason a
    slow correct kernel gets them unasked (when_slow): below gold (grader.core.exercise.GOLD) where Nsight Compute
    is found here (`ncu_found`; None: find_ncu() decides), so that a student's first read names the measured
    cause (issue 39), or under AUTO_BELOW of the one-float copy in any case; "" when they should not be. Whether
    the kernel can be profiled at all is verdict_allows' question."""
    if asked:
        return "asked"
    x, f = report.fraction_of_scalar_copy, report.fraction
    if not when_slow or report.verdict not in ("gold", "silver", "fail"):
        return ""
    if x is not None and x < AUTO_BELOW:
        return (f"wanted because the kernel is correct but runs at {x:.3f} of the one-float-per-thread copy "
                f"(under {AUTO_BELOW:g})")
    if f is not None and f < course.GOLD and (find_ncu() is not None if ncu_found is None else ncu_found):
        return (f"measured because the kernel is correct but below gold ({f:.3f} of the copy floor) and Nsight "
                "Compute is here; --no-counters skips them")
    return ""
