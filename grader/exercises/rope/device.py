"""The RoPE exercise on the GPU: the timed launches' buffers, their inputs drawn there, and the check of every output
there (grader.core.exercise.DeviceSide; grader.timing.measure drives it). Gigabytes never cross to the host.

`in` is drawn on the GPU by fillDraw (grader/gpu/kernels/inputs.cu, through grader.timing.timer.InputFiller), whose
numpy twin is grader.check.draws.draw: bit for bit the host's Exercise.draw. The cos and sin tables are uploaded
once, twice: the copy the kernel is given and a private copy it never sees. After a timed launch, checkRope
(check.cu in this folder) regenerates `in` from its seed, takes cos and sin from the private copy, counts the
output elements outside the tolerance in float64 and compares the buffers the kernel was given with the draw and
the private tables, to name an input the kernel changed; then the host reads the private tables back and compares
them with its own (2 x seq x D/2 floats: 1 MiB at the benchmark), so a kernel that writes outside its buffers
cannot move the check's answer either.
"""

from __future__ import annotations

import numpy as np

from grader.check.draws import draw
from grader.check.verify import Mismatch, Verification
from grader.core.errors import Stage, SubmissionError
from grader.core.exercise import DeviceSide, Problem
from grader.core.launch import LaunchSpec, Param, address, bind
from grader.exercises.rope.problem import IN_MIX, tables
from grader.exercises.rope.reference import ROPE_ATOL, UNIT_ROUNDOFF
from grader.gpu import kernels as grader_kernels
from grader.timing.timer import InputFiller

CHECK_SOURCE = "check.cu"
CHECK_KERNEL = "checkRope"
CHECK = LaunchSpec((Param("in", "ptr"), Param("cosTab", "ptr"), Param("sinTab", "ptr"), Param("out", "ptr"),
                    Param("privCos", "ptr"), Param("privSin", "ptr"), Param("pairs", "u64"), Param("halfDim", "i32"),
                    Param("heads", "i32"), Param("seq", "i32"), Param("seed", "u64"), Param("shares", "u64"),
                    Param("shape", "i32"), Param("rtol", "f64"), Param("atol", "f64"), Param("counts", "ptr")),
                   grid="stride")
"""checkRope (check.cu): a grid-stride pass over the pairs and the tables, one GPU-filling grid."""

COUNTS = 8
"""checkRope's counters: bad outputs, the first; changed in, the first; changed cosTab, the first; sinTab, the first."""
_UNSET = np.iinfo(np.uint64).max
_INPUTS = ("in", "cosTab", "sinTab")


def check_source() -> str:
    """The text NVRTC compiles: check.cu (shipped with the package: pyproject.toml's package-data) with the grader's
    draw, draws.cuh, in place of its include (grader.gpu.kernels.source_text)."""
    return grader_kernels.source_text(__package__, CHECK_SOURCE)


def load_check(gpu):
    """checkRope compiled for `gpu`'s arch (NVRTC, once per NVRTC version and arch: grader.compile.kernel_cache, as
    grader.gpu.kernels.load does for the grader's own kernels) and loaded: a cuda.core Kernel. Raises SubmissionError
    only if the source is broken."""
    return grader_kernels.load(gpu, CHECK_SOURCE, (CHECK_KERNEL,), __package__)[CHECK_KERNEL]


