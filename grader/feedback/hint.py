"""One hint: its kind (HintKind) and the one model every producer makes (Hint), from the machine code or the PTX
(grader.feedback.hints), the launch (grader.feedback.launch_facts), the counters and the times
(grader.feedback.worth), a wrong output's known mistake and the slow verdict (grader.pipeline.grade).

HintKind is a `str` enum: a kind compares equal to, hashes as, prints as and is written to JSON as its value
("division"), so the report's JSON, the class page's `data-kind` and every table keyed by kind read as before.
"""

from __future__ import annotations

from enum import StrEnum

from grader.core.model import ReportModel


class HintKind(StrEnum):
    """What a hint is about; its value is the hint's `kind` in the report's JSON."""

    NONE = ""
    """No kind: a hint read from a report of schema 2 (its text alone); as Hint.tie, no tie."""
    # from the machine code or the PTX (grader.feedback.hints)
    DIVISION = "division"
    """An integer division by a run-time value (the bias index's i % cols)."""
    WIDTH = "width"
    """Only 4-byte global loads, on a card where the one-float copy is short of the copy floor."""
    TANH = "tanh"
    """The tanh (or sigmoid) GELU, a different function: a correctness matter."""
    LOCAL = "local"
    """Local memory (LDL, STL: spills, an array indexed at run time, printf's arguments); machine code only."""
    REGISTERS = "registers"
    """Registers per thread that leave an SM under half its warps; machine code only."""
    # the static launch facts (grader.feedback.launch_facts)
    IDLE = "idle"
    """Threads with no element: the launch gives each thread fewer elements than its stores move."""
    GRID = "grid"
    """Fewer blocks than the card holds at once (needs the card's SM count)."""
    BLOCKS = "blocks"
    """Blocks so small that the per-SM block limit caps the warps in flight."""
    FENCE = "fence"
    """A memory fence (MEMBAR) in the per-element path."""
    ATOMIC = "atomic"
    """An atomic (ATOMG, RED) in the per-element path."""
    STORES = "stores"
    """An element stored more than once, on one path."""
    PASSES = "passes"
    """A buffer swept twice in one launch: two loops, one after the other, over it, or out loaded back."""
    DOUBLE = "double"
    """Double-precision arithmetic in the per-element path (machine code only)."""
    SHARED = "shared"
    """Shared memory per block that leaves an SM under half its warps (machine code or the driver)."""
    # from the counters (grader.feedback.worth)
    BYTES = "bytes"
    """DRAM bytes over the byte model: a buffer read or written more than once, named with its loads or stores."""
    SCATTERED = "scattered"
    """Loads or stores touching more sectors per element than coalesced ones."""
    WORK = "work"
    """More warp instructions per element than the reference with accesses as wide."""
    OCCUPANCY = "occupancy"
    """Fewer resident warps than the reference."""
    # from the grading's times (grader.feedback.worth, grader.pipeline.grade)
    UNEXPLAINED = "unexplained"
    """Without counters: slower than the copy of its width by more than the static facts explain."""
    SLOW = "slow"
    """A failed, correct kernel with no other hint."""
    # a wrong output (grader.check.mistakes, grader.pipeline.grade)
    MISTAKE = "mistake"
    """The known mistake a wrong output matches."""


class Site(ReportModel):
    """One global memory instruction of the kernel's machine code, as the hints name it
    (grader.feedback.launch_facts.sites): what it does (`op`: ld, st, atom, red), the `buffer` its address comes
    from (the pointer parameter's role: x, bias, out, in, ...; "" where that is not known), the student's source
    `line` (None: not known, or the grader's prelude), the bytes each thread moves with it, and the `loop` it runs
    in (an id of grader.feedback.sass_flow's loops, None outside every loop)."""

    op: str
    buffer: str = ""
    line: int | None = None
    nbytes: int | None = None
    loop: int | None = None


CODE_FACT = "from_code"
"""The key a static fact of the machine code's control flow (grader.feedback.flow_facts) sets in its Hint.facts, where
the counters have a hint of the same kind (scattered, work): with counters measured, theirs decides."""

LITTLE = 0.005
"""An estimated gain under this fraction of the copy floor is "worth little on its own now" (chosen: half the 0.01
step the report prints a gain in: a smaller gain would read "+0.00")."""


class Hint(ReportModel):
    """One hint: its text and kind (HintKind: the machine code's, the static launch facts', the counters', the
    times', a wrong output's known mistake), and what fixing it is estimated to be worth (grader.feedback.worth):
    the time saved (ms), the fraction of the copy floor now and after, whether that is an upper bound (`bound`),
    and what the estimate rests on (`basis`). None: not estimated. `facts`: the numbers of a static fact's model
    (grader.feedback.launch_facts) or of the division's issue time; `lines`: the student's source lines it names;
    `tie`: the kind of the next hint when the two estimates are within grader.feedback.worth.TIE (two causes).

    A Hint is not a str: `hint.text` is its text, `str(hint)` the text with its estimate; `"..." in hint` raises
    TypeError rather than quietly answering False."""

    text: str
    kind: HintKind = HintKind.NONE
    saved_ms: float | None = None
    fraction_now: float | None = None
    fraction_after: float | None = None
    bound: bool = False
    basis: str = ""
    facts: dict[str, float] = {}
    lines: list[int] = []
    tie: HintKind = HintKind.NONE

    def __str__(self) -> str:
        """The hint as the report prints it: its text, then its estimate in words (and, where another cause's
        estimate is as large, that there are two)."""
        if self.saved_ms is None or self.fraction_now is None or self.fraction_after is None:
            return self.text
        now, after = self.fraction_now, self.fraction_after
        two = f"; as much as the next hint's ({self.tie}): two causes, fix both" if self.tie else ""
        if after - now < LITTLE:
            return (f"{self.text} [worth little on its own now: from {now:.3f} of the copy floor to about "
                    f"{after:.3f}; {self.basis}{two}]")
        word = "at most" if self.bound else "about"
        return (f"{self.text} [worth {word} +{after - now:.2f} of the copy floor: from {now:.3f} to {word} "
                f"{after:.3f}; {self.basis}{two}]")

    def __contains__(self, item: object) -> bool:
        """Refused: a hint was a str once (CodeHint), and `"x" in hint` on a model would quietly be False."""
        raise TypeError("a Hint is not a str: test `... in hint.text` (or str(hint), with its estimate)")
