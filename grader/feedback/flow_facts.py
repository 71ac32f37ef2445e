"""Static facts from the control flow of the machine code (issue 39; grader.feedback.code_paths), each a hint only
where its premise holds on every path the launch may take, each with the numbers its estimate needs:

  scattered  every access to a buffer (not a cached one) steps further than its width from one thread to the next
             (a column walk: 4 x cols bytes; a thread per 16-float chunk: 64 bytes), so a warp's access touches up to
             32 sectors for its useful bytes; no claim where another access to the buffer is coalesced (a float4
             path beside its scalar fallback: which one the launch takes is not known here);
  passes     a buffer swept twice: a loop loads it and a later loop, not nested, loads it again as wide ("read
             twice"), or a loop stores out and a later one loads it back ("written then read") or stores it again
             ("written twice"); the benchmark's
             buffers are many times the L2, so the second sweep reads DRAM again: 4 bytes per element each;
  work       a loop with no memory access that runs for every element (its instructions and lines): extra work
             on the issue slots, its trip count not known here;
  divisions  how many integer divisions by a run-time value the timed launch runs per element
             (divisions_per_element): one that runs once per thread counts 1 / the thread's elements, one per
             iteration of a loop that stores counts 1 / the floats an iteration stores.

With counters measured, the counters' own hints replace the first three (grader.feedback.worth: the measurement
decides). Each carries grader.feedback.hint.CODE_FACT in its facts, so the ranking tells it from the counters' hint
of the same kind.
"""

from __future__ import annotations

from grader.core import exercise as course
from grader.core.exercise import Exercise
from grader.core.launch import LaunchSpec
from grader.feedback.code_paths import Paths
from grader.feedback.hint import CODE_FACT, Hint, HintKind

FROM_CODE = "from the machine code"
PASS_BYTES = course.BYTES_PER_FLOAT
"""DRAM bytes a second sweep of one float buffer adds per element (read once more, or written once more)."""


def flow_hints(p: Paths, ex: Exercise, roles: dict[int, str]) -> list[Hint]:
    """The scattered, passes and work facts (module docstring) of the kernel whose Paths are `p`, exercise `ex` (its
    cached inputs are never called scattered; its byte model sets what a second sweep adds), `roles` naming the
    parameters in stride texts (grader.feedback.code_paths.param_roles). [] on an incomplete flow."""
    if not p.complete:
        return []
    return [h for h in (_scattered(p, ex, roles), _passes(p, ex), _work(p)) if h is not None]


def _where(p: Paths, ks: list[int]) -> str:
    """'line 14 (STG.E)' for the accesses at positions `ks`, each line once."""
    seen: dict[int | None, str] = {}
    for k in ks:
        seen.setdefault(p.accesses[k].line, p.accesses[k].opcode)
    return ", ".join(f"line {line} ({op})" if line else op for line, op in list(seen.items())[:4])


def _scattered(p: Paths, ex: Exercise, roles: dict[int, str]) -> Hint | None:
    ks = p.scattered(tuple(ex.cached))
    if not ks:
        return None
    parts = []
    for buf in dict.fromkeys(p.buffers[k] for k in ks):
        mine = [k for k in ks if p.buffers[k] == buf]
        a, s = p.accesses[mine[0]], p.strides[mine[0]]
        what = "stores to" if a.op in ("st", "atom", "red") else "loads of"
        parts.append(f"its {what} {buf} at {_where(p, mine)}, {a.nbytes} bytes each, step "
                     f"{s.describe(roles).split(',')[0]} from one thread to the next")
    lines = sorted({p.accesses[k].line for k in ks if p.accesses[k].line})
    text = (f"scattered accesses ({FROM_CODE}): " + "; ".join(parts) + ", where a coalesced access steps its own "
            "width, so each 32-byte sector a warp fetches brings one useful float and a warp's access touches up to "
            "32 sectors. " + ex.counter_texts.scatter_fix)
    return Hint(text=text, kind=HintKind.SCATTERED, lines=lines, facts={CODE_FACT: 1.0})


