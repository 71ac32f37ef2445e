"""What the harness needs from an exercise, and the course's constants every exercise shares.

An exercise is one folder under grader/exercises/ (bias_gelu is the course page's exercise and the default;
rope is the page's interleaved RoPE kernel). Its `EXERCISE` is an `Exercise`: the kernel a student writes and its
parameter roles, the default launch, the problem sizes, the inputs and their float64 reference, the tolerance,
the on-GPU inputs and check of the timed launches, the byte model, the known mistakes, and the texts the reports
say. The harness (compile, verify, measure, counters, reports, batch) takes an Exercise and names none; the
pipeline (grader.pipeline.grade) looks it up by name (grader.exercises.get).

Source of the shared constants: the course page "LLM kernels 2: RoPE, GELU and elementwise fusion" (day 96), its
"Exercise" and "Check" sections; facts of the grading machine are the project's notes, docs/h200.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# --- The course's constants: every exercise of the page is graded alike -------------------------------
BLOCK = 256
"""Threads per block: the page's launch, the default of a submission's `// grade: block`, and the block of
every launch of the grader's own kernels and the reference kernels. The only place the number is written."""

BYTES_PER_FLOAT = 4

COPY_FLOATS_PER_ELEMENT = 2
"""A copy reads one float and writes one float per element. The copy floor's GB/s is computed with this
(grader.timing.timer.CopyFloor)."""

MAX_GRID_Y = 65535
"""gridDim.y limit (CUDA Programming Guide, "Compute capabilities" table; a row grid of 131072 rows
fails to launch on the H200 with CUDA_ERROR_INVALID_VALUE, docs/h200.md)."""

BENCH_L2_MULTIPLE = 16
"""Each benchmark buffer is at least this many times the L2 size, so the timed traffic is DRAM traffic
(the H200's L2 is 60 MiB; a 64 MiB buffer is mostly cache, docs/h200.md)."""

BENCH_COL_MULTIPLE = 1024
"""Benchmark cols are a multiple of this (so a multiple of 4: every row is 16-byte aligned)."""

BENCH_FREE_MEMORY_SHARE = 0.6
"""The benchmark's buffers (the inputs, the submission's outputs, the copies' out) take at most this share of
the device's free memory."""

BENCH_BUFFERS = 3
"""Benchmark-sized float32 buffers the grade allocates: the input, the submission's out, the copies' out."""

INT32_LIMIT = 2**31 - 1
"""Every integer the grader passes a kernel (sizes, counts, strides) is at most this: every benchmark buffer holds
at most this many floats (grader.timing.timer.bench_rows_cols, each exercise's bench_problem) and every verification
shape is small. So an `int n` parameter can hold any of them, and a branch of the kernel taken only for a size
of 2^31 or more is on no path the grader's launches take (grader.feedback.ptx_paths).
grader.source.contract.Contract.launch_values refuses to pass a larger one (GraderFault)."""

OUTPUT = "out"
"""The role of the output pointer (Pointer.name) in every exercise of the course: the hints name the buffer a store
writes by it (grader.feedback.code_paths.buffer)."""

POISON_WORD = 0xF149F2CA
"""The output's contents before a checked launch: float32 -1.0e30, a value no exercise's answer takes from its
inputs (GELU's minimum is about -0.17; a rotation keeps |out| <= sqrt 2 x the largest input, 65536), so an element
the kernel never wrote fails whatever its input (a NaN input's answer is NaN, so a NaN poison would pass there)."""

REPEAT_EVERY = 4
"""Every REPEAT_EVERY-th timed round keeps the previous round's inputs (the output is still poisoned first): a
kernel that skips work when its inputs look unchanged (a fingerprint memo) leaves the poison and fails."""

GUARD_BYTES = 64 * 1024
"""Guard region before and after every device buffer of the correctness run (a multiple of 256, so the
buffer itself stays 256-byte aligned). A grid without a bounds check writes up to block - 1 floats past the end
of the last row; the guards catch that."""

