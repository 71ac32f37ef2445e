"""The clocks a submission was timed at, from NVML, and whether they let its verdict stand.

A correct kernel's fraction of the copy floor depends on the SM clock while the copy's does not: the erf work
is compute. On the H200, gold_float4 ran at 0.963 of the floor at its boost clock and at 0.873 under Nsight
Compute's base clocks (docs/h200.md), across the 0.90 line. A card held at lower clocks (a power cap, a thermal
slowdown, application clocks set by an administrator) moves verdicts, so every timing records its clocks.

Samples (ClockSample, read by grader.gpu.device.Gpu.clock_sample): NVML's current SM and memory clocks (MHz) and
its clock event reasons, taken once the warm-up is done ("before"), after every timed round ("during") and
after the last ("after"). `judge` decides, from the samples and the card's limits (ClockLimits):

- withheld, when a slowdown was active in any sample (SLOWDOWNS: a software power cap, a software or hardware
  thermal slowdown, a hardware slowdown or power brake); when the SM or the memory clock moved during timing
  by more than STEADY (2% of the highest); or when the SM clock stayed more than STEADY below what the card
  sustains (its application clock target, else its maximum) with no setting holding it there. The timing is
  then run once more (grader.timing.measure), and the verdict is withheld like a busy GPU's ("busy", exit 5) if the
  clocks are still not right, with the reason;
- graded, with a plain note, when the card's application clocks are set below their default or NVML says a
  setting holds the clocks (SETTINGS): the fraction holds at those clocks, and the report says which;
- graded, saying the clocks are not known, where NVML does not answer (no library, no permission, a MIG slice).

The reasons are nvml.h's bit values (nvmlClocksEventReasons; cuda.bindings.nvml's enum member names differ
between releases, the values do not). This module reads numbers only: it imports no CUDA.
"""

from __future__ import annotations

import statistics
from typing import Literal

from grader.core.model import ReportModel

STEADY = 0.02
"""Clock movement allowed while timing, and shortfall from the sustained clock, as a share of the clock (NVML
reports the SM clock in steps of about 15 MHz: 2% of the H200's 1980 MHz is 40 MHz, under three steps)."""

REASONS = {
    0x1: "idle",
    0x2: "application clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake slowdown",
    0x100: "display clock setting",
}
"""nvml.h's clock event reasons (nvmlClocksEventReasonGpuIdle, ...ApplicationsClocksSetting, ...SwPowerCap, ...)."""
SLOWDOWNS = frozenset({"software power cap", "hardware slowdown", "software thermal slowdown",
                       "hardware thermal slowdown", "hardware power brake slowdown"})
"""Reasons that mean the card slowed itself while timing: the verdict is withheld."""
SETTINGS = frozenset({"application clocks setting", "display clock setting"})
"""Reasons that mean a setting holds the clocks: graded at those clocks, and said so."""


def reason_names(bits: int) -> list[str]:
    """The names (REASONS) of the bits set in an NVML clock event reasons mask; unknown bits as hex."""
    names = [name for bit, name in REASONS.items() if bits & bit]
    rest = bits & ~sum(REASONS)
    return names + ([f"reason 0x{rest:x}"] if rest else [])


class ClockSample(ReportModel):
    """One NVML reading: when it was taken (before, during or after the timed rounds), the SM and memory
    clocks in MHz, and the clock event reasons active then (REASONS' names)."""

    when: Literal["before", "during", "after"]
    sm_mhz: int
    mem_mhz: int
    reasons: list[str] = []


class ClockLimits(ReportModel):
    """What the card's clocks may be, in MHz (None where NVML does not say): the maxima, and the application
    clocks, the ones the card targets under load, as set (`*_app_mhz`) and by default (`*_app_default_mhz`)."""

    sm_max_mhz: int | None = None
    mem_max_mhz: int | None = None
    sm_app_mhz: int | None = None
    sm_app_default_mhz: int | None = None
    mem_app_mhz: int | None = None
    mem_app_default_mhz: int | None = None

    @property
    def sustained_sm_mhz(self) -> int | None:
        """The SM clock the card holds under load when nothing slows it: the application clock target, else
        the maximum."""
        return self.sm_app_mhz or self.sm_max_mhz

    @property
    def lowered(self) -> bool:
        """Whether the application clocks are set below their default (an administrator's setting)."""
        return any(set_ is not None and default is not None and set_ < default
                   for set_, default in ((self.sm_app_mhz, self.sm_app_default_mhz),
                                         (self.mem_app_mhz, self.mem_app_default_mhz)))


