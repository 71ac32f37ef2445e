"""Hints ranked by the time they explain (issue 23): each hint carries an estimate of what fixing it is worth,
from the grading's times (the kernel, the copy floor, the one-float-per-thread copy) and, where Nsight Compute
measured them, the counters (grader.feedback.counters: the kernel beside the page's answer and the model answer, in one
child process); the largest first. A hint without an estimate (the tanh form is a correctness matter; local
memory and registers are not costed) follows those with one, in the order it was given.

The time model. t is the kernel's time, t_floor the copy floor's, t_one the one-float copy's (the grading's
medians). From the counters: t_ref, the time of the reference with the kernel's access width (the page's
answer for 4-byte accesses, the model answer for 16-byte ones), scaled from ncu's times of the two launches
(t x ref / yours, both in the same child, at the card's own clocks); the issue share s_issue (issue slots busy
over the launch) and the memory share s_mem (the busiest of DRAM, L2 and L1, % of its peak); the instructions
per element of the kernel (I) and of the reference (I_ref). A unit that is the kernel's only limit runs at
ETA of its peak, so work it must do takes (share x t) / ETA. The estimate of a fix is the time after it:

  width (only 4-byte loads, from the machine code):  max(t - (t_one - t_floor), t_floor, s_issue t / ETA):
        16-byte accesses save what they save the copy, unless the instructions then set the time;
  scattered (sectors per element over SCATTER_X x a coalesced access's): max(t_ref, s_issue t / ETA);
  work (I over WORK_X x I_ref; also the division hint's estimate):  max(t_ref, s_mem t / ETA), and the
        saving at most the issue time of the extra instructions, (I - I_ref) / I x s_issue t / ETA;
  occupancy (resident warps under OCCUPANCY_X x the reference's): max(t_ref, s_issue t / ETA).

Without counters: the division is worth at most the kernel's time above the copy of its width (t_one with
4-byte loads, else t_floor); a kernel over UNEXPLAINED_X x that copy's time gets the "unexplained" hint, worth
up to that time, saying the counters would say what it is. Estimates are the grading's fraction of the floor
before and after (t_floor / t). Checked against the H200's measurements of tests/data/hints (issue 23):
the normcdff kernel with 16-byte loads ran at 0.589 of the floor, the estimate of its width hint says 0.594.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader import exercise
from grader.feedback.counters import MODEL, PAGE_ANSWER, YOURS, Counters, KernelCounters
from grader.model import ReportModel

ETA = 0.9
"""The share of its peak a unit sustains when it alone sets a kernel's time (H200, issue 23: the 16-byte copy's
L2 at 92.5% and DRAM at 88.4%, the double kernel's issue slots at 91.5%)."""
SCATTER_X = 1.5
"""Global load or store sectors per element over this many times a coalesced access's make a scattered one."""
WORK_X = 1.2
"""Warp instructions per element over this many times the reference's are extra work."""
OCCUPANCY_X = 0.6
"""Resident warps under this share of the reference's are too few (tests/data/silver/stride_float4.cu: 0.46)."""
UNEXPLAINED_X = 1.25
"""Without counters, a kernel slower than this many times the copy of its width gets the "unexplained" hint."""
LITTLE = 0.005
"""An estimated gain under this fraction of the copy floor is "worth little on its own now"."""
GENERATED = ("unexplained", "scattered", "work", "occupancy", "slow")
"""Kinds of hints made here (rank makes them again each time; the others come from grader.feedback.hints)."""
LD_NEED, ST_NEED = 2 * exercise.BYTES_PER_FLOAT / 32, exercise.BYTES_PER_FLOAT / 32
"""Sectors per element a coalesced kernel's loads (x and a bias entry) and stores (out) touch."""


