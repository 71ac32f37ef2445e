"""Stage 4b, verify: run the submission at ragged shapes and compare with the float64 reference.

Before anything is timed. The output is poisoned before the launch (exercise.POISON_WORD: an element never written
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

from grader import exercise
from grader.source.contract import Contract
from grader.gpu.device import Gpu, GuardedArray
from grader.core.errors import Stage, SubmissionError
from grader.core.launch import DevicePtr, LaunchSpec, Param, address, bind
from grader.core.model import ReportModel
from grader.check.draws import BIAS_MIX, X_MIX, draw
from grader.check.reference import bias_gelu, make_inputs
from grader.check.mistakes import Mistake, match as match_mistake

POISON = np.uint32(exercise.POISON_WORD)
POISON_VALUE = float(POISON.view(np.float32))
"""The output's contents before a checked launch (exercise.POISON_WORD)."""

TOLERANCE_TEXT = f"|got - ref| <= {exercise.ATOL:g} + {exercise.RTOL:g} * |ref|, NaN where ref is NaN"

FENCES = (("x", "end"), ("bias", "end"), ("x", "start"), ("bias", "start"))
"""The runs after the guarded one, at each verification shape: which input ends (or starts) at unmapped memory."""


class Mismatch(ReportModel):
    """One wrong element: its (row, col), the kernel's value, the float64 reference and, where known, the inputs
    it came from (x[row, col] and bias[col], float32)."""

    row: int
    col: int
    got: float
    expected: float
    x: float | None = None
    bias: float | None = None

    def text(self) -> str:
        """'(row r, col c): x + bias = v: got g, expected e'."""
        where = f"(row {self.row}, col {self.col})"
        if self.x is not None and self.bias is not None:
            where += f": x + bias = {np.float32(self.x) + np.float32(self.bias):.9g}"
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
    tolerance: str = TOLERANCE_TEXT
    message: str = ""
    mistake: Mistake | None = None


def compare(got: np.ndarray, ref: np.ndarray, inputs: tuple[np.ndarray, np.ndarray] | None = None) -> Verification:
    """Compare float32 `got` [rows, cols] with float64 `ref` [rows, cols] under the exercise's tolerance.

    Where ref is NaN (a NaN input) the element must be NaN; elsewhere it must be finite and within the tolerance.
    inputs: (x float32 [rows, cols], bias float32 [cols]), to name the first bad element's input. Pure numpy.
    """
    rows, cols = ref.shape
    got = np.ascontiguousarray(got, dtype=np.float32)
    got64 = got.astype(np.float64)
    ref_nan = np.isnan(ref)
    finite = np.isfinite(got64)
    err = np.where(finite & ~ref_nan, np.abs(np.where(finite, got64, 0.0) - np.where(ref_nan, 0.0, ref)), 0.0)
    tol = exercise.ATOL + exercise.RTOL * np.abs(np.where(ref_nan, 0.0, ref))
    ok = np.where(ref_nan, np.isnan(got64), finite & (err <= tol))
    n_bad = int((~ok).sum())
    result = Verification(rows=rows, cols=cols, passed=n_bad == 0, total=ref.size, bad=n_bad,
                          not_finite=int((~finite & ~ref_nan).sum()),
                          unwritten=int((got.view(np.uint32) == POISON).sum()),
                          max_abs_error=float(err.max()) if err.size else 0.0,
                          max_tolerance_share=float((err / tol).max()) if err.size else 0.0)
    if not n_bad:
        result.message = (f"correct at {rows} x {cols}: largest error {result.max_tolerance_share:.2g} of the "
                          f"tolerance (tolerance {TOLERANCE_TEXT})")
        return result
    r, c = (int(v) for v in np.argwhere(~ok)[0])
    result.first_bad = Mismatch(row=r, col=c, got=float(got[r, c]), expected=float(ref[r, c]))
    if inputs is not None:
        result.first_bad.x, result.first_bad.bias = float(inputs[0][r, c]), float(inputs[1][c])
    never = (f", {result.unwritten} never written (still the {POISON_VALUE:g} the output was filled with)"
             if result.unwritten else "")
    odd = f", {result.not_finite} NaN or inf where a number was expected" if result.not_finite else ""
    result.message = (
        f"wrong output at {rows} x {cols}: first bad element {result.first_bad.text()}; {n_bad} of {ref.size} "
        f"elements bad{never}{odd}; largest error {result.max_tolerance_share:.3g} x its tolerance (tolerance "
        f"{TOLERANCE_TEXT})")
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

    def __enter__(self) -> "GuardedRun":
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


def changed_text(first: dict[str, int], cols: int) -> str:
    """'x (first changed element row 0, col 3), bias (first changed element col 0)' from flat float indices."""
    parts = []
    for name, i in first.items():
        where = f"col {i}" if name == "bias" else f"row {i // cols}, col {i % cols}"
        parts.append(f"{name} (first changed element {where})")
    return ", ".join(parts)


