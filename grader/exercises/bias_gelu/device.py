"""The on-GPU side of biasGeluFused's timed launches: x, bias and out at the benchmark shape, drawn on the GPU
(grader/gpu/kernels/inputs.cu, fillDraw, with reference.X_MIX and BIAS_MIX) and every output checked there
(check.cu, checkBiasGelu) against inputs regenerated from their seeds, never from the buffers the kernel had."""

from __future__ import annotations

import numpy as np

from grader.check.draws import draw
from grader.check.verify import Mismatch, Verification, changed_text
from grader.core.exercise import Exercise, Problem
from grader.core.launch import LaunchSpec, Param, address, bind
from grader.exercises import bias_gelu as c
from grader.exercises.bias_gelu.reference import BIAS_MIX, X_MIX, bias_gelu
from grader.gpu import kernels as grader_kernels
from grader.gpu.device import Gpu
from grader.timing.timer import InputFiller


def draw_on_gpu(fill: InputFiller, x, bias, rows: int, cols: int, rng: np.random.Generator) -> tuple[int, int]:
    """Fresh inputs on the GPU, the twin of EXERCISE.draw(EXERCISE.seeds_from(rng), ...): x [rows, cols] and bias
    [cols] (device buffers of float32) drawn with two seeds from `rng` (X_MIX, BIAS_MIX). Returns the seeds (x's,
    bias's), from which DeviceCheck regenerates them."""
    seeds = (int(rng.integers(2**63)), int(rng.integers(2**63)))
    fill.draw(x, rows * cols, seeds[0], X_MIX)
    fill.draw(bias, cols, seeds[1], BIAS_MIX)
    return seeds


class BiasGeluDevice:
    """grader.core.exercise.DeviceSide of biasGeluFused at `problem`: buffers x, bias, out; redraw; check."""

    def __init__(self, gpu: Gpu, problem: Problem, ex: Exercise) -> None:
        self.gpu, self.problem = gpu, problem
        n, cols = problem.n, problem.cols
        self.buffers = {"x": gpu.alloc(n * 4), "bias": gpu.alloc(cols * 4), "out": gpu.alloc(n * 4)}
        self.fill, self.checker = InputFiller(gpu), DeviceCheck(gpu, ex)
        self.seeds = (0, 0)

    def redraw(self, rng: np.random.Generator) -> None:
        """Fresh x and bias from two seeds of `rng` (draw_on_gpu)."""
        b = self.buffers
        self.seeds = draw_on_gpu(self.fill, b["x"], b["bias"], self.problem.rows, self.problem.cols, rng)

    def check(self, label: str) -> Verification:
        """out checked against GELU_erf(x + bias[col]) of the inputs as drawn (DeviceCheck)."""
        b = self.buffers
        return self.checker(b["x"], b["bias"], b["out"], self.problem.rows, self.problem.cols, self.seeds, label)

    def close(self) -> None:
        """Free the check's and the buffers' memory."""
        self.checker.close()
        for buf in self.buffers.values():
            buf.close()


CHECK = LaunchSpec((Param("x", "ptr"), Param("bias", "ptr"), Param("out", "ptr"), Param("out2", "ptr"),
                    Param("rows", "u64"), Param("cols", "u64"), Param("x_seed", "u64"), Param("x_shares", "u64"),
                    Param("x_shape", "i32"), Param("bias_seed", "u64"), Param("bias_shares", "u64"),
                    Param("bias_shape", "i32"), Param("atol", "f64"), Param("rtol", "f64"), Param("counts", "ptr")),
                   grid="stride")
"""checkBiasGelu (check.cu, this folder): a grid-stride pass over the output, one GPU-filling grid."""

_UNSET = np.iinfo(np.uint64).max


class DeviceCheck:
    """Checks whole outputs on the GPU against a float64 reference computed there (check.cu, checkBiasGelu) from the
    inputs regenerated from their seeds (grader.check.draws), never from the buffers the
    kernel was given: outputs of timed launches at the benchmark shape are checked without copying gigabytes to
    the host, and a kernel that writes its inputs cannot make the expected side agree (it is named instead)."""

    def __init__(self, gpu: Gpu, ex: Exercise) -> None:
        self.gpu, self.ex = gpu, ex
        self.kernel = grader_kernels.load(gpu, "check.cu", ("checkBiasGelu",), __package__)["checkBiasGelu"]
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
            x_shares=xs, x_shape=xshape, bias_seed=seeds[1], bias_shares=bs, bias_shape=bshape, atol=c.ATOL,
            rtol=c.RTOL, counts=counts))()
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
        told = (f"changed its input {changed_text(changed, self.ex, self.ex.problem((rows, cols)))} "
                f"during {label} at {rows} x {cols}: inputs are "
                "read-only, and the check uses them as drawn, not as the kernel left them. ") if changed else ""
        if not bad:
            result.message = told.rstrip() + " (its output was right)"
            return result
        r, c = divmod(first, cols)
        xv = float(draw(seeds[0], 1, X_MIX, start=first)[0])
        bv = float(draw(seeds[1], 1, BIAS_MIX, start=c)[0])
        got = float(self.gpu.download(address(out) + 4 * first, 1, np.float32)[0])
        expected = float(bias_gelu(np.array([[xv]], np.float32), np.array([bv], np.float32))[0, 0])
        given = {"x": xv, "bias": bv}
        result.first_bad = Mismatch(row=r, col=c, got=got, expected=expected, given=given,
                                    given_text=self.ex.given_text(given))
        result.message = (
            f"{told}wrong output of {label} at {rows} x {cols}: first bad element {result.first_bad.text()}; {bad} of "
            f"{rows * cols} elements bad (tolerance {self.ex.tolerance_text}). "
            "The output of every timed launch is checked, "
            "on inputs redrawn between launches")
        return result

    def close(self) -> None:
        self.counts.close()
