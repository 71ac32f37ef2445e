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

Without counters: the division is worth at most the issue time of its instructions, were the SMs doing nothing
else (grader.feedback.launch_facts.division_facts), and never more than the kernel's time above the copy of its
width (t_one with 4-byte loads, else t_floor, written t_w); a kernel whose time, less what the static launch
facts below explain, is over UNEXPLAINED_X x that copy's time (t_one for accesses under 16 bytes) gets the
"unexplained" hint, worth up to what is left, saying the counters would say what it is.

Static launch facts (grader.feedback.launch_facts, issue 29), each from its own model of the unit it relieves,
never under t_w:
  idle (threads with no element): the block scheduler: t - empty blocks x EMPTY_BLOCK_NS / SMs;
  grid, blocks, shared, registers (too few warps in flight): Little's law at a fixed latency, bandwidth in proportion
        to the warps
        resident: t x warps now / warps after the fix (an upper bound of the gain: latency grows with load);
  fence (MEMBAR per element): each thread's iterations wait FENCE_NS each:
        t - elements / (vector x resident threads) x fences x FENCE_NS;
  stores (an element stored k times): the L2, which carries L2_COPY_BYTES per element at L2_COPY_SHARE of its peak
        for the copy floor: the saving is what the L2-bound time t_floor x (bytes / L2_COPY_BYTES) x L2_COPY_SHARE
        / ETA exceeds the rest of the kernel's time, with 4 (k - 1) bytes more per element;
  atomic: at most everything above t_w (no model of the L2's atomic units here: a bound);
  double (double-precision instructions): at most what they take on the FP64 pipe, t - fp64_ms (a bound).
Two estimates within TIE of the copy floor of each other are two causes: the first says so (Hint.tie).
Estimates are the grading's fraction of the floor before and after (t_floor / t). Checked against the H200's
measurements of tests/data/hints (issue 23): the normcdff kernel with 16-byte loads ran at 0.589 of the floor, the
estimate of its width hint says 0.594.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.core import exercise
from grader.core.exercise import OUTPUT, CounterTexts, Exercise
from grader.feedback.counters import (
    MODEL,
    MODEL_SLACK,
    PAGE_ANSWER,
    Counters,
    InstructionCounters,
    KernelCounters,
    said,
)
from grader.feedback.hint import CODE_FACT, LITTLE, Hint, HintKind, Site

ETA = 0.9
"""The share of its peak a unit sustains when it alone sets a kernel's time (H200, issue 23: the 16-byte copy's
L2 at 92.5% and DRAM at 88.4%, the double kernel's issue slots at 91.5%)."""
SCATTER_X = 1.5
"""Global load or store sectors per element over this many times a coalesced access's make a scattered one (a
ratio; chosen between the H200 recordings' coalesced kernels, 1.00, and scattered ones, 4.1 to 8.0:
tests/data/ncu/h200_col_major.csv, h200_transposed.csv, h200_chunk16.csv)."""
WORK_X = 1.2
"""Warp instructions per element over this many times the reference's are extra work (a ratio; chosen between the
H200 recordings' kernels without extra work per element, up to 1.08 (h200_fence_twice.csv, h200_grid16.csv), and the
least of those with it, 1.27 (h200_chunk16.csv), in tests/data/ncu/)."""
OCCUPANCY_X = 0.6
"""Resident warps under this share of the reference's are too few (tests/data/silver/stride_float4.cu: 0.46)."""
OCCUPANCY_SLOWER = 1.1
"""The too-few-warps hint also needs the kernel over this many times its reference's time (t_ref): within it, more
warps have nothing to win (a ratio; chosen: the H200 recordings' kernels with too few warps ran 1.27
(stride_float4) to 16.3 (grid16) times their reference, tests/data/ncu/)."""
PIPE_BUSY_PCT = 5.0
"""A pipe (FP64, XU) at or over this share of its peak, percent (ncu's
sm__inst_executed_pipe_*.avg.pct_of_peak_sustained_active), and over PIPE_OVER_REF x the reference's share is named
by the extra-work hint; the FP64 pipe that busy also gets the work hint beside a division hint (rank). Chosen: on the
H200 every float kernel's FP64 pipe reads 0.0% and the two double kernels' 52.1% and 53.4%
(tests/data/ncu/h200_double.csv, h200_double_math.csv); the references' XU pipe 7.2% (the page's answer) and 12.7%
(the model answer)."""
PIPE_OVER_REF = 2.0
"""See PIPE_BUSY_PCT: the kernel's pipe share over this many times its reference's (a ratio; chosen: on the H200 the
XU pipe of the normcdff, integer-division and double kernels ran 2.4 to 4.9 times their reference's, that of the
others 0.3 to 1.4 times, tests/data/ncu/h200_*.csv)."""
UNEXPLAINED_X = 1.25
"""Without counters, a kernel slower than this many times the copy of its width gets the "unexplained" hint (a ratio
of times; chosen)."""
SCATTERED_NAMED = 3
"""The scattered hint from the source-level counters names at most this many instructions, then "and N more"
(chosen: a warning the student reads, not a listing)."""
RANK_MS_DIGITS = 4
"""Estimates of the time saved are compared rounded to this many decimals of a ms (0.1 us), so two estimates equal
but for float rounding are ordered by kind (rank; chosen: far below the timing's resolution)."""
GENERATED = (HintKind.UNEXPLAINED, HintKind.BYTES, HintKind.SCATTERED, HintKind.WORK, HintKind.OCCUPANCY,
             HintKind.SLOW)
"""Kinds of hints made here (rank makes them again each time; the others come from grader.feedback.hints)."""
LD_NEED, ST_NEED = 2 * exercise.BYTES_PER_FLOAT / 32, exercise.BYTES_PER_FLOAT / 32
"""Sectors per element a coalesced kernel's loads (x and a bias entry) and stores (out) touch."""
STATIC = (HintKind.IDLE, HintKind.GRID, HintKind.BLOCKS, HintKind.SHARED, HintKind.FENCE, HintKind.ATOMIC,
          HintKind.STORES, HintKind.DOUBLE)
"""Kinds of the static launch facts (grader.feedback.launch_facts)."""
EMPTY_BLOCK_NS = 23.3
"""Time one SM spends on a block whose threads all exit at once, ns. From issue 29's H200 figures: the float4 body in
the page's launch (tests/data/causes/float4_page_launch.cu) at 0.76 of the copy floor, the same body with
elems_per_thread = 4 (submissions/gold_float4.cu) at 0.963: 0.130 ms for 737,280 empty blocks over 132 SMs. One
pair of kernels: benchmarks/hint_check.py checks the prediction it makes for the float2 body."""
FENCE_NS = 457.0
"""Time one thread's iteration waits at a __threadfence() (MEMBAR.SC.GPU, then the L1 emptied), ns. From issue 29's
H200 figures: the page's answer with each element stored twice, a fence between (tests/data/causes/fence_twice.cu),
at 0.37 of the copy floor, the page's answer at 0.557: 0.426 ms over 931 iterations per resident thread (61440 x 4096
elements, 132 SMs x 2048 threads). One kernel: benchmarks/hint_check.py checks it."""
L2_COPY_BYTES, L2_COPY_SHARE = 12.25, 0.92
"""The 16-byte copy's L2 bytes per element (lts__t_bytes: reads, writes and the DRAM fills) and the L2's
throughput, share of its peak, on the H200 (tests/data/ncu/h200_*.csv: 12.25 to 12.29 bytes, 91.9% to 92.1%)."""
TIE = 0.02
"""Two estimated gains closer than this (fraction of the copy floor) are not told apart by these models."""


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
    ref_ipe: float | None = None
    """Warp instructions per element a reference with the kernel's own access width executes (ref_instructions)."""

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
    yours = counters.yours
    if yours is None or not yours.duration_ns:
        return None
    width = yours.bytes_per_thread_access
    ref = reference_for(counters, yours)
    if ref is None or not ref.duration_ns:
        return None
    return Measured(yours, ref, times.kernel * ref.duration_ns / yours.duration_ns, times,
                    ref_instructions(counters, width, ref))


MODEL_FLOATS = 4
"""Floats per access of a 16-byte access (bias_gelu's model answer, the 16-byte copy); the page's answer moves one.
ref_instructions reads the model answer's own width from its counters (rope's moves 2, a float2)."""


def ref_instructions(counters: Counters, width: float | None, ref: KernelCounters) -> float | None:
    """Warp instructions per element of a reference that moves the kernel's `width` bytes per access: the page's
    answer's (1 float) or the model answer's (4) at those widths, and between them the two fitted to a + b / f, f the
    floats per access (a thread's fixed instructions, its index and exit, spread over its f elements): a float2 body
    is judged against what a float2 version of the page's kernel would execute, not against the float4 one's. The
    model answer's floats per access are its own measured width (MODEL_FLOATS where it was not measured)."""
    page, model = counters.get(PAGE_ANSWER), counters.get(MODEL)
    floats = width / exercise.BYTES_PER_FLOAT if width else None
    model_width = model.bytes_per_thread_access if model is not None else None
    most = round(model_width / exercise.BYTES_PER_FLOAT) if model_width else MODEL_FLOATS
    if page is None or model is None or floats is None or not 1 < floats < most:
        return ref.instructions_per_elem
    ipe_page, ipe_model = page.instructions_per_elem, model.instructions_per_elem
    if ipe_page is None or ipe_model is None:
        return ref.instructions_per_elem
    b = (ipe_page - ipe_model) / (1 - 1 / most)
    return ipe_model + b * (1 / floats - 1 / most)


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


def work_after(m: Measured, idle: float = 0.0) -> float:
    """The time after the kernel's extra instructions go (module docstring), never more than they cost; `idle`:
    warp instructions of warps with no element (grader.feedback.launch_facts' idle fact), not counted as work."""
    t, k = m.times.kernel, m.yours
    after = m.after(m.t_ref, m.s_mem * t / ETA)
    ipe, ref = _work_per_elem(k, idle), m.ref_ipe
    if ipe and ref is not None:
        after = max(after, t - max(0.0, (ipe - ref) / ipe) * m.s_issue * t / ETA)
    return after


COPIES = "from the grading's one-float and 16-byte copies"
ISSUE = "from its instructions in the machine code, at the SMs' issue rate"
COUNTERS = "from the counters, beside the page's answer and the model answer"


STATIC_BASIS = "from the launch, the machine code and the grading's copies"


def static_after(h: Hint, times: Times, width_copy: float) -> tuple[float | None, bool]:
    """(the time after fixing the static fact `h`, whether that is a bound) from its own model (module docstring)
    and `h.facts`; (None, False) where a number the model needs is missing (a kernel not timed at a known shape)."""
    f, t = h.facts, times.kernel
    if h.kind == HintKind.IDLE:
        if not f.get("sms") or "empty_blocks" not in f:
            return None, False
        return max(width_copy, t - f["empty_blocks"] * EMPTY_BLOCK_NS * 1e-6 / f["sms"]), False
    if h.kind in (HintKind.GRID, HintKind.BLOCKS, HintKind.SHARED, HintKind.REGISTERS):
        if not f.get("warps_fixed"):
            return None, False
        return max(width_copy, t * f["warps_now"] / f["warps_fixed"]), True
    if h.kind == HintKind.FENCE:
        if not f.get("resident_threads") or not f.get("elements"):
            return None, False
        waits = f["elements"] / (f.get("vector", 1.0) * f["resident_threads"]) * f.get("fences", 1.0)
        return max(width_copy, t - waits * FENCE_NS * 1e-6), False
    if h.kind == HintKind.STORES:
        def l2(extra: float) -> float:
            return times.floor * (L2_COPY_BYTES + extra) / L2_COPY_BYTES * L2_COPY_SHARE / ETA
        now = l2(exercise.BYTES_PER_FLOAT * (f.get("stores", 2.0) - 1))
        return max(width_copy, t - max(0.0, now - max(l2(0.0), t if now < t else 0.0))), False
    if h.kind == HintKind.ATOMIC:
        return width_copy, True
    if h.kind == HintKind.DOUBLE:
        if "fp64_ms" not in f:
            return None, False
        return max(width_copy, t - f["fp64_ms"]), True
    return None, False


def _costed(h: Hint, times: Times, m: Measured | None, width_copy: float) -> Hint:
    """`h` (a hint from the machine code) with its estimate (module docstring)."""
    if h.kind == HintKind.DOUBLE and m:  # measured: the work model, as for the extra work it is
        return _estimate(h, times, work_after(m), COUNTERS)
    if h.facts.get(CODE_FACT):  # the control flow's facts (grader.feedback.flow_facts), none measured
        after = width_copy
        if h.kind == HintKind.PASSES and h.facts.get("model_bytes"):
            f = h.facts
            after = max(width_copy, times.kernel * f["model_bytes"] / (f["model_bytes"] + f.get("extra_bytes", 0.0)))
        return _estimate(h, times, after, STATIC_BASIS, bound=True)
    if h.kind in STATIC or h.kind == HintKind.REGISTERS:
        after, bound = static_after(h, times, width_copy)
        return _estimate(h, times, after, STATIC_BASIS, bound=bound)
    if h.kind == HintKind.WIDTH:
        return _estimate(h, times, width_after(times, m), COUNTERS if m else COPIES)
    if h.kind == HintKind.DIVISION:
        if m:
            return _estimate(h, times, work_after(m), COUNTERS)
        if h.facts.get("issue_ms") is not None:  # the issue slots its instructions take (launch_facts.division_facts)
            return _estimate(h, times, max(width_copy, times.kernel - h.facts["issue_ms"]), ISSUE, bound=True)
        return _estimate(h, times, width_copy, COPIES, bound=True)
    return _estimate(h, times, None, "")


def _ref_name(m: Measured) -> str:
    return said(m.ref.label)


def scattered_instructions(instructions: list[InstructionCounters], cached: tuple[str, ...] = ()
                           ) -> list[InstructionCounters]:
    """The loads and stores (of a buffer not known too) among `instructions` (Nsight Compute's source-level
    counters, grader.feedback.source_counters) whose L2 sectors are over SCATTER_X x the ideal for their own width.
    Loads of the `cached` inputs (Exercise.cached: bias_gelu's bias, one row every row reads, rope's tables) are
    left out: the L1 serves them."""
    return [i for i in instructions if i.op in ("ld", "st") and i.buffer not in cached and i.sectors and i.ideal
            and i.sectors > SCATTER_X * i.ideal]


def _named(i: InstructionCounters) -> str:
    """'line 14, the store to out (STG.E, 4 bytes): each warp's stores touch 32.0 sectors where 4 would do'."""
    what = f"the {'store to' if i.op == 'st' else 'load from'} {i.buffer or 'memory'}"
    where = f"line {i.line}, {what}" if i.line else what.capitalize()
    op = i.sass.split(" ", 1)[0] if i.sass else ""
    return (f"{where} ({op + ', ' if op else ''}{i.nbytes} bytes per thread): each warp's "
            f"{'stores' if i.op == 'st' else 'loads'} touch {i.per_request(i.sectors) or 0:.1f} sectors where "
            f"{i.per_request(i.ideal) or 0:.0f} would do")


def access_suspect(c: Counters | None) -> bool:
    """Whether `c`'s aggregate sectors per element (loads or stores) pass SCATTER_X x a coalesced kernel's: then
    the source-level pass is worth its time (grader.pipeline.grade.add_counters), to name the instruction and its
    line."""
    k = c.yours if c is not None and not c.unavailable else None
    if k is None or l1_served(k, reference_for(c, k)):
        return False
    ld, st = k.per_elem(k.ld_sectors), k.per_elem(k.st_sectors)
    return (ld is not None and ld > SCATTER_X * LD_NEED) or (st is not None and st > SCATTER_X * ST_NEED)


def reference_for(c: Counters, k: KernelCounters) -> KernelCounters | None:
    """The reference launch of `c` whose accesses are as wide as `k`'s: the model answer for accesses wider than
    4 bytes, else the page's answer (None where it was not profiled)."""
    width = k.bytes_per_thread_access
    return c.get(MODEL if width is not None and width > exercise.BYTES_PER_FLOAT else PAGE_ANSWER)


def l1_served(k: KernelCounters, ref: KernelCounters | None) -> bool:
    """Whether `k`'s extra sectors never reach the L2: its L2 bytes per element are within SCATTER_X x `ref`'s.
    Sectors the L1 serves cost no DRAM or L2 traffic: a cached bias row read 16 bytes apart across a warp (issue
    29's 16-block grid), or RoPE's interleaved pair read as two 4-byte loads two floats apart, each touching 8
    sectors of which the other uses half (the page's kernel and the gold example on the H200: 8.0 sectors per
    request, L2 bytes 1.0 x the page's answer's)."""
    l2, l2_ref = k.per_elem(k.l2_bytes), ref.per_elem(ref.l2_bytes) if ref is not None else None
    return l2 is not None and bool(l2_ref) and l2 <= SCATTER_X * l2_ref


def scattered_hint(m: Measured, cols: int | None, instructions: list[InstructionCounters] | None = None,
                   ex: Exercise | None = None) -> Hint | None:
    """The scattered-access hint when loads or stores touch over SCATTER_X x the sectors per element a
    coalesced kernel's do (LD_NEED, ST_NEED) and the L2 carries over SCATTER_X x the reference's bytes per element
    (sectors the L1 serves, such as a bias row read 16 bytes apart across a warp, cost no DRAM or L2 traffic:
    issue 29's 16-block grid), with each side's sectors per request against a coalesced access as wide
    (grader.feedback.counters.ideal_sectors); None otherwise. With the source-level counters (`instructions`) each
    instruction is judged against its own width instead, and the hint names the line and the buffer of each
    scattered one (scattered_instructions); none scattered, no hint."""
    from grader.feedback.counters import ideal_sectors

    if l1_served(m.yours, m.ref):
        return None  # the extra sectors are served by the L1: no extra traffic reaches the L2
    if instructions:
        bad = scattered_instructions(instructions, ex.cached if ex else ())
        if not bad:
            return None
        more = len(bad) - SCATTERED_NAMED
        text = ("scattered accesses (from the counters, per instruction): "
                + "; ".join(_named(i) for i in bad[:SCATTERED_NAMED]) + (f"; and {more} more" if more > 0 else "")
                + ". Consecutive threads of a warp access addresses 32 bytes or more apart, so each 32-byte sector "
                "brings one useful float. " + _texts(ex).scatter_fix)
        lines = sorted({i.line for i in bad if i.line})
        return _estimate(Hint(text=text, kind=HintKind.SCATTERED, lines=lines), m.times,
                         m.after(m.t_ref, m.s_issue * m.times.kernel / ETA), COUNTERS)
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
            f"32 bytes or more apart, so each 32-byte sector brings one useful float{apart}. "
            + _texts(ex).scatter_fix)
    return _estimate(Hint(text=text, kind=HintKind.SCATTERED), m.times,
                     m.after(m.t_ref, m.s_issue * m.times.kernel / ETA), COUNTERS)


