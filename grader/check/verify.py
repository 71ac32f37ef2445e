"""Stage 4b, verify: run the submission once at a ragged shape and compare with the float64 reference.

Before anything is timed. The output is poisoned with NaN before the launch (an element never written
stays NaN and fails), every buffer has guard regions before and after it (a kernel that writes outside
`out` fails), and the inputs are read back (a kernel that writes into x or bias fails): `GuardedRun`, which
the reference kernels' gates use too. `DeviceCheck` checks the outputs of timed launches on the GPU.
"""

from __future__ import annotations

import numpy as np

from grader import exercise
from grader.source.contract import Contract
from grader.gpu.device import Gpu, GuardedArray
from grader.errors import SubmissionError
from grader.launch import LaunchSpec, Param, address, bind
from grader.model import ReportModel
from grader.check.reference import bias_gelu, make_inputs
from grader.check.mistakes import Mistake, match as match_mistake

NAN_WORD = 0x7FC00000
"""float32 quiet NaN: the output's contents before the launch."""

TOLERANCE_TEXT = f"|got - ref| <= {exercise.ATOL:g} + {exercise.RTOL:g} * |ref|"


class Mismatch(ReportModel):
    """One wrong element: its (row, col), the kernel's value and the float64 reference."""

    row: int
    col: int
    got: float
    expected: float


class Verification(ReportModel):
    """Outcome of one correctness check at rows x cols. `max_abs_error` is over the finite outputs;
    `not_finite` counts NaN and inf outputs (a NaN is an element never written: the output is poisoned
    with NaN first). `message` is the one-line summary shown to the user; `mistake`, for a wrong output, the known
    mistake it matches (grader.check.mistakes), also said at the end of the message."""

    rows: int
    cols: int
    passed: bool
    total: int
    bad: int = 0
    not_finite: int = 0
    max_abs_error: float = 0.0
    first_bad: Mismatch | None = None
    guard_damage: list[str] = []
    inputs_changed: list[str] = []
    tolerance: str = TOLERANCE_TEXT
    message: str = ""
    mistake: Mistake | None = None


def compare(got: np.ndarray, ref: np.ndarray) -> Verification:
    """Compare float32 `got` [rows, cols] with float64 `ref` [rows, cols] under the exercise's tolerance.

    NaN and inf in `got` always count as bad. Pure numpy: needs no GPU.
    """
    rows, cols = ref.shape
    got64 = got.astype(np.float64)
    finite = np.isfinite(got64)
    err = np.abs(np.where(finite, got64, 0.0) - ref)
    bad = ~finite | ~(err <= exercise.ATOL + exercise.RTOL * np.abs(ref))
    err = np.where(finite, err, 0.0)
    n_bad = int(bad.sum())
    result = Verification(
        rows=rows,
        cols=cols,
        passed=n_bad == 0,
        total=ref.size,
        bad=n_bad,
        not_finite=int((~finite).sum()),
        max_abs_error=float(err.max()) if err.size else 0.0,
    )
    if n_bad:
        r, c = (int(v) for v in np.argwhere(bad)[0])
        result.first_bad = Mismatch(row=r, col=c, got=float(got[r, c]), expected=float(ref[r, c]))
        never = f", {result.not_finite} not finite (never written, or NaN/inf)" if result.not_finite else ""
        result.message = (
            f"wrong output at {rows} x {cols}: first bad element (row {r}, col {c}): got {got[r, c]:.9g}, "
            f"expected {ref[r, c]:.9g}; {n_bad} of {ref.size} elements bad{never}; "
            f"largest error {result.max_abs_error:.3g} (tolerance {TOLERANCE_TEXT})"
        )
    else:
        result.message = (
            f"correct at {rows} x {cols}: largest error {result.max_abs_error:.3g} (tolerance {TOLERANCE_TEXT})"
        )
    return result


def guard_text(damage: list[str]) -> str:
    """The one line for writes outside a run's arrays: damage lists the guard regions hit ('after out')."""
    return f"wrote outside its arrays (guard region {', '.join(damage)})"