class RopeDevice(DeviceSide):
    """in, cosTab, sinTab and out of `problem` on `gpu` (buffers, by role), the private tables and the counters.
    The tables are uploaded here; `in` is drawn by redraw. Raises GraderFault when an allocation fails."""

    def __init__(self, exercise, gpu, problem: Problem) -> None:
        self.exercise, self.gpu, self.problem = exercise, gpu, problem
        self.cos, self.sin = tables(problem)
        self.seed = 0
        self._owned: list = []
        try:
            self.buffers = {role: self._alloc(4 * problem.floats[role]) for role in ("in", "cosTab", "sinTab", "out")}
            self.private = {role: self._alloc(4 * self.cos.size) for role in ("cosTab", "sinTab")}
            self.counts = self._alloc(8 * COUNTS)
            for role, host in (("cosTab", self.cos), ("sinTab", self.sin)):
                gpu.upload(self.buffers[role], host)
                gpu.upload(self.private[role], host)
            self.fill = InputFiller(gpu)
            self.kernel = load_check(gpu)
        except BaseException:
            self.close()
            raise

    def _alloc(self, nbytes: int):
        buf = self.gpu.alloc(nbytes)
        self._owned.append(buf)
        return buf

    def redraw(self, rng: np.random.Generator) -> None:
        """A fresh `in` (problem.IN_MIX), drawn on the GPU from one seed taken from `rng` as Exercise.seeds_from
        takes it (the seed is remembered for check)."""
        (self.seed,) = self.exercise.seeds_from(rng)
        self.fill.draw(self.buffers["in"], self.problem.n, self.seed, IN_MIX)

    def check(self, label: str) -> Verification:
        """The Verification of `out` after the launch `label` names ('timed launch 3'): checkRope's counts, then
        the private tables against the host's. Raises SubmissionError if an earlier kernel faulted (at the first
        synchronisation), or, when the private tables changed, SubmissionError(Stage.RUN): the kernel wrote outside
        the buffers it was given."""
        gpu, p = self.gpu, self.problem
        counts = address(self.counts)
        gpu.upload(counts, np.array([0, _UNSET] * (COUNTS // 2), dtype=np.uint64))
        shares, shape = IN_MIX.packed()
        ints = p.integers
        bind(gpu, self.kernel, CHECK, 1, ints["pairs"], dict(
            **{role: self.buffers[role] for role in ("in", "cosTab", "sinTab", "out")},
            privCos=self.private["cosTab"], privSin=self.private["sinTab"], pairs=ints["pairs"],
            halfDim=ints["halfDim"], heads=ints["heads"], seq=ints["seq"], seed=self.seed, shares=shares,
            shape=shape, rtol=8.0 * UNIT_ROUNDOFF, atol=ROPE_ATOL, counts=counts))()
        got = [int(v) for v in gpu.download(counts, COUNTS, np.uint64)]
        self._private_intact(label)
        changed = {role: got[2 * k + 3] for k, role in enumerate(_INPUTS) if got[2 * k + 2]}
        return self._result(label, got[0], got[1], changed)

    def _private_intact(self, label: str) -> None:
        """Raise SubmissionError(Stage.RUN) when the check's private tables differ from the host's tables."""
        for role, host in (("cosTab", self.cos), ("sinTab", self.sin)):
            now = self.gpu.download(self.private[role], host.size, np.float32)
            if not np.array_equal(now.view(np.uint32), host.reshape(-1).view(np.uint32)):
                raise SubmissionError(Stage.RUN, (
                    f"wrote outside its buffers during {label} at {self.problem.label}: the grader's private copy "
                    f"of {role}, which the kernel was never given, changed; is every store inside "
                    f"{self.exercise.bounds_test}?"))

    def _result(self, label: str, bad: int, first: int, changed: dict[str, int]) -> Verification:
        """The Verification of one check: `bad` elements, the first at float index `first`, `changed` the first
        changed float of each input that changed."""
        p, ex = self.problem, self.exercise
        result = Verification(rows=p.rows, cols=p.cols, passed=not bad and not changed, total=p.n, bad=bad,
                              inputs_changed=list(changed), first_changed=changed, tolerance=ex.tolerance_text)
        if result.passed:
            result.message = f"{label} correct at {p.label} (checked on the GPU in float64)"
            return result
        told = "".join(f"changed its input {role} (first changed element {ex.where(role, i, p)}) during {label} at "
                       f"{p.label}: inputs are read-only, and the check uses them as drawn, not as the kernel left "
                       "them. " for role, i in changed.items())
        if not bad:
            result.message = told.rstrip() + " (its output was right)"
            return result
        row, col = divmod(first, p.cols)
        given = self._given(first)
        value = float(self.gpu.download(address(self.buffers["out"]) + 4 * first, 1, np.float32)[0])
        expected = _expected(given, col)
        result.first_bad = Mismatch(row=row, col=col, got=value, expected=expected, given=given,
                                    given_text=ex.given_text(given))
        result.message = (
            f"{told}wrong output of {label} at {p.label}: first bad element {ex.where('out', first, p)}: "
            f"{ex.given_text(given)}: got {value:.9g}, expected {expected:.9g}; {bad} of {p.n} elements bad "
            f"(tolerance {ex.tolerance_text}). The output of every timed launch is checked, on inputs redrawn "
            "between launches")
        return result

    def _given(self, index: int) -> dict[str, float]:
        """The pair of output float `index` as drawn (from the seed) and its table entry (the host's tables), named
        as Exercise.given names them."""
        half, heads, seq = (self.problem.integers[k] for k in ("halfDim", "heads", "seq"))
        pair = index // 2
        x0, x1 = draw(self.seed, 2, IN_MIX, start=2 * pair)
        t = ((pair // half) // heads % seq) * half + pair % half
        return {"x0": float(x0), "x1": float(x1), "cos": float(self.cos.flat[t]), "sin": float(self.sin.flat[t])}

    def close(self) -> None:
        """Free every buffer."""
        for buf in self._owned:
            buf.close()
        self._owned.clear()


def _expected(given: dict[str, float], col: int) -> float:
    """The float64 RoPE of one element from its pair and table entry (as checkRope computes it)."""
    x0, x1, c, s = given["x0"], given["x1"], given["cos"], given["sin"]
    return x0 * c - x1 * s if col % 2 == 0 else x0 * s + x1 * c