def _work_per_elem(k: KernelCounters, idle: float) -> float | None:
    """Warp instructions per element of `k`, less `idle` (warp instructions of warps with no element)."""
    ipe = k.instructions_per_elem
    return None if ipe is None else ipe - (idle / k.elements if k.elements else 0.0)


def _texts(ex: Exercise | None) -> CounterTexts:
    """`ex`'s words for the counters' hints (Exercise.counter_texts; without an exercise, words that name none)."""
    return ex.counter_texts if ex is not None else CounterTexts()


def work_hint(m: Measured, idle: float = 0.0, ex: Exercise | None = None) -> Hint | None:
    """The extra-work hint when the kernel executes over WORK_X x its reference's warp instructions per element
    (less `idle`, the instructions of warps with no element: the idle fact's), naming the FP64 pipe (double
    math) or the XU pipe (special functions, conversions) where the kernel's runs well above the reference's;
    None otherwise."""
    k, ref = m.yours, m.ref
    ipe, ipe_ref = _work_per_elem(k, idle), m.ref_ipe
    if ipe is None or ipe_ref is None or ipe <= WORK_X * ipe_ref:
        return None
    name = _ref_name(m)
    said = (f"{name}, with accesses as wide, executes {ipe_ref:.2f}" if ipe_ref == ref.instructions_per_elem else
            f"the page's kernel with accesses as wide would execute about {ipe_ref:.2f} (between the page's answer "
            "and the model answer)")
    text = (f"extra work per element (from the counters): the kernel's warps executed {ipe:.2f} instructions per "
            f"element where {said}, and its issue slots were busy {k.issue_pct or 0:.0f}% of the launch ({name}: "
            f"{ref.issue_pct or 0:.0f}%)")
    fp64 = (k.pipes.get("fp64", 0.0), ref.pipes.get("fp64", 0.0))
    xu = (k.pipes.get("xu", 0.0), ref.pipes.get("xu", 0.0))
    if fp64[0] >= PIPE_BUSY_PCT and fp64[0] > PIPE_OVER_REF * fp64[1]:
        text += f". The FP64 pipe ran at {fp64[0]:.0f}% of its peak ({name}: {fp64[1]:.0f}%): {_texts(ex).fp64}"
    elif xu[0] >= PIPE_BUSY_PCT and xu[0] > PIPE_OVER_REF * xu[1]:
        text += (f". The XU pipe (special functions and conversions) ran at {xu[0]:.0f}% of its peak ({name}: "
                 f"{xu[1]:.0f}%): {_texts(ex).xu}")
    else:
        text += ". Take work out of the per-element path: index arithmetic, divisions, loops, branches."
    return _estimate(Hint(text=text, kind=HintKind.WORK), m.times, work_after(m, idle), COUNTERS)