class GuardedRun:
    """The device buffers of one checked run, each a GuardedArray (guard regions before and after): inputs
    copied from host arrays (their bytes are compared after the run), outputs filled with a pattern (NaN by
    default: an element never written stays NaN). Use as a context manager; every buffer is freed at exit.
    Used by `verify` for the submission and by reference_kernels.gates for the reference kernels."""

    def __init__(self, gpu: Gpu) -> None:
        self.gpu = gpu
        self.inputs: dict[str, tuple[GuardedArray, np.ndarray]] = {}
        self.owned: list[GuardedArray] = []

    def __enter__(self) -> "GuardedRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def input(self, name: str, host: np.ndarray) -> GuardedArray:
        """A guarded device copy of `host` (any dtype), remembered as input `name`."""
        host = np.ascontiguousarray(host)
        g = GuardedArray(self.gpu, max(1, -(-host.nbytes // 4)))
        self.owned.append(g)
        self.gpu.upload(g.data.ptr, host)
        self.inputs[name] = (g, host)
        return g

    def output(self, words: int, fill: int = NAN_WORD) -> GuardedArray:
        """A guarded output of `words` 32-bit words, each set to `fill` (a float32 quiet NaN by default)."""
        g = GuardedArray(self.gpu, words)
        self.owned.append(g)
        g.poison(fill)
        return g

    def changed_inputs(self) -> list[str]:
        """Names of the inputs whose bytes differ from the host arrays they were copied from."""
        out = []
        for name, (g, host) in self.inputs.items():
            got = self.gpu.download(g.data.ptr, host.nbytes, np.uint8)
            if not np.array_equal(got, host.view(np.uint8).ravel()):
                out.append(name)
        return out

    def close(self) -> None:
        """Free every buffer made by input() and output()."""
        for g in self.owned:
            g.close()
        self.owned.clear()


def guard_damage(arrays: dict[str, GuardedArray]) -> list[str]:
    """'before NAME' / 'after NAME' for each guard region of `arrays` that no longer holds its pattern."""
    return [f"{side} {name}" for name, a in arrays.items() for side in a.guard_damage()]


def verify(gpu: Gpu, kernel, spec: LaunchSpec, contract: Contract, rows: int, cols: int,
           rng: np.random.Generator) -> Verification:
    """Launch the submission (launched per `spec`, arguments per `contract`) once at rows x cols on fresh
    inputs from `rng` and check everything: the output against float64, the guard regions, the inputs.

    Raises SubmissionError(stage "run") if the kernel faults; a misaligned access at a shape whose rows are
    not 16-byte aligned gets details naming that.
    """
    x, bias = make_inputs(rng, rows, cols)
    with GuardedRun(gpu) as run:
        arrays = {"x": run.input("x", x.ravel()), "bias": run.input("bias", bias), "out": run.output(x.size)}
        launch = bind(gpu, kernel, spec, rows, cols,
                      contract.launch_values({k: a.data for k, a in arrays.items()}, rows, cols))
        launch()
        try:
            gpu.sync()
        except SubmissionError as err:
            if err.fault == "CUDA_ERROR_MISALIGNED_ADDRESS" and cols % 4:
                err.details = (
                    f"At {rows} x {cols} a row is {cols * 4} bytes, not a multiple of 16: rows after the first "
                    "do not start 16-byte aligned. Use 16-byte (float4) accesses only where the address is "
                    "16-byte aligned (e.g. only when cols % 4 == 0), and a scalar path elsewhere."
                )
            raise
        got = arrays["out"].read().reshape(rows, cols)
        result = compare(got, bias_gelu(x, bias))
        if result.bad:  # which known mistake the output matches (grader.check.mistakes, issue 29)
            result.mistake = match_mistake(x, bias, got, NAN_WORD)
            result.message += f"; {result.mistake.text}" if result.mistake else ""
        result.guard_damage = guard_damage(arrays)
        result.inputs_changed = run.changed_inputs()
    if result.guard_damage:
        result.passed = False
        result.message = (
            f"{guard_text(result.guard_damage)} at {rows} x {cols}: is every store inside `if (col < cols)` "
            "(or `i < n`)? " + result.message
        )
    elif result.inputs_changed:
        result.passed = False
        result.message = f"changed its input {', '.join(result.inputs_changed)}: inputs are read-only. " + result.message
    return result


CHECK = LaunchSpec((Param("x", "ptr"), Param("bias", "ptr"), Param("out", "ptr"), Param("rows", "u64"),
                    Param("cols", "u64"), Param("atol", "f64"), Param("rtol", "f64"), Param("bad", "ptr"),
                    Param("first", "ptr")), grid="stride")
"""checkBiasGelu (grader/gpu/kernels/check.cu): a grid-stride pass over the output, one GPU-filling grid."""


class DeviceCheck:
    """Checks a whole output on the GPU against a float64 reference computed there (grader/gpu/kernels/check.cu),
    so outputs of timed launches at the benchmark shape are checked without copying gigabytes to the host."""

    def __init__(self, gpu: Gpu) -> None:
        from grader.gpu import kernels as grader_kernels

        self.gpu = gpu
        self.kernel = grader_kernels.load(gpu, "check.cu", ("checkBiasGelu",))["checkBiasGelu"]
        self.counters = gpu.alloc(16)

    def __call__(self, x, bias, out, rows: int, cols: int, label: str) -> Verification:
        """Check out [rows, cols] against GELU_erf(x + bias[col]) (all device buffers of float32).

        `label` names the launch in the message (e.g. 'timed launch 12'). Raises SubmissionError(stage
        "run") if an earlier kernel of the submission faulted.
        """
        gpu = self.gpu
        counters = address(self.counters)
        gpu.upload(counters, np.array([0, np.iinfo(np.uint64).max], dtype=np.uint64))
        bind(gpu, self.kernel, CHECK, rows, cols, dict(
            x=x, bias=bias, out=out, rows=rows, cols=cols, atol=exercise.ATOL, rtol=exercise.RTOL,
            bad=counters, first=counters + 8))()
        bad, first = (int(v) for v in gpu.download(counters, 2, np.uint64))
        result = Verification(rows=rows, cols=cols, passed=bad == 0, total=rows * cols, bad=bad)
        if not bad:
            result.message = f"{label} correct at {rows} x {cols} (checked on the GPU in float64)"
            return result
        r, c = divmod(first, cols)
        xv = gpu.download(address(x) + 4 * first, 1, np.float32)
        bv = gpu.download(address(bias) + 4 * c, 1, np.float32)
        got = float(gpu.download(address(out) + 4 * first, 1, np.float32)[0])
        expected = float(bias_gelu(xv.reshape(1, 1), bv)[0, 0])
        result.first_bad = Mismatch(row=r, col=c, got=got, expected=expected)
        result.message = (
            f"wrong output of {label} at {rows} x {cols}: first bad element (row {r}, col {c}): got {got:.9g}, "
            f"expected {expected:.9g}; {bad} of {rows * cols} elements bad (tolerance {TOLERANCE_TEXT}). "
            "The output of every timed launch is checked, on inputs redrawn between launches"
        )
        return result

    def close(self) -> None:
        self.counters.close()