def verify(gpu: Gpu, kernel, spec: LaunchSpec, contract: Contract, rows: int, cols: int,
           rng: np.random.Generator) -> Verification:
    """Launch the submission (per `spec`, arguments per `contract`) at rows x cols on fresh inputs from `rng`
    (grader.check.draws) and check everything: the output against float64, the guard regions, the inputs; then
    again with each input ending, then starting, at unmapped memory (FENCES), where the GPU has a Fence.

    Raises SubmissionError(Stage.RUN) if the kernel faults: a misaligned access at a shape whose rows are not
    16-byte aligned gets details naming that; a fault in a fenced run names the input it read outside of.
    """
    x, bias = make_inputs(rng, rows, cols)
    ref = bias_gelu(x, bias)
    result = _checked_run(gpu, kernel, spec, contract, (x, bias), ref, None)
    fence = gpu.fence(max(x.nbytes, bias.nbytes)) if result.passed else None
    if fence is None:
        return result
    for name, side in FENCES:
        again = _checked_run(gpu, kernel, spec, contract, (x, bias), ref, (fence, name, side))
        if not again.passed:
            again.message = f"with {name} placed at the {side} of mapped memory: {again.message}"
            return again
    result.fenced = True
    result.message += "; no read outside x or bias (each ended, then started, at unmapped memory)"
    return result