def occupancy_hint(m: Measured) -> Hint | None:
    """The too-few-warps hint when the SMs held under OCCUPANCY_X x the reference's resident warps and the kernel
    is over OCCUPANCY_SLOWER x the reference's time (10% slower); None otherwise."""
    k, ref = m.yours, m.ref
    if k.warps_pct is None or not ref.warps_pct or k.warps_pct >= OCCUPANCY_X * ref.warps_pct \
            or m.times.kernel <= OCCUPANCY_SLOWER * m.t_ref:
        return None
    text = (f"too few warps in flight (from the counters): the SMs held {k.warps_pct:.0f}% of the warps they can "
            f"run, where {_ref_name(m)} keeps {ref.warps_pct:.0f}% resident. A kernel that streams memory needs many "
            "loads in flight to cover the memory's latency (Little's law: bytes in flight = bandwidth x latency): "
            "launch enough blocks to fill every SM several times, and keep registers per thread few.")
    return _estimate(Hint(text=text, kind=HintKind.OCCUPANCY), m.times,
                     m.after(m.t_ref, m.s_issue * m.times.kernel / ETA), COUNTERS)


def _scattered_sectors(k: KernelCounters, ref: KernelCounters | None) -> bool:
    """Whether `k`'s loads or stores touch over SCATTER_X x a coalesced kernel's sectors per element, and the extra
    sectors reach the L2 (l1_served): then partial sectors, not a second pass, may explain DRAM bytes over the
    model, and the scattered hint is the one that says so."""
    if l1_served(k, ref):
        return False
    ld, st = k.per_elem(k.ld_sectors), k.per_elem(k.st_sectors)
    return (ld is not None and ld > SCATTER_X * LD_NEED) or (st is not None and st > SCATTER_X * ST_NEED)