GUARD_WORD = 0x7FBADBAD
"""Pattern the guards are filled with (a quiet NaN payload no kernel computes by accident)."""

GOLD = 0.90
SILVER = 0.75
"""Fraction of the copy floor (the page's Check: 90% or more is gold, 75 to 90 silver, below fails)."""

PHYSICAL_BOUND = 1.03
"""The most of the copy floor a measurement may show and still be a verdict: a correct kernel of every exercise
reads one float and writes one float per element of its byte model, which is what the copy moves, so it cannot
beat the copy by more than the timing's noise (the floor is the fastest of three copies; on the H200 the gold
answer measures 0.96, docs/h200.md). A fraction above this is never graded (grader.timing.measure)."""

THRESHOLDS_TEXT = f"gold >= {GOLD:.2f}, silver >= {SILVER:.2f}"
"""The thresholds as the reports and the gradebook print them."""

PAGE_FLOOR_GBS = 244.7
"""The copy ceiling the page quotes for its Tesla T4 (day 49); shown for context, never graded against."""


# --- An exercise ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pointer:
    """One pointer parameter of the kernel: its role name, C type, whether the kernel writes it, and what it is
    (for messages: "the input x [rows, cols]")."""

    name: str
    c_type: str
    output: bool = False
    about: str = ""
    cached: bool = False
    """An input every row (or every head) reads again, served by the caches, so the byte model leaves it out and
    the counters do not count its loads as scattered (bias_gelu's bias, rope's tables)."""