class Hint(ReportModel):
    """One hint: its text and kind ("division", "width", "tanh", "local", "registers" from the machine code;
    "scattered", "work", "occupancy" from the counters; "unexplained", "slow" from the times), and what fixing
    it is estimated to be worth: the time saved (ms), the fraction of the copy floor now and after, whether
    that is an upper bound (`bound`), and what the estimate rests on (`basis`). None: not estimated."""

    text: str
    kind: str = ""
    saved_ms: float | None = None
    fraction_now: float | None = None
    fraction_after: float | None = None
    bound: bool = False
    basis: str = ""

    def __str__(self) -> str:
        """The hint as the report prints it: its text, then its estimate in words."""
        if self.saved_ms is None or self.fraction_now is None or self.fraction_after is None:
            return self.text
        now, after = self.fraction_now, self.fraction_after
        if after - now < LITTLE:
            return f"{self.text} [worth little on its own now: from {now:.3f} of the copy floor to about {after:.3f}; " \
                   f"{self.basis}]"
        word = "at most" if self.bound else "about"
        return f"{self.text} [worth {word} +{after - now:.2f} of the copy floor: from {now:.3f} to {word} {after:.3f}; " \
               f"{self.basis}]"


@dataclass(frozen=True)
class Times:
    """The grading's medians, ms: the kernel, the copy floor and the one-float-per-thread copy."""

    kernel: float
    floor: float
    one_float: float

    @property
    def fraction(self) -> float:
        """The kernel's fraction of the copy floor."""
        return self.floor / self.kernel


@dataclass(frozen=True)
class Measured:
    """What the counters say, in the grading's time: the kernel's launch, its reference (the page's answer or
    the model answer, by access width) and the reference's time scaled into the grading (t_ref)."""

    yours: KernelCounters
    ref: KernelCounters
    t_ref: float
    times: Times

    @property
    def s_issue(self) -> float:
        return (self.yours.issue_pct or 0.0) / 100

    @property
    def s_mem(self) -> float:
        return (self.yours.busiest_memory or ("", 0.0))[1] / 100

    def after(self, *floors: float) -> float:
        """The time after a fix: the largest of `floors` (never under the copy floor)."""
        return max(self.times.floor, *floors)


def measured(counters: Counters | None, times: Times | None) -> Measured | None:
    """Measured of `counters` for a kernel timed at `times`; None without counters, times, the kernel's launch
    time or a reference launch."""
    if counters is None or counters.unavailable or times is None:
        return None
    yours = counters.get(YOURS)
    if yours is None or not yours.duration_ns:
        return None
    width = yours.bytes_per_thread_access
    ref = counters.get(MODEL if width is not None and width > exercise.BYTES_PER_FLOAT else PAGE_ANSWER)
    if ref is None or not ref.duration_ns:
        return None
    return Measured(yours, ref, times.kernel * ref.duration_ns / yours.duration_ns, times)


def _estimate(h: Hint, times: Times, after: float | None, basis: str, bound: bool = False) -> Hint:
    """`h` with the estimate of a fix leaving the kernel at `after` ms (None: no estimate)."""
    if after is None:
        return h.model_copy(update={"saved_ms": None, "fraction_now": None, "fraction_after": None, "basis": ""})
    after = min(times.kernel, after)
    return h.model_copy(update={"saved_ms": times.kernel - after, "fraction_now": times.fraction,
                                "fraction_after": times.floor / after, "bound": bound, "basis": basis})


def width_after(times: Times, m: Measured | None) -> float:
    """The time after 16-byte accesses (module docstring)."""
    after = max(times.kernel - (times.one_float - times.floor), times.floor)
    return max(after, m.s_issue * times.kernel / ETA) if m else after


def work_after(m: Measured) -> float:
    """The time after the kernel's extra instructions go (module docstring), never more than they cost."""
    t, k = m.times.kernel, m.yours
    after = m.after(m.t_ref, m.s_mem * t / ETA)
    ipe, ref = k.instructions_per_elem, m.ref.instructions_per_elem
    if ipe and ref is not None:
        after = max(after, t - max(0.0, (ipe - ref) / ipe) * m.s_issue * t / ETA)
    return after


COPIES = "from the grading's one-float and 16-byte copies"
COUNTERS = "from the counters, beside the page's answer and the model answer"


def _costed(h: Hint, times: Times, m: Measured | None, width_copy: float) -> Hint:
    """`h` (a hint from the machine code) with its estimate (module docstring)."""
    if h.kind == "width":
        return _estimate(h, times, width_after(times, m), COUNTERS if m else COPIES)
    if h.kind == "division":
        if m:
            return _estimate(h, times, work_after(m), COUNTERS)
        return _estimate(h, times, width_copy, COPIES, bound=True)
    return _estimate(h, times, None, "")