def _lines_of(sites: list[Site], op: str, buffers: tuple[str, ...]) -> list[int]:
    return sorted({s.line for s in sites if s.op == op and s.buffer in buffers and s.line})


def _at(lines: list[int]) -> str:
    return (" at line " if len(lines) == 1 else " at lines ") + ", ".join(map(str, lines)) if lines else ""


def bytes_hint(m: Measured, sites: list[Site], ex: Exercise | None = None) -> Hint | None:
    """The measured cause first (issue 39): DRAM bytes over the byte model by more than MODEL_SLACK on a side (reads
    or writes) of a kernel whose accesses are coalesced (_scattered_sectors: else the scattered hint explains them),
    named with the buffer and the lines of its loads or stores (`sites`, the machine code's: a load of out is out read
    back; writes over the model are out written again), worth the time of those bytes at the kernel's own bandwidth:
    t x model / measured (a kernel whose time the bytes set; never under the copy floor). None otherwise."""
    k = m.yours
    read, write = k.per_elem(k.dram_read), k.per_elem(k.dram_write)
    if read is None or write is None or _scattered_sectors(k, m.ref):
        return None
    model = (ex.floats_per_element if ex is not None else exercise.COPY_FLOATS_PER_ELEMENT) * exercise.BYTES_PER_FLOAT
    side, total = model / 2, read + write
    over_read, over_write = read > side * (1 + MODEL_SLACK), write > side * (1 + MODEL_SLACK)
    if not (over_read or over_write):
        return None
    out, inputs = OUTPUT, tuple(p.name for p in ex.inputs if not p.cached) if ex is not None else ()
    cached = tuple(ex.cached) if ex is not None else ()
    said, lines = [], []
    if over_write:
        stores = _lines_of(sites, "st", (out,))
        said.append(f"{out} is written {write / side:.1f} times over (its stores{_at(stores)})")
        lines += stores
    if over_read:
        back, again = _lines_of(sites, "ld", (out,)), _lines_of(sites, "ld", inputs)
        if back:
            said.append(f"{out} is read back after it is written (its loads{_at(back)})")
            lines += back
        else:
            names = " or ".join(inputs) or "an input"
            said.append(f"{names} is read {read / side:.1f} times over (its loads{_at(again)})"
                        + (f", or {' and '.join(cached)} fetched from DRAM again and again" if cached else ""))
            lines += again
    text = (f"{'; '.join(said)} (from the counters): DRAM {read:.2f} bytes read and {write:.2f} written per element, "
            f"{total:.2f} in all, where the byte model moves {model:g}. Every buffer of the benchmark is many times "
            "the L2, so a second pass over one comes from DRAM again: compute each element in one pass, from one "
            "load of each input, and store it once.")
    after = max(m.after(m.times.kernel * model / total), m.s_issue * m.times.kernel / ETA)
    return _estimate(Hint(text=text, kind=HintKind.BYTES, lines=sorted(set(lines)),
                          facts={"read": read, "write": write, "model": model}), m.times, after, COUNTERS)