def _passes(p: Paths, ex: Exercise) -> Hint | None:
    if not p.swept:
        return None
    said, lines, extra = [], set(), 0.0
    for pass_ in p.swept:
        first, second = p.loop_lines(pass_.first), p.loop_lines(pass_.second)
        span = lambda ls: f"lines {ls[0]}-{ls[-1]}" if len(ls) > 1 else f"line {ls[0]}" if ls else "a loop"  # noqa: E731
        if pass_.kind == "read twice":
            said.append(f"{pass_.buffer} is read twice: a loop ({span(first)}) loads it and a later loop "
                        f"({span(second)}) loads it again")
            extra += PASS_BYTES
        elif pass_.kind == "written twice":
            said.append(f"{pass_.buffer} is written twice: a loop ({span(first)}) stores it and a later loop "
                        f"({span(second)}) stores it again")
            extra += PASS_BYTES
        else:
            said.append(f"{pass_.buffer} is written, then read back: a loop ({span(first)}) stores it and a later "
                        f"loop ({span(second)}) loads it")
            extra += 2 * PASS_BYTES  # read back, and (as a rule) written again
        lines |= {p.accesses[k].line for k in pass_.accesses if p.accesses[k].line}
    model = ex.floats_per_element * course.BYTES_PER_FLOAT
    text = (f"{'; '.join(said)} ({FROM_CODE}). Every buffer of the benchmark is many times the L2, so the second "
            f"sweep comes from DRAM again: about {model + extra:g} bytes per element where the byte model moves "
            f"{model:g}. Compute each element in one pass, from one load of each input, and store it once.")
    return Hint(text=text, kind=HintKind.PASSES, lines=sorted(lines),
                facts={CODE_FACT: 1.0, "model_bytes": float(model), "extra_bytes": extra})


def _work(p: Paths) -> Hint | None:
    if not p.compute:
        return None
    loop = max(p.compute, key=lambda c: c.size)
    lines = list(loop.lines)
    where = f" (lines {lines[0]}-{lines[-1]})" if len(lines) > 1 else f" (line {lines[0]})" if lines else ""
    how = "each iteration of the loop that stores" if loop.per is not None else "each thread on the way to its stores"
    text = (f"extra work per element ({FROM_CODE}): a loop of {loop.size} instructions{where} runs for {how}, and "
            "touches no memory: its iterations are issue slots and latency on top of what moving the data takes. "
            "Take work out of the per-element path: compute each element once, with the fewest instructions (the "
            "exact GELU is one erff).")
    return Hint(text=text, kind=HintKind.WORK, lines=lines, facts={CODE_FACT: 1.0, "loop_size": float(loop.size)})


def divisions_per_element(p: Paths, spec: LaunchSpec, shape: tuple[int, int] | None, item: int = 1,
                          sms: int | None = None, threads_per_sm: int | None = None) -> float | None:
    """Integer divisions by a run-time value the launch runs per element of the output at `shape` (rows, cols of the
    output; `item`: floats of out per element of the launch's elems_per_thread): a division in no loop runs once per
    thread (1 / the thread's floats: the grid's threads at `shape`, a stride grid's from `sms` x `threads_per_sm`), one
    per iteration of a loop that stores counts 1 / the floats an iteration stores (Paths.stored_floats), one in a loop
    that stores nothing at least once per element, one never reached 0. None where a number is missing (no shape,
    an incomplete flow, a stride grid without the card)."""
    if not p.complete or not shape:
        return None
    if not p.divisions:
        return 0.0
    rows, cols = shape
    work = (rows, cols) if item == 1 else (1, rows * cols // item)
    fill = (sms * threads_per_sm) if sms and threads_per_sm else None
    if spec.grid == "stride" and fill is None:
        return None
    gx, gy, _ = spec.grid_for(*work, fill or 0)
    per_thread = rows * cols / (gx * gy * spec.block)
    total = 0.0
    for f in p.divisions:
        if f.kind == "never":
            continue
        if f.kind == "once":
            total += 1 / per_thread
        elif f.kind == "per iteration":
            total += 1 / max(1, p.stored_floats(f.loop))
        else:  # in a loop that stores nothing: runs at least once per element
            total += 1.0
    return total


def stores_out(p: Paths) -> int:
    """Floats a thread stores to out outside every loop (Paths.stored_floats(None)): the idle fact's vector when it
    is wider than one store (eight float2 stores of eight pairs: 16 floats)."""
    return p.stored_floats(None) if p.complete else 0


__all__ = ["FROM_CODE", "divisions_per_element", "flow_hints", "stores_out"]