def _ref_name(m: Measured) -> str:
    return "the page's answer" if m.ref.label == PAGE_ANSWER else "the model answer"


def scattered_hint(m: Measured, cols: int | None) -> Hint | None:
    """The scattered-access hint when loads or stores touch over SCATTER_X x the sectors per element a
    coalesced kernel's do (LD_NEED, ST_NEED), with each side's sectors per request against a coalesced access
    as wide (grader.feedback.counters.ideal_sectors); None otherwise."""
    from grader.feedback.counters import ideal_sectors

    k = m.yours
    width = k.bytes_per_thread_access
    sides = []
    for side, need, what in (("st", ST_NEED, "stores"), ("ld", LD_NEED, "loads")):
        per_elem = k.per_elem(k.st_sectors if side == "st" else k.ld_sectors)
        per_req, ideal = k.sectors_per_request(side), ideal_sectors(k, side)
        if per_elem is not None and per_req is not None and ideal and per_elem > SCATTER_X * need:
            sides.append((what, per_req, ideal, per_elem, need))
    if not sides or width is None:
        return None
    first, *rest = sides
    said = (f"each warp's {first[0]} touch {first[1]:.1f} sectors where a coalesced {width:g}-byte access touches "
            f"{first[2]:.0f}" + "".join(f", and its {s[0]} {s[1]:.1f} where {s[2]:.0f} would do" for s in rest))
    per = " and ".join(f"{s[3]:.3f}" for s in sides) + " sectors per element where " + \
        " and ".join(f"{s[4]:.3f}" for s in sides) + " do"
    apart = f" (down a column of this {cols}-column matrix they are {cols * 4 / 1024:g} KiB apart)" if cols else ""
    text = (f"scattered accesses (from the counters): {said} ({per}): consecutive threads of a warp access addresses "
            f"32 bytes or more apart, so each 32-byte sector brings one useful float{apart}. Map threadIdx.x to the "
            "column (the page's row grid: blockIdx.y = row, the column from blockIdx.x and threadIdx.x), so that a "
            "warp reads and writes one contiguous piece of a row.")
    return _estimate(Hint(text=text, kind="scattered"), m.times, m.after(m.t_ref, m.s_issue * m.times.kernel / ETA),
                     COUNTERS)


def work_hint(m: Measured) -> Hint | None:
    """The extra-work hint when the kernel executes over WORK_X x its reference's warp instructions per element,
    naming the FP64 pipe (double math) or the XU pipe (special functions, conversions) where the kernel's runs
    well above the reference's; None otherwise."""
    k, ref = m.yours, m.ref
    ipe, ipe_ref = k.instructions_per_elem, ref.instructions_per_elem
    if ipe is None or ipe_ref is None or ipe <= WORK_X * ipe_ref:
        return None
    name = _ref_name(m)
    text = (f"extra work per element (from the counters): the kernel's warps executed {ipe:.2f} instructions per "
            f"element where {name}, with accesses as wide, executes {ipe_ref:.2f}, and its issue slots were busy "
            f"{k.issue_pct or 0:.0f}% of the launch ({name}: {ref.issue_pct or 0:.0f}%)")
    fp64, xu = (k.pipes.get("fp64", 0.0), ref.pipes.get("fp64", 0.0)), (k.pipes.get("xu", 0.0), ref.pipes.get("xu", 0.0))
    if fp64[0] >= 5 and fp64[0] > 2 * fp64[1]:
        text += (f". The FP64 pipe ran at {fp64[0]:.0f}% of its peak ({name}: {fp64[1]:.0f}%): the kernel computes "
                 "in double. x, bias and out are float, and 0.5f * v * (1.0f + erff(v * 0.70710678f)) is the exact "
                 "GELU in float; double math runs on the FP64 pipe, at a fraction of the float rate, with a "
                 "conversion each way.")
    elif xu[0] >= 5 and xu[0] > 2 * xu[1]:
        text += (f". The XU pipe (special functions and conversions) ran at {xu[0]:.0f}% of its peak ({name}: "
                 f"{xu[1]:.0f}%): a math function costlier than erff (normcdff, expf, powf, a float division), "
                 "conversions, or an integer division by a run-time value. The exact GELU in float is "
                 "0.5f * v * (1.0f + erff(v * 0.70710678f)).")
    else:
        text += ". Take work out of the per-element path: index arithmetic, divisions, loops, branches."
    return _estimate(Hint(text=text, kind="work"), m.times, work_after(m), COUNTERS)