def unexplained_hint(times: Times, width_copy: float, scalar: bool, reason: str, explained: float = 0.0
                     ) -> Hint | None:
    """Without counters: the hint for a kernel whose time, less what the static launch facts explain (`explained`,
    ms saved by fixing them all), is over UNEXPLAINED_X x the time of the copy with its access width
    (`width_copy`, ms: the one-float copy's when `scalar`), saying what the copies cannot tell and why the counters
    were not measured (`reason`); worth at most what is left above that copy. None for a kernel nearer it."""
    left = times.kernel - explained
    if left <= UNEXPLAINED_X * width_copy:
        return None
    which = "the one-float-per-thread copy" if scalar else "the copy floor"
    text = (f"something beyond the load width costs time: the kernel takes {times.kernel / width_copy:.2f} x the "
            f"time of {which}, the fastest a kernel with its access width runs here"
            + (f" ({left / width_copy:.2f} x once the causes above are fixed)" if explained > 0 else "")
            + ". The usual causes are scattered accesses (consecutive threads not on consecutive addresses: map "
            "threadIdx.x to the column) and extra work per element (double math, costly math functions, divisions); "
            "Nsight Compute's counters tell them apart (grade --counters)" + (f"; {reason}" if reason else "") + ".")
    return _estimate(Hint(text=text, kind=HintKind.UNEXPLAINED), times, times.kernel - (left - width_copy), COPIES,
                     bound=True)


