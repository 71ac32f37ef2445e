"""Stage 4b, verify: run the submission at ragged shapes and compare with the float64 reference.

Before anything is timed. The output is poisoned before the launch (grader.core.exercise.POISON_WORD: an element never
written
fails), every buffer has guard regions before and after it (a kernel that writes outside `out` fails), and the
inputs are read back (a kernel that writes into x or bias fails, the input and its first changed element named):
`GuardedRun`, which the reference kernels' gates use too. The reference is computed from the inputs as drawn, never
from what the kernel left in the buffers. Then the same launch runs again with each input ending, then starting,
at unmapped memory (grader.gpu.device.Fence): a read outside x or bias faults there, and the report names the
buffer, the side and the shape. `DeviceCheck` checks the outputs of timed launches on the GPU, against inputs
regenerated from their seeds.
"""

from __future__ import annotations

import numpy as np

from grader.check.mistakes import Mistake
from grader.core import exercise
from grader.core.errors import Stage, SubmissionError
from grader.core.exercise import Exercise, Problem
from grader.core.launch import DevicePtr, LaunchSpec, bind
from grader.core.model import ReportModel
from grader.gpu.device import Gpu, GuardedArray
from grader.source.contract import Contract

POISON = np.uint32(exercise.POISON_WORD)
POISON_VALUE = float(POISON.view(np.float32))
"""The output's contents before a checked launch (grader.core.exercise.POISON_WORD)."""

SIDES = ("end", "start")
"""The runs after the guarded one, at each verification shape: each input of the exercise in turn ends, then
starts, at unmapped memory."""


def fences(ex: Exercise) -> tuple[tuple[str, str], ...]:
    """(input, side) of the fenced runs, in order: every input ending at unmapped memory, then every one starting
    there (bias_gelu: x end, bias end, x start, bias start)."""
    return tuple((p.name, side) for side in SIDES for p in ex.inputs)


class Mismatch(ReportModel):
    """One wrong element: its (row, col) of the output [rows, cols], the kernel's value, the float64 reference
    and, where known, the inputs it came from (`given`, float32 values by name: x[row, col] and bias[col]) and
    how the exercise writes them (`given_text`: "x + bias = 1.5")."""

    row: int
    col: int
    got: float
    expected: float
    given: dict[str, float] = {}
    given_text: str = ""

    def text(self) -> str:
        """'(row r, col c): x + bias = v: got g, expected e'."""
        where = f"(row {self.row}, col {self.col})" + (f": {self.given_text}" if self.given_text else "")
        return f"{where}: got {self.got:.9g}, expected {self.expected:.9g}"


class Verification(ReportModel):
    """Outcome of one correctness check at rows x cols. `max_abs_error` is over the finite outputs whose reference
    is a number, `max_tolerance_share` the largest error as a share of its element's tolerance; `not_finite` counts
    NaN and inf outputs where a number was expected; `unwritten` the elements that still hold the poison the output
    was filled with (never written). `inputs_changed` names the inputs the kernel wrote into, `first_changed` the
    first changed element of each (a flat index). `fenced` says whether reads outside the inputs were checked at
    this shape (grader.gpu.device.Fence). `message` is the one-line summary; `mistake`, for a wrong output, the
    known mistake it matches (grader.check.mistakes), also said at the end of the message."""

    rows: int
    cols: int
    passed: bool
    total: int
    bad: int = 0
    not_finite: int = 0
    unwritten: int = 0
    max_abs_error: float = 0.0
    max_tolerance_share: float = 0.0
    first_bad: Mismatch | None = None
    guard_damage: list[str] = []
    inputs_changed: list[str] = []
    first_changed: dict[str, int] = {}
    fenced: bool = False
    tolerance: str = ""
    message: str = ""
    mistake: Mistake | None = None