class Clocks(ReportModel):
    """The clocks of one timing: `known` (False: NVML did not answer, nothing else is set); the SM and memory
    clocks while timing (MHz: the median of the "during" samples, and their lowest and highest), the samples
    taken, every reason seen (idle left out), the samples before and after, the card's limits; `problem`, why
    the verdict is withheld ("" when it stands), and `note`, what the student should know when it stands at
    clocks a setting holds."""

    known: bool = False
    sm_mhz: int | None = None
    sm_low_mhz: int | None = None
    sm_high_mhz: int | None = None
    mem_mhz: int | None = None
    mem_low_mhz: int | None = None
    mem_high_mhz: int | None = None
    samples: int = 0
    reasons: list[str] = []
    before: ClockSample | None = None
    after: ClockSample | None = None
    limits: ClockLimits | None = None
    problem: str = ""
    note: str = ""

    def summary(self) -> str:
        """One line for the report and the gradebook: "SM 1980 MHz, memory 3201 MHz (steady over 34 samples)"."""
        if not self.known:
            return "not known (NVML did not answer)"
        moved = self.sm_low_mhz != self.sm_high_mhz or self.mem_low_mhz != self.mem_high_mhz
        spread = (f"SM {self.sm_low_mhz}-{self.sm_high_mhz}, memory {self.mem_low_mhz}-{self.mem_high_mhz} MHz"
                  if moved else "steady")
        return f"SM {self.sm_mhz} MHz, memory {self.mem_mhz} MHz ({spread} over {self.samples} samples)"


def judge(limits: ClockLimits | None, samples: list[ClockSample]) -> Clocks:
    """The Clocks of a timing from its samples and the card's limits (module docstring): clocks, problem
    and note. No samples (NVML did not answer): known False, no problem."""
    during = [s for s in samples if s.when == "during"] or [s for s in samples if s.when != "before"]
    if not samples or not during:
        return Clocks(limits=limits)
    sm = [s.sm_mhz for s in during]
    mem = [s.mem_mhz for s in during]
    seen = sorted({r for s in samples for r in s.reasons if r != "idle"})
    clocks = Clocks(known=True, sm_mhz=round(statistics.median(sm)), sm_low_mhz=min(sm), sm_high_mhz=max(sm),
                    mem_mhz=round(statistics.median(mem)), mem_low_mhz=min(mem), mem_high_mhz=max(mem),
                    samples=len(samples), reasons=seen, limits=limits,
                    before=next((s for s in samples if s.when == "before"), None),
                    after=next((s for s in reversed(samples) if s.when == "after"), None))
    problems = []
    slowed = [r for r in seen if r in SLOWDOWNS]
    if slowed:
        problems.append(f"the GPU slowed its clocks while timing ({', '.join(slowed)})")
    for name, low, high in (("SM", min(sm), max(sm)), ("memory", min(mem), max(mem))):
        if high and (high - low) > STEADY * high:
            problems.append(f"the {name} clock moved from {high} to {low} MHz while timing")
    held = limits is not None and limits.lowered or any(r in SETTINGS for r in seen)
    sustained = limits.sustained_sm_mhz if limits else None
    if sustained and clocks.sm_mhz < (1 - STEADY) * sustained and not held and not problems:
        problems.append(f"the SM clock was {clocks.sm_mhz} MHz, below the {sustained} MHz this card sustains")
    clocks.problem = "; ".join(problems)
    if held and not problems:
        what = (f" (its application clocks are set to SM {limits.sm_app_mhz}, memory {limits.mem_app_mhz} MHz; "
                f"by default SM {limits.sm_app_default_mhz}, memory {limits.mem_app_default_mhz} MHz)"
                if limits is not None and limits.lowered else " (NVML: " + ", ".join(r for r in seen if r in SETTINGS)
                + ")")
        clocks.note = (f"timed at SM {clocks.sm_mhz} MHz, memory {clocks.mem_mhz} MHz, clocks a setting of this "
                       f"card holds{what}: your fraction holds at these clocks; at the card's default clocks it "
                       "may differ")
    return clocks