BEATS_ONE_FLOAT = 1.1
"""A kernel whose median time is under the one-float-per-thread copy's by this factor (10%) does not run "at about
the one-float copy", which is the 4-byte-load hint's premise: the hint is dropped (a kernel with several scalar
accesses in flight per thread, the RoPE example gold_wide.cu at 1.53 x the one-float copy on the H200, already hides
what wider accesses would save). Chosen: well outside the timing's noise (0.5% standard error per median)."""


def gold_worthy(hints: list[Hint], times: Times, noise: float = 0.0) -> list[Hint]:
    """Of the ranked `hints` of a kernel at or above gold (grader.core.exercise.GOLD), those whose worth is measured
    above the noise: an estimate that is not only a bound (an "at most" can be nothing), with a gain over `noise`
    (half the fraction's band: grader.timing.measure) and over LITTLE. A hint without an estimate (local memory,
    registers) has no known worth: a gold kernel is told nothing it cannot be shown to gain (issue 39); below gold
    every hint stays."""
    if times.fraction < exercise.GOLD:
        return hints
    floor = max(noise, LITTLE)
    return [h for h in hints if h.saved_ms is not None and not h.bound
            and h.fraction_after is not None and h.fraction_now is not None
            and h.fraction_after - h.fraction_now > floor]


