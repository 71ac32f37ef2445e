"""Stage 4b, verify: run the submission once at a ragged shape and compare with the float64 reference.

Before anything is timed. The output is poisoned with NaN before the launch (an element never written
stays NaN and fails), every buffer has guard regions before and after it (a kernel that writes outside
`out` fails), and the inputs are read back (a kernel that writes into x or bias fails).
"""

from __future__ import annotations

import numpy as np

from grader import exercise
from grader.contract import Contract, kernel_args, plan_launch
from grader.device import Gpu, GuardedArray
from grader.errors import SubmissionError
from grader.model import ReportModel
from grader.reference import bias_gelu, make_inputs

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
    with NaN first). `message` is the one-line summary shown to the user."""

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


def verify(gpu: Gpu, kernel, contract: Contract, widths: tuple[int, ...], rows: int, cols: int,
           rng: np.random.Generator) -> Verification:
    """Launch the submission once at rows x cols on fresh inputs from `rng` and check everything.

    Raises SubmissionError(stage "run") if the kernel faults; a misaligned access at a shape whose rows are
    not 16-byte aligned gets a message naming that.
    """
    x, bias = make_inputs(rng, rows, cols)
    arrays = {"x": GuardedArray(gpu, x.size), "bias": GuardedArray(gpu, bias.size), "out": GuardedArray(gpu, x.size)}
    try:
        arrays["x"].write(x.ravel())
        arrays["bias"].write(bias)
        arrays["out"].poison(NAN_WORD)
        plan = plan_launch(contract, rows, cols, gpu.info.multiprocessors, gpu.info.threads_per_multiprocessor)
        args = kernel_args(contract, widths, {k: a.data.ptr for k, a in arrays.items()}, rows, cols)
        gpu.launch(kernel, plan.grid, plan.block, *args)
        try:
            gpu.sync()
        except SubmissionError as err:
            if "MISALIGNED" in str(err) and cols % 4:
                err.details = (
                    f"At {rows} x {cols} a row is {cols * 4} bytes, not a multiple of 16: rows after the first "
                    "do not start 16-byte aligned. Use 16-byte (float4) accesses only where the address is "
                    "16-byte aligned (e.g. only when cols % 4 == 0), and a scalar path elsewhere."
                )
            raise
        result = compare(arrays["out"].read().reshape(rows, cols), bias_gelu(x, bias))
        result.guard_damage = [f"{side} {name}" for name, a in arrays.items() for side in a.guard_damage()]
        if not np.array_equal(arrays["x"].read(), x.ravel()):
            result.inputs_changed.append("x")
        if not np.array_equal(arrays["bias"].read(), bias):
            result.inputs_changed.append("bias")
    finally:
        for a in arrays.values():
            a.close()
    if result.guard_damage:
        result.passed = False
        result.message = (
            f"wrote outside its arrays at {rows} x {cols} (guard region {', '.join(result.guard_damage)}): "
            "is every store inside `if (col < cols)` (or `i < n`)? " + result.message
        )
    elif result.inputs_changed:
        result.passed = False
        result.message = f"changed its input {', '.join(result.inputs_changed)}: inputs are read-only. " + result.message
    return result


class DeviceCheck:
    """Checks a whole output on the GPU against a float64 reference computed there (grader/kernels/check.cu),
    so outputs of timed launches at the benchmark shape are checked without copying gigabytes to the host."""

    BLOCK = 256

    def __init__(self, gpu: Gpu) -> None:
        from grader import kernels as grader_kernels

        self.gpu = gpu
        self.kernel = grader_kernels.load(gpu, "check.cu", ("checkBiasGelu",))["checkBiasGelu"]
        self.counters = gpu.alloc(16)

    def __call__(self, x, bias, out, rows: int, cols: int, label: str) -> Verification:
        """Check out [rows, cols] against GELU_erf(x + bias[col]) (all device buffers of float32).

        `label` names the launch in the message (e.g. 'timed launch 12'). Raises SubmissionError(stage
        "run") if an earlier kernel of the submission faulted.
        """
        from grader.device import address

        gpu = self.gpu
        counters = address(self.counters)
        gpu.upload(counters, np.array([0, np.iinfo(np.uint64).max], dtype=np.uint64))
        grid = (gpu.info.multiprocessors * 8, 1, 1)
        gpu.launch(self.kernel, grid, (self.BLOCK, 1, 1), np.uint64(address(x)), np.uint64(address(bias)),
                   np.uint64(address(out)), np.uint64(rows), np.uint64(cols), np.float64(exercise.ATOL),
                   np.float64(exercise.RTOL), np.uint64(counters), np.uint64(counters + 8))
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