def occupancy_hint(m: Measured) -> Hint | None:
    """The too-few-warps hint when the SMs held under OCCUPANCY_X x the reference's resident warps and the kernel
    is over 10% slower than the reference; None otherwise."""
    k, ref = m.yours, m.ref
    if k.warps_pct is None or not ref.warps_pct or k.warps_pct >= OCCUPANCY_X * ref.warps_pct \
            or m.times.kernel <= 1.1 * m.t_ref:
        return None
    text = (f"too few warps in flight (from the counters): the SMs held {k.warps_pct:.0f}% of the warps they can "
            f"run, where {_ref_name(m)} keeps {ref.warps_pct:.0f}% resident. A kernel that streams memory needs many "
            "loads in flight to cover the memory's latency (Little's law: bytes in flight = bandwidth x latency): "
            "launch enough blocks to fill every SM several times, and keep registers per thread few.")
    return _estimate(Hint(text=text, kind="occupancy"), m.times,
                     m.after(m.t_ref, m.s_issue * m.times.kernel / ETA), COUNTERS)


def unexplained_hint(times: Times, width_copy: float, scalar: bool, reason: str) -> Hint | None:
    """Without counters: the hint for a kernel over UNEXPLAINED_X x the time of the copy with its access width
    (`width_copy`, ms: the one-float copy's when `scalar`), saying what the copies cannot tell and why the counters
    were not measured (`reason`); None for a kernel nearer that copy."""
    if times.kernel <= UNEXPLAINED_X * width_copy:
        return None
    which = "the one-float-per-thread copy" if scalar else "the copy floor"
    text = (f"something beyond the load width costs time: the kernel takes {times.kernel / width_copy:.2f} x the "
            f"time of {which}, the fastest a kernel with its access width runs here. The usual causes are "
            "scattered accesses (consecutive threads not on consecutive addresses: map threadIdx.x to the column) "
            "and extra work per element (double math, costly math functions, divisions); Nsight Compute's "
            "counters tell them apart (grade --counters)" + (f"; {reason}" if reason else "") + ".")
    return _estimate(Hint(text=text, kind="unexplained"), times, width_copy, COPIES, bound=True)


def rank(hints: list[Hint], times: Times | None, counters: Counters | None = None, cols: int | None = None,
         no_counters: str = "") -> list[Hint]:
    """`hints` (from the machine code; earlier ranked ones too: the hints made here are made again) with their
    estimates, plus the counters' hints (scattered accesses, extra work, few warps) where `counters` measured the
    kernel beside a reference, or the "unexplained" hint without them (`no_counters`: why there are none);
    sorted by the time saved, largest first, then those without an estimate in their order. `times`: the
    grading's (None for a kernel that was not timed: the hints come back unranked). `cols`: the benchmark
    shape's columns, for the scattered hint's stride."""
    code = [h for h in hints if h.kind not in GENERATED]
    if times is None:
        return code
    m = measured(counters, times)
    scalar = any(h.kind == "width" for h in code)
    width_copy = times.one_float if scalar else times.floor
    out = [_costed(h, times, m, width_copy) for h in code]
    if m is not None:
        made = [scattered_hint(m, cols), occupancy_hint(m)]
        if not any(h.kind == "division" for h in code) or (m.yours.pipes.get("fp64", 0) >= 5):
            made.append(work_hint(m))
    else:
        made = [unexplained_hint(times, width_copy, scalar, no_counters)]
    out += [h for h in made if h is not None]
    order = {"unexplained": 0, "scattered": 1, "work": 2, "occupancy": 3}
    estimated = sorted((h for h in out if h.saved_ms is not None),
                       key=lambda h: (-round(h.saved_ms, 4), order.get(h.kind, 9)))
    return estimated + [h for h in out if h.saved_ms is None]