def compare(got: np.ndarray, ref: np.ndarray, ex: Exercise, inputs: dict[str, np.ndarray] | None = None,
            problem: Problem | None = None) -> Verification:
    """Compare float32 `got` [rows, cols] with float64 `ref` [rows, cols] under the exercise's tolerance
    (Exercise.tolerance, per element; the ATOL + RTOL |ref| rule without `inputs`).

    Where ref is NaN (a NaN input) the element must be NaN; elsewhere it must be finite and within the tolerance.
    inputs, problem: the inputs as drawn ({role: float32 array}) at `problem`, to compute the tolerance and name the
    first bad element's inputs. Pure numpy.
    """
    rows, cols = ref.shape
    label = problem.label if problem is not None else f"{rows} x {cols}"
    got = np.ascontiguousarray(got, dtype=np.float32)
    got64 = got.astype(np.float64)
    ref_nan = np.isnan(ref)
    finite = np.isfinite(got64)
    err = np.where(finite & ~ref_nan, np.abs(np.where(finite, got64, 0.0) - np.where(ref_nan, 0.0, ref)), 0.0)
    tol = (ex.tolerance(inputs, ref, problem) if inputs is not None and problem is not None
           else ex.atol + ex.rtol * np.abs(np.where(ref_nan, 0.0, ref)))
    tol = np.where(np.isnan(tol), np.inf, tol)
    ok = np.where(ref_nan, np.isnan(got64), finite & (err <= tol))
    n_bad = int((~ok).sum())
    result = Verification(rows=rows, cols=cols, passed=n_bad == 0, total=ref.size, bad=n_bad,
                          tolerance=ex.tolerance_text,
                          not_finite=int((~finite & ~ref_nan).sum()),
                          unwritten=int((got.view(np.uint32) == POISON).sum()),
                          max_abs_error=float(err.max()) if err.size else 0.0,
                          max_tolerance_share=float((err / tol).max()) if err.size else 0.0)
    if not n_bad:
        result.message = (f"correct at {label}: largest error {result.max_tolerance_share:.2g} of the "
                          f"tolerance (tolerance {ex.tolerance_text})")
        return result
    r, c = (int(v) for v in np.argwhere(~ok)[0])
    result.first_bad = Mismatch(row=r, col=c, got=float(got[r, c]), expected=float(ref[r, c]))
    if inputs is not None and problem is not None:
        given = ex.given(inputs, problem, r, c)
        result.first_bad.given, result.first_bad.given_text = given, ex.given_text(given) if given else ""
    never = (f", {result.unwritten} never written (still the {POISON_VALUE:g} the output was filled with)"
             if result.unwritten else "")
    odd = f", {result.not_finite} NaN or inf where a number was expected" if result.not_finite else ""
    result.message = (
        f"wrong output at {label}: first bad element {result.first_bad.text()}; {n_bad} of {ref.size} "
        f"elements bad{never}{odd}; largest error {result.max_tolerance_share:.3g} x its tolerance (tolerance "
        f"{ex.tolerance_text})")
    return result


def guard_text(damage: list[str]) -> str:
    """The one line for writes outside a run's arrays: damage lists the guard regions hit ('after out')."""
    return f"wrote outside its arrays (guard region {', '.join(damage)})"