@dataclass(frozen=True)
class Problem:
    """One size of an exercise's problem.

    dims: the exercise's own shape (rows, cols) or (batch, seq, heads, dim); label: how reports write it
    ("101 x 97"); rows, cols: the output as a float32 [rows, cols] array (the unit of the byte model is one
    element of it); grid: the (rows, cols) that grader.core.launch.LaunchSpec.grid_for takes (a row grid's rows and
    columns, a flat grid's (1, work items)); integers: every integer parameter role's value; floats: each pointer
    role's length in floats."""

    dims: tuple[int, ...]
    label: str
    rows: int
    cols: int
    grid: tuple[int, int]
    integers: dict[str, int] = field(default_factory=dict)
    floats: dict[str, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Elements of the output (rows x cols)."""
        return self.rows * self.cols


@dataclass(frozen=True)
class CounterTexts:
    """What the counters' findings and hints say in an exercise's words (grader.feedback.counters,
    grader.feedback.worth); the defaults name no exercise.

    reread: the usual causes of reads over the byte model; loads: what a coalesced kernel's loads touch per
    element ("x and a bias entry need 0.250"); fp64, xu: what follows "the FP64 (XU) pipe ran at N% of its peak
    (ref: M%): " in the extra-work hint; scatter_fix: how to make a scattered kernel's warps access contiguous
    memory."""

    reread: str = ("an input is read more than once, or loads use only part of each 32-byte sector they fetch "
                   "(strided or misaligned access)")
    loads: str = "the inputs need 0.250"
    fp64: str = ("the kernel computes in double. Its inputs and output are float; double math runs on the FP64 pipe, "
                 "at a fraction of the float rate, with a conversion each way.")
    xu: str = ("a math function costlier than it needs, conversions, or an integer division by a run-time value.")
    scatter_fix: str = "Give consecutive threads of a warp consecutive elements, so that a warp reads and writes " \
        "one contiguous piece of memory."


class DeviceSide:
    """The inputs, outputs and check of the timed launches of an exercise at one Problem, on the GPU (what
    Exercise.device returns; grader.timing.measure drives it). Gigabytes are never copied to the host: inputs are
    drawn on the GPU and outputs checked there.

    buffers: {pointer role: device buffer} for every pointer of the kernel, outputs included (problem.floats[role]
    floats each); the submission is launched on exactly these. The copy floor copies problem.n floats from the
    first input's buffer."""

    buffers: dict[str, object]

    def redraw(self, rng: np.random.Generator) -> None:
        """Fresh inputs, drawn on the GPU from seeds taken from `rng` (remembered for check)."""
        raise NotImplementedError

    def check(self, label: str):
        """Check every output (a grader.check.verify.Verification, the first failed one else the first output's)
        against the float64 answer of the inputs as drawn, regenerated from their seeds (or from a copy the
        kernel was never given), never from the buffers the kernel was given; an input whose buffer differs from
        its draw is named as changed. `label` names the launch ("timed launch 3"). Raises SubmissionError if an
        earlier kernel of the submission faulted."""
        raise NotImplementedError

    def close(self) -> None:
        """Free every buffer."""
        raise NotImplementedError


class Exercise:
    """An exercise of the course, as the harness uses it. Subclasses (grader/exercises/NAME/) set the fields and
    implement the methods; each method's docstring says what the harness passes and expects."""

    name: str = ""
    """The value of `grade --exercise`."""
    kernel_name: str = ""
    title: str = ""
    """One line: what the kernel computes ("out = GELU_erf(x + bias[col])")."""
    pointers: tuple[Pointer, ...] = ()
    integer_roles: tuple[str, ...] = ()
    default_params: tuple[str, ...] = ()
    default_grid: str = "flat"
    default_elems_per_thread: int = 1
    verify_dims: tuple[tuple[int, ...], ...] = ()
    """The problem sizes verified before timing, in order; the first is the page's ragged shape."""
    floats_per_element: int = 2
    """The byte model: floats read plus written per output element (what cache-resident inputs do not add)."""
    atol: float = 1e-5
    rtol: float = 1e-5
    tolerance_text: str = ""
    poison_word: int = POISON_WORD
    slow_hint: str = ""
    """The hint of a correct but slow kernel with no measured cause (the page's Check)."""
    bounds_test: str = "`if (i < n)`"
    """The bounds check a store outside the output or a read outside an input should have been inside."""
    wrong_output_kinds: tuple[str, ...] = ()
    """Hint kinds kept for a kernel whose output is wrong: those about what it computes, not how fast."""
    division_hint_bits: int = 32
    """The division hint is about integer divisions by a run-time value at least this wide that a launch of the
    grader reaches (grader.feedback.hints.code_hints). The default, 32, is any width: for an exercise whose model
    answer divides nowhere. 64: only the size_t ones, for one whose model answer divides in 32 bits."""
    asks_for_row: bool = False
    """The exercise asks for the student's table row and sentence (the byte-count flags: grader.source.claims)."""
    bytes_text: str = ""
    """What the byte model counts, for the byte-count flags ("x read once, out written once")."""
    cached_text: str = ""
    """What the byte model leaves out and why, for the byte-count flags."""
    counter_texts: CounterTexts = CounterTexts()
    reference_names: tuple[str, ...] = ()
    """The functions' own names of the references' kernels (references), for ncu's --kernel-name filter."""

    @property
    def inputs(self) -> tuple[Pointer, ...]:
        return tuple(p for p in self.pointers if not p.output)

    @property
    def outputs(self) -> tuple[Pointer, ...]:
        return tuple(p for p in self.pointers if p.output)

    @property
    def roles(self) -> tuple[str, ...]:
        """Every parameter role a `// grade: params` line may name."""
        return tuple(p.name for p in self.pointers) + self.integer_roles

    def check_params(self, params: tuple[str, ...], grid: str) -> str:
        """Why a declared parameter list cannot launch the kernel ('' when it can)."""
        missing = [p.name for p in self.pointers if p.name not in params]
        if missing:
            return f"params must include {', '.join(p.name for p in self.pointers)}; missing {', '.join(missing)}"
        return ""

    def hint_texts(self) -> dict[str, str]:
        """The exercise's own wording of the machine code's hints (grader.feedback.hints.code_hints' `texts`:
        division_lead, division_tail, width_tail); {} for the harness's, which names no exercise."""
        return {}

    def code_hints(self, signs) -> list:
        """The exercise's own hints from its kernel's code: grader.feedback.hints.code_hints hands it what it read
        there (a grader.feedback.hints.CodeSigns: the kernel's name, machine code or PTX, the signs of a tanh) and
        places the returned grader.feedback.hint.Hints after the division and load-width hints. [] for none."""
        return []

    def problem(self, dims: tuple[int, ...]) -> Problem:
        """The Problem of size `dims`."""
        raise NotImplementedError

    def bench_dims(self, rows: int, cols: int) -> tuple[int, ...]:
        """The dims of the benchmark Problem whose output is rows x cols (a report's bench_rows, bench_cols);
        (rows, cols) where the dims are the output's shape. Raises ValueError when no benchmark Problem has it."""
        return (rows, cols)

    def cached_bytes(self, problem: Problem) -> int:
        """Bytes of the inputs the byte model leaves out at `problem` (cache-resident: cached_text says why)."""
        return 0

    def bench_problem(self, free_bytes: int, l2_bytes: int) -> Problem:
        """The benchmark's Problem on a card with `free_bytes` of free memory and an L2 of `l2_bytes`; raises
        grader.core.errors.GraderFault when the card is too small to time on."""
        raise NotImplementedError

    def draw(self, seeds: tuple[int, ...], problem: Problem) -> dict[str, np.ndarray]:
        """The host inputs of `problem` from `seeds` (as seeds_from gives them): {input role: float32 array}."""
        raise NotImplementedError

    def seeds_from(self, rng: np.random.Generator) -> tuple[int, ...]:
        """The seeds of one draw of the inputs, taken from `rng`."""
        return tuple(int(rng.integers(2**63)) for _ in self.inputs)

    def reference(self, inputs: dict[str, np.ndarray], problem: Problem) -> np.ndarray:
        """The float64 answer [rows, cols] for `inputs` (as drawn)."""
        raise NotImplementedError

    def tolerance(self, inputs: dict[str, np.ndarray], ref: np.ndarray, problem: Problem) -> np.ndarray:
        """The largest allowed |got - ref| of each element [rows, cols] (float64); NaN references need NaN."""
        return self.atol + self.rtol * np.abs(np.where(np.isnan(ref), 0.0, ref))

    def given(self, inputs: dict[str, np.ndarray], problem: Problem, row: int, col: int) -> dict[str, float]:
        """The inputs element (row, col) of the output came from, by name (for a wrong element's message)."""
        return {}

    def given_text(self, given: dict[str, float]) -> str:
        """Those inputs as the message writes them ("x + bias = 1.5")."""
        return ", ".join(f"{k} = {v:.9g}" for k, v in given.items())

    def where(self, role: str, index: int, problem: Problem) -> str:
        """Element `index` (flat, in floats) of pointer `role`, as a message names it ("row 0, col 3")."""
        return f"element {index}"

    def mistake(self, inputs: dict[str, np.ndarray], got: np.ndarray, problem: Problem):
        """The known mistake a wrong output [rows, cols] float32 matches (a grader.check.mistakes.Mistake), or None."""
        return None

    def device(self, gpu, problem: Problem) -> DeviceSide:
        """The on-GPU side of the timed launches at `problem` (see DeviceSide)."""
        raise NotImplementedError

    @property
    def cached(self) -> tuple[str, ...]:
        """The roles of the cached inputs (Pointer.cached)."""
        return tuple(p.name for p in self.pointers if p.cached)

    def references(self, gpu, problem: Problem, buffers: dict[str, object]) -> dict[str, object]:
        """The launches Nsight Compute profiles beside the submission (grader.pipeline.profiled): the model answer
        (16-byte accesses) and the page's answer (4-byte accesses), each a no-argument launch (grader.core.launch.bind)
        of a kernel named as the student's, compiled for gpu's arch and loaded, on `buffers` (DeviceSide.buffers)
        at `problem`: {"model": launch, "page": launch}, or {} when the exercise has none (the counters then
        compare the kernel with the copies alone)."""
        return {}

    def chain(self, gpu, kernel, spec, launch_values, rng):
        """The exercise's part-3 table with the submission in it (a grader.timing.timer.Table), or None."""
        return None
