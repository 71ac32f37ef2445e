"""What the control flow of a kernel's machine code says about its accesses, as the hints need it (issue 39): the loop
each access runs in, how its address steps from one thread to the next (coalesced or scattered), the buffers it
sweeps twice, the loops that compute without touching memory, how often each integer division runs, and how many
floats a thread stores on one path. Each answer rests on grader.feedback.sass_flow (the graph, its loops, paths)
and grader.feedback.sass_stride (each address's step), read from the kernel's own function of the listing
(grader.feedback.sass.SassFacts.listing); an access in a function the kernel calls gets no claim.

Every answer errs towards no claim: an incomplete flow (an indirect branch) gives none, a stride not known is
"unknown", and an access the launch may or may not take counts only where every access to its buffer agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from grader.core import exercise as course
from grader.core.exercise import OUTPUT
from grader.core.launch import LaunchSpec
from grader.feedback.sass import SassFacts, division_start_indices
from grader.feedback.sass_access import Access
from grader.feedback.sass_flow import ComputeLoop, Flow, Frequency, Pass, compute_loops, flow, frequency, passes
from grader.feedback.sass_stride import Stride, judge_all, kernel_strides

__all__ = ["Paths", "buffer", "param_roles", "paths", "pointer_roles"]


def param_roles(spec: LaunchSpec) -> dict[int, str]:
    """The role ('x', 'bias', 'out', 'cols', ...) of each parameter by its byte offset in the parameter buffer: in
    order, each aligned to its own size (pointers and 64-bit integers 8, 32-bit ones 4), as the CUDA ABI lays them
    out."""
    roles, at = {}, 0
    for p in spec.params:
        at = -(-at // p.size) * p.size
        roles[at] = p.name
        at += p.size
    return roles


def pointer_roles(spec: LaunchSpec) -> dict[int, str]:
    """param_roles of the pointer parameters only: the buffers an access may read or write (buffer)."""
    kinds = {p.name: p.kind for p in spec.params}
    return {at: name for at, name in param_roles(spec).items() if kinds[name] == "ptr"}


def buffer(a: Access, roles: dict[int, str]) -> str | None:
    """The buffer (a pointer parameter's role of `roles`: pointer_roles) access `a` reads or writes, from the pointer
    parameters its address is computed from (a load that also meets out's pointer reads the other; a store writes
    out, OUTPUT); None: not known."""
    found = [roles[o] for o in a.params if o in roles]
    if a.op == "ld":
        found = [r for r in found if r != OUTPUT] or found
    elif OUTPUT in found:
        return OUTPUT
    return found[0] if len(set(found)) == 1 else None


@dataclass(frozen=True)
class Paths:
    """The control-flow facts of one kernel's own function (module docstring).

    accesses: its global memory instructions and fences (grader.feedback.sass_access.Access), in program order;
    loops: each one's innermost loop (an index into `flow.loops`, None outside every loop); strides and judged: each
    one's step from a thread to the next (sass_stride.Stride) and its judgement ("coalesced", "scattered",
    "unknown": sass_stride.judge_all); buffers: each one's buffer (a pointer parameter's role, None: not known);
    swept: the buffers swept twice (sass_flow.Pass, its `buffer` a role); compute: the loops in the per-element path
    with no memory access (sass_flow.ComputeLoop); divisions: how often each integer division by a run-time value
    runs (sass_flow.Frequency, in program order of their starts); flow: the graph (None: not read)."""

    accesses: tuple[Access, ...] = ()
    loops: tuple[int | None, ...] = ()
    strides: tuple[Stride, ...] = ()
    judged: tuple[str, ...] = ()
    buffers: tuple[str | None, ...] = ()
    swept: tuple[Pass, ...] = ()
    compute: tuple[ComputeLoop, ...] = ()
    divisions: tuple[Frequency, ...] = ()
    flow: Flow | None = None

    @property
    def complete(self) -> bool:
        """Whether the graph was read whole (no indirect branch): else no claim is made of it."""
        return self.flow is not None and self.flow.complete

    def loop_lines(self, loop: int | None) -> tuple[int, ...]:
        """The source lines of loop `loop` (an index into flow.loops); () for None."""
        return self.flow.loops[loop].lines if self.flow is not None and loop is not None else ()

    def stored_floats(self, loop: int | None = None) -> int:
        """Floats a thread stores to out (OUTPUT) per pass through loop `loop` (None: outside every loop): the widest
        store there times how many stores of that width it holds (an unrolled body's copies; a fallback of narrower
        stores on another path is not added). 0 where it stores none."""
        stores = [a for a, b, lp in zip(self.accesses, self.buffers, self.loops, strict=True)
                  if a.op in ("st", "atom", "red") and a.nbytes and b in (OUTPUT, None) and lp == loop]
        if not stores:
            return 0
        widest = max(a.nbytes for a in stores)
        return sum(1 for a in stores if a.nbytes == widest) * widest // course.BYTES_PER_FLOAT

    def scattered(self, cached: tuple[str, ...] = ()) -> list[int]:
        """Positions of the accesses judged scattered whose buffer is known, not cached (`cached`: Exercise.cached, a
        row every row reads, served by the L1), and whose every other access agrees (those of a buffer not known
        included): a buffer with a coalesced access too (a float4 path beside a scalar fallback) may be read either
        way by the launch graded, so no claim. [] on an incomplete flow."""
        if not self.complete:
            return []
        out = []
        for k, (a, buf, j) in enumerate(zip(self.accesses, self.buffers, self.judged, strict=True)):
            if j != "scattered" or buf is None or buf in cached or a.op == "fence":
                continue
            others = [jj for b, jj, aa in zip(self.buffers, self.judged, self.accesses, strict=True)
                      if b in (buf, None) and aa.op != "fence"]  # an access of a buffer not known may be this one
            if all(jj == "scattered" for jj in others):
                out.append(k)
        return out


def paths(facts: SassFacts | None, roles: dict[int, str]) -> Paths:
    """The Paths of the kernel `facts` were read for (their listing and mangled name), its buffers named by `roles`
    (pointer parameters by offset: pointer_roles); an empty Paths without a listing.
    Never raises: an analysis that fails gives an empty Paths (no claim)."""
    if facts is None or facts.listing is None or not facts.mangled:
        return Paths()
    try:
        return _paths(facts, tuple(sorted(roles.items())))
    except Exception:  # noqa: BLE001 - advice only: code the analyses cannot read makes no claim
        return Paths()


@lru_cache(maxsize=16)
def _paths(facts: SassFacts, roles: tuple[tuple[int, str], ...]) -> Paths:
    listing, mangled = facts.listing, facts.mangled
    found, steps = kernel_strides(listing, mangled)
    labels = (getattr(listing, "labels", {}) or {}).get(mangled)
    body = listing.functions[mangled]
    fl = flow(body, dict(labels or {}))
    role_of = dict(roles)
    buffers = tuple(buffer(a, role_of) for a in found)
    by_access = dict(zip((id(a) for a in found), buffers, strict=True))
    loops = tuple(fl.loop_of(i) if (i := fl.index(a.offset)) is not None else None for a in found)
    swept = tuple(p for p in passes(fl, found, lambda a: by_access.get(id(a))) if p.buffer is not None)

    def writes_out(a) -> bool:
        return a.op in ("st", "atom", "red") and by_access.get(id(a)) in (OUTPUT, None)

    compute = compute_loops(fl, found, writes_out)
    divisions = tuple(frequency(fl, i, found, writes_out) for i in division_start_indices(list(body)))
    return Paths(tuple(found), loops, tuple(steps), judge_all(found, steps), buffers, swept, compute, divisions, fl)