class FencedInput:
    """An input placed in the GPU's Fence (grader.gpu.device.Fence.place): `data` is its address. It has no guard
    regions (a write outside it faults) and owns no memory (the Fence is the Gpu's)."""

    def __init__(self, data: DevicePtr) -> None:
        self.data = data

    def guard_damage(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


class GuardedRun:
    """The device buffers of one checked run, each a GuardedArray (guard regions before and after): inputs
    copied from host arrays (their bytes are compared after the run), outputs filled with a pattern (POISON by
    default: an element never written keeps it). Use as a context manager; every buffer is freed at exit.
    Used by `verify` for the submission and by reference_kernels.gates for the reference kernels."""

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self.inputs: dict[str, tuple[GuardedArray | FencedInput, np.ndarray]] = {}
        self.owned: list[GuardedArray] = []

    def __enter__(self) -> GuardedRun:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def input(self, name: str, host: np.ndarray, fenced: tuple[object, str] | None = None
              ) -> GuardedArray | FencedInput:
        """A device copy of `host` (any dtype), remembered as input `name`: guarded, or with fenced = (fence,
        side) placed at the 'start' or 'end' of a grader.gpu.device.Fence."""
        host = np.ascontiguousarray(host)
        if fenced is not None:
            fence, side = fenced
            g: GuardedArray | FencedInput = FencedInput(fence.place(max(4, host.nbytes), side))
        else:
            g = GuardedArray(self.gpu, max(1, -(-host.nbytes // 4)))
            self.owned.append(g)
        self.gpu.upload(g.data.ptr, host)
        self.inputs[name] = (g, host)
        return g

    def output(self, words: int, fill: int = exercise.POISON_WORD) -> GuardedArray:
        """A guarded output of `words` 32-bit words, each set to `fill` (exercise.POISON_WORD by default)."""
        g = GuardedArray(self.gpu, words)
        self.owned.append(g)
        g.poison(fill)
        return g

    def first_changes(self) -> dict[str, int]:
        """{input name: the first byte that differs from the host array it was copied from} for each changed input."""
        out = {}
        for name, (g, host) in self.inputs.items():
            got = self.gpu.download(g.data.ptr, host.nbytes, np.uint8)
            diff = np.flatnonzero(got != host.view(np.uint8).ravel())
            if diff.size:
                out[name] = int(diff[0])
        return out

    def changed_inputs(self) -> list[str]:
        """Names of the inputs whose bytes differ from the host arrays they were copied from."""
        return list(self.first_changes())

    def close(self) -> None:
        """Free every buffer made by input() and output()."""
        for g in self.owned:
            g.close()
        self.owned.clear()


def guard_damage(arrays: dict) -> list[str]:
    """'before NAME' / 'after NAME' for each guard region of `arrays` that no longer holds its pattern."""
    return [f"{side} {name}" for name, a in arrays.items() for side in a.guard_damage()]


def changed_text(first: dict[str, int], ex: Exercise, problem: Problem) -> str:
    """'x (first changed element row 0, col 3), bias (first changed element col 0)' from flat float indices
    (Exercise.where names an element)."""
    return ", ".join(f"{name} (first changed element {ex.where(name, i, problem)})" for name, i in first.items())


def verify(gpu: Gpu, kernel, spec: LaunchSpec, contract: Contract, ex: Exercise, problem: Problem,
           rng: np.random.Generator) -> Verification:
    """Launch the submission (per `spec`, arguments per `contract`) at `problem` of exercise `ex` on fresh inputs
    (Exercise.draw, seeds from `rng`) and check everything: the output against the float64 reference, the guard
    regions, the inputs; then again with each input ending, then starting, at unmapped memory (fences), where the
    GPU has a Fence.

    Raises SubmissionError(Stage.RUN) if the kernel faults: a misaligned access at a shape whose rows are not
    16-byte aligned gets details naming that; a fault in a fenced run names the input it read outside of.
    """
    inputs = ex.draw(ex.seeds_from(rng), problem)
    ref = ex.reference(inputs, problem)
    result = _checked_run(gpu, kernel, spec, contract, ex, problem, inputs, ref, None)
    fence = gpu.fence(max(a.nbytes for a in inputs.values())) if result.passed else None
    if fence is None:
        return result
    for name, side in fences(ex):
        again = _checked_run(gpu, kernel, spec, contract, ex, problem, inputs, ref, (fence, name, side))
        if not again.passed:
            again.message = f"with {name} placed at the {side} of mapped memory: {again.message}"
            return again
    result.fenced = True
    names = [p.name for p in ex.inputs]
    result.message += (f"; no read outside {', '.join(names[:-1])} or {names[-1]}" if len(names) > 1
                       else f"; no read outside {names[0]}") + " (each ended, then started, at unmapped memory)"
    return result


def _checked_run(gpu: Gpu, kernel, spec: LaunchSpec, contract: Contract, ex: Exercise, problem: Problem,
                 inputs: dict[str, np.ndarray], ref: np.ndarray, fenced: tuple[object, str, str] | None
                 ) -> Verification:
    """One launch at `problem` on `inputs`, checked; fenced = (fence, input name, side) places that input."""
    rows, cols, label = problem.rows, problem.cols, problem.label
    out_name = ex.outputs[0].name
    with GuardedRun(gpu) as run:
        where = {fenced[1]: (fenced[0], fenced[2])} if fenced else {}
        arrays = {name: run.input(name, host.ravel(), where.get(name)) for name, host in inputs.items()}
        arrays[out_name] = run.output(problem.floats[out_name])
        bind(gpu, kernel, spec, *problem.grid,
             contract.launch_values({k: a.data for k, a in arrays.items()}, problem))()
        try:
            gpu.sync()
        except SubmissionError as err:
            raise _fault(err, ex, problem, fenced) from None
        got = arrays[out_name].read().reshape(rows, cols)
        result = compare(got, ref, ex, inputs, problem)
        result.rows, result.cols = rows, cols
        if result.bad:  # which known mistake the output matches (the exercise's, issue 29)
            result.mistake = ex.mistake(inputs, got, problem)
            result.message += f"; {result.mistake.text}" if result.mistake else ""
        result.guard_damage = guard_damage(arrays)
        result.first_changed = {name: i // 4 for name, i in run.first_changes().items()}
        result.inputs_changed = list(result.first_changed)
    if result.guard_damage:
        result.passed = False
        result.message = (
            f"{guard_text(result.guard_damage)} at {label}: is every store inside {ex.bounds_test}? " + result.message
        )
    elif result.inputs_changed:
        result.passed = False
        result.message = (f"changed its input {changed_text(result.first_changed, ex, problem)} at {label}: inputs "
                          "are read-only. " + result.message)
    return result


def _fault(err: SubmissionError, ex: Exercise, problem: Problem, fenced: tuple[object, str, str] | None
           ) -> SubmissionError:
    """The error for a fault at rows x cols: in a fenced run, a read outside the input the run fenced (the same
    launch with every input inside a larger allocation ran cleanly just before); a misaligned access at a shape
    whose rows are not 16-byte aligned, that; else `err` as it is."""
    rows, cols = problem.rows, problem.cols
    if fenced is not None:
        _, name, side = fenced
        past = "past the end" if side == "end" else "before the start"
        test = ex.bounds_test if side == "end" else "the index's lower bound"
        return SubmissionError(Stage.RUN, (
            f"read {past} of {name} at {problem.label}: the kernel faulted ({err.fault}) when {name} "
            f"{'ended' if side == 'end' else 'started'} at unmapped memory, after the same launch with {name} inside a "
            f"larger allocation ran; is every load of {name} inside {test}?"), err.details, err.fault)
    if err.fault == "CUDA_ERROR_MISALIGNED_ADDRESS" and cols % 4:
        return SubmissionError(err.stage, str(err), (
            f"At {rows} x {cols} a row is {cols * 4} bytes, not a multiple of 16: rows after the first "
            "do not start 16-byte aligned. Use 16-byte (float4) accesses only where the address is "
            "16-byte aligned (e.g. only when cols % 4 == 0), and a scalar path elsewhere."), err.fault)
    return err