DIVISIONS_NEGLIGIBLE = 0.05
"""Integer divisions per element under which the counters show the division hint's premise false: the timed launch
runs it once per thread, block or chunk of 20 elements or more, not on every element (issue 39: a capped grid-stride
loop that divides once per thread runs 0.001 per element). A ratio; chosen: 20 instructions of an inline division
over 20 elements are one per element, under a twentieth of what erff costs."""


def measured_divisions(h: Hint, counters: Counters | None) -> Hint | None:
    """The division hint `h` as the counters count it, else as the machine code's loops do ("per_element" in its
    facts: grader.feedback.launch_facts.division_facts): None when the timed launch runs fewer than
    DIVISIONS_NEGLIGIBLE divisions per element (its premise is false for the launches graded: once per thread,
    block or chunk), else `h` saying how many per element; `h` itself where neither counted them."""
    k = counters.yours if counters is not None and not counters.unavailable else None
    if k is not None and counters.division_threads is not None and k.elements:
        per, said = counters.division_threads / k.elements, "The counters count"
    elif "per_element" in h.facts:
        per, said = h.facts["per_element"], "Its loops in the machine code make that"
    else:
        return h
    if per < DIVISIONS_NEGLIGIBLE:
        return None
    return h.model_copy(update={"facts": h.facts | {"per_element": per}, "text": (
        f"{h.text} {said} {per:.2f} integer divisions per element in the timed launch.")})