def _checked_run(gpu: Gpu, kernel, spec: LaunchSpec, contract: Contract, inputs: tuple[np.ndarray, np.ndarray],
                 ref: np.ndarray, fenced: tuple[object, str, str] | None) -> Verification:
    """One launch at ref's shape on `inputs`, checked; fenced = (fence, input name, side) places that input."""
    x, bias = inputs
    rows, cols = ref.shape
    with GuardedRun(gpu) as run:
        where = {fenced[1]: (fenced[0], fenced[2])} if fenced else {}
        arrays = {"x": run.input("x", x.ravel(), where.get("x")), "bias": run.input("bias", bias, where.get("bias")),
                  "out": run.output(x.size)}
        bind(gpu, kernel, spec, rows, cols,
             contract.launch_values({k: a.data for k, a in arrays.items()}, rows, cols))()
        try:
            gpu.sync()
        except SubmissionError as err:
            raise _fault(err, rows, cols, fenced) from None
        got = arrays["out"].read().reshape(rows, cols)
        result = compare(got, ref, inputs)
        if result.bad:  # which known mistake the output matches (grader.check.mistakes, issue 29)
            result.mistake = match_mistake(x, bias, got, exercise.POISON_WORD)
            result.message += f"; {result.mistake.text}" if result.mistake else ""
        result.guard_damage = guard_damage(arrays)
        result.first_changed = {name: i // 4 for name, i in run.first_changes().items()}
        result.inputs_changed = list(result.first_changed)
    if result.guard_damage:
        result.passed = False
        result.message = (
            f"{guard_text(result.guard_damage)} at {rows} x {cols}: is every store inside `if (col < cols)` "
            "(or `i < n`)? " + result.message
        )
    elif result.inputs_changed:
        result.passed = False
        result.message = (f"changed its input {changed_text(result.first_changed, cols)} at {rows} x {cols}: inputs "
                          "are read-only. " + result.message)
    return result


def _fault(err: SubmissionError, rows: int, cols: int, fenced: tuple[object, str, str] | None) -> SubmissionError:
    """The error for a fault at rows x cols: in a fenced run, a read outside the input the run fenced (the same
    launch with every input inside a larger allocation ran cleanly just before); a misaligned access at a shape
    whose rows are not 16-byte aligned, that; else `err` as it is."""
    if fenced is not None:
        _, name, side = fenced
        past = "past the end" if side == "end" else "before the start"
        test = "`if (col < cols)` (or `i < n`)" if side == "end" else "the index's lower bound"
        return SubmissionError(Stage.RUN, (
            f"read {past} of {name} at {rows} x {cols}: the kernel faulted ({err.fault}) when {name} "
            f"{'ended' if side == 'end' else 'started'} at unmapped memory, after the same launch with {name} inside a "
            f"larger allocation ran; is every load of {name} inside {test}?"), err.details, err.fault)
    if err.fault == "CUDA_ERROR_MISALIGNED_ADDRESS" and cols % 4:
        err.details = (
            f"At {rows} x {cols} a row is {cols * 4} bytes, not a multiple of 16: rows after the first "
            "do not start 16-byte aligned. Use 16-byte (float4) accesses only where the address is "
            "16-byte aligned (e.g. only when cols % 4 == 0), and a scalar path elsewhere."
        )
    return err


CHECK = LaunchSpec((Param("x", "ptr"), Param("bias", "ptr"), Param("out", "ptr"), Param("out2", "ptr"),
                    Param("rows", "u64"), Param("cols", "u64"), Param("x_seed", "u64"), Param("x_shares", "u64"),
                    Param("x_shape", "i32"), Param("bias_seed", "u64"), Param("bias_shares", "u64"),
                    Param("bias_shape", "i32"), Param("atol", "f64"), Param("rtol", "f64"), Param("counts", "ptr")),
                   grid="stride")
"""checkBiasGelu (grader/gpu/kernels/inputs.cu): a grid-stride pass over the output, one GPU-filling grid."""

_UNSET = np.iinfo(np.uint64).max


class DeviceCheck:
    """Checks whole outputs on the GPU against a float64 reference computed there (grader/gpu/kernels/inputs.cu,
    checkBiasGelu) from the inputs regenerated from their seeds (grader.check.draws), never from the buffers the
    kernel was given: outputs of timed launches at the benchmark shape are checked without copying gigabytes to
    the host, and a kernel that writes its inputs cannot make the expected side agree (it is named instead)."""

    def __init__(self, gpu: Gpu) -> None:
        from grader.gpu import kernels as grader_kernels

        self.gpu = gpu
        self.kernel = grader_kernels.load(gpu, "inputs.cu", ("checkBiasGelu",))["checkBiasGelu"]
        self.counts = gpu.alloc(8 * 8)

    def __call__(self, x, bias, out, rows: int, cols: int, seeds: tuple[int, int], label: str,
                 second: tuple[object, str] | None = None) -> Verification:
        """Check out [rows, cols] (a device buffer of float32) against GELU_erf(x + bias[col]) for x and bias as
        drawn with seeds = (x seed, bias seed) (grader.check.draws.X_MIX, BIAS_MIX); x and bias (the device buffers
        the kernel was given) are only compared with the draws, to name an input the kernel changed. `second`:
        (another output of the same inputs, its label), checked in the same pass.

        `label` names the launch in the message (e.g. 'timed launch 12'). Returns the first failed Verification
        (out's, then second's), else out's. Raises SubmissionError(Stage.RUN) if an earlier kernel of the
        submission faulted.
        """
        gpu = self.gpu
        counts = address(self.counts)
        gpu.upload(counts, np.array([0, _UNSET] * 4, dtype=np.uint64))
        (xs, xshape), (bs, bshape) = X_MIX.packed(), BIAS_MIX.packed()
        bind(gpu, self.kernel, CHECK, rows, cols, dict(
            x=x, bias=bias, out=out, out2=second[0] if second else 0, rows=rows, cols=cols, x_seed=seeds[0],
            x_shares=xs, x_shape=xshape, bias_seed=seeds[1], bias_shares=bs, bias_shape=bshape, atol=exercise.ATOL,
            rtol=exercise.RTOL, counts=counts))()
        bad, first, _, x_first, _, bias_first, bad2, first2 = (int(v) for v in gpu.download(counts, 8, np.uint64))
        changed = {name: i for name, i in (("x", x_first), ("bias", bias_first)) if i != _UNSET}
        result = self._result(out, rows, cols, seeds, label, bad, first, changed)
        if result.passed and second is not None:
            return self._result(second[0], rows, cols, seeds, second[1], bad2, first2, {})
        return result

    def _result(self, out, rows: int, cols: int, seeds: tuple[int, int], label: str, bad: int, first: int,
                changed: dict[str, int]) -> Verification:
        """The Verification of one checked output: `bad` elements, the first at flat index `first`, `changed`
        the first changed element of each input."""
        result = Verification(rows=rows, cols=cols, passed=not bad and not changed, total=rows * cols, bad=bad,
                              inputs_changed=list(changed), first_changed=changed)
        if result.passed:
            result.message = f"{label} correct at {rows} x {cols} (checked on the GPU in float64)"
            return result
        told = (f"changed its input {changed_text(changed, cols)} during {label} at {rows} x {cols}: inputs are "
                "read-only, and the check uses them as drawn, not as the kernel left them. ") if changed else ""
        if not bad:
            result.message = told.rstrip() + " (its output was right)"
            return result
        r, c = divmod(first, cols)
        xv = float(draw(seeds[0], 1, X_MIX, start=first)[0])
        bv = float(draw(seeds[1], 1, BIAS_MIX, start=c)[0])
        got = float(self.gpu.download(address(out) + 4 * first, 1, np.float32)[0])
        expected = float(bias_gelu(np.array([[xv]], np.float32), np.array([bv], np.float32))[0, 0])
        result.first_bad = Mismatch(row=r, col=c, got=got, expected=expected, x=xv, bias=bv)
        result.message = (
            f"{told}wrong output of {label} at {rows} x {cols}: first bad element {result.first_bad.text()}; {bad} of "
            f"{rows * cols} elements bad (tolerance {TOLERANCE_TEXT}). The output of every timed launch is checked, "
            "on inputs redrawn between launches")
        return result

    def close(self) -> None:
        self.counts.close()