def rank(hints: list[Hint], times: Times | None, counters: Counters | None = None, cols: int | None = None,
         no_counters: str = "", ex: Exercise | None = None, sites: list[Site] | None = None,
         noise: float = 0.0) -> list[Hint]:
    """`hints` (from the machine code and the launch; earlier ranked ones too: the hints made here are made
    again) with their estimates, plus the counters' hints (scattered accesses, extra work, few warps) where
    `counters` measured the kernel beside a reference, or the "unexplained" hint without them (`no_counters`: why
    there are none); sorted by the time saved, largest first, then those without an estimate in their order; the
    first marked with the second's kind where the two estimates are within TIE (`tie`). `times`: the grading's
    (None for a kernel that was not timed: the hints come back unranked). `cols`: the benchmark shape's columns,
    for the scattered hint's stride. `ex`: the exercise, for its words (Exercise.counter_texts) and its cached
    inputs. `sites`: the kernel's global loads and stores (grader.feedback.launch_facts.sites), for the bytes hint's
    buffers and lines. A kernel at or above gold keeps only the hints worth more than `noise` (gold_worthy)."""
    code = [h.model_copy(update={"tie": HintKind.NONE}) if h.tie else h for h in hints
            if h.kind not in GENERATED or h.facts.get(CODE_FACT)]
    if times is None:
        return code
    if times.kernel * BEATS_ONE_FLOAT < times.one_float:  # the width hint's premise is measured false
        code = [h for h in code if h.kind != HintKind.WIDTH]
    code = [d for h in code if (d := measured_divisions(h, counters) if h.kind == HintKind.DIVISION else h)]
    m = measured(counters, times)
    if m is not None:  # the counters measured what the control flow's facts infer: theirs decide
        code = [h for h in code if not h.facts.get(CODE_FACT)]
    scalar = any(h.kind == HintKind.WIDTH for h in code)
    width_copy = times.one_float if scalar else times.floor
    out = [_costed(h, times, m, width_copy) for h in code]
    static = [h for h in out if (h.kind in STATIC or h.facts.get(CODE_FACT)) and h.saved_ms is not None]
    if m is not None:
        made = [bytes_hint(m, sites or [], ex), scattered_hint(m, cols, counters.instructions, ex)]
        if not any(h.kind in (HintKind.GRID, HintKind.BLOCKS, HintKind.SHARED) for h in static):  # the same cause
            made.append(occupancy_hint(m))
        fp64 = m.yours.pipes.get("fp64", 0) >= PIPE_BUSY_PCT
        double = fp64 and any(h.kind == HintKind.DOUBLE for h in code)  # the double fact names that work's lines
        if not double and (not any(h.kind == HintKind.DIVISION for h in code) or fp64):
            idle = next((h.facts for h in code if h.kind == HintKind.IDLE), {})
            made.append(work_hint(m, idle.get("idle_instructions", 0.0), ex))
    else:  # narrower than 16 bytes (an idle fact's float2 body): no copy of its width is measured, the one-float's
        narrow = scalar or any(0 < h.facts.get("vector", MODEL_FLOATS) < MODEL_FLOATS for h in code)
        explained = sum(h.saved_ms for h in static)
        made = [unexplained_hint(times, times.one_float if narrow else width_copy, narrow, no_counters, explained)]
    out += [h for h in made if h is not None]
    order = {HintKind.BYTES: 0, HintKind.UNEXPLAINED: 1, HintKind.SCATTERED: 2, HintKind.WORK: 3,
             HintKind.OCCUPANCY: 4}
    estimated = sorted((h for h in out if h.saved_ms is not None),
                       key=lambda h: (-round(h.saved_ms, RANK_MS_DIGITS), order.get(h.kind, len(order))))
    if len(estimated) > 1 and estimated[1].fraction_after - estimated[1].fraction_now >= LITTLE and \
            (estimated[0].fraction_after - estimated[0].fraction_now) - \
            (estimated[1].fraction_after - estimated[1].fraction_now) < TIE:
        estimated[0] = estimated[0].model_copy(update={"tie": estimated[1].kind})
    return gold_worthy(estimated + [h for h in out if h.saved_ms is None], times, noise)
