"""The control flow of one function's machine code (SASS), and what it tells about the global memory accesses of
grader.feedback.sass_access: which loop an access is in, whether a store repeats an earlier one on the same path,
whether a buffer is swept twice (two passes), which loops compute without touching memory, and how often an
instruction runs (per iteration of a loop that stores, or once per thread). Issue 39: hints rest on sound facts, so
each answer errs towards "no claim" (a pass, a repeat, a compute loop) or towards "may run" (reachability, loops).

The graph (flow): basic blocks split at branch targets and after every branch, EXIT, RET and CALL (NVIDIA's CUDA
binary utilities documentation, "Instruction Set Reference": BRA branches, BRX and JMX branch to a register's
address, JMP to an absolute one, EXIT ends the thread, RET returns, CALL calls a function that returns to the next
instruction; BSSY, BSYNC and WARPSYNC only set up and wait for the reconvergence of a warp, so they move no control).
A guarded instruction (`@P0 EXIT`, `@!P1 BRA`) or a branch with a predicate operand (`BRA !P0, target`,
`BRA.DIV`, `BRA.CONV`) also falls through; `@!PT` never runs. nvdisasm names targets by label (`` `(.L_x_12) ``:
grader.feedback.sass keeps each function's labels with the offset of the instruction after them), cuobjdump and
ncu by offset (`BRA 0x570`). An indirect branch, or a target that cannot be placed, goes to a hub node with an edge
to every block: it may reach every block, and the flow is then incomplete (`Flow.complete`): no pass, repeat or
compute loop is claimed on it.

Loops: a back-edge is an edge to a block that dominates its source (dominators by Cooper, Harvey and Kennedy's
iteration, "A Simple, Fast Dominance Algorithm", 2001; none on an incomplete flow, where every block may follow the
hub); its natural loop is the header and the blocks that reach the back-edge without passing the header; loops with
one header are one loop. A cycle that no natural loop makes (an irreducible one, or one through the hub) is a loop
too: every strongly connected component with a cycle is covered, so "in no loop" means "runs at most once per
thread".

Work: linear in the instructions for the graph and the components; the dominators and the loops' bodies within
WORK_PER_BLOCK steps per block (past it, no dominance is known, or loops come from the components alone); each
reachability query a breadth-first search, remembered per block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Block", "ComputeLoop", "Flow", "Frequency", "Loop", "Pass", "compute_loops", "flow", "frequency", "loop_of",
           "passes"]

DIRECT = {"BRA", "JMP"}
INDIRECT = {"BRX", "JMX"}
ENDS = {"EXIT", "RET", "KILL", "RTT"}
CALLS = {"CALL", "JCAL"}
MEMORY = {"ld", "st", "atom", "red"}
"""The access kinds (sass_access.LOADS' values) that move global memory; fences are not counted."""
MAX_DOMINATOR_PASSES = 64
"""Passes of the dominator iteration before it gives up (then nothing dominates across blocks, and loops come from
the strongly connected components alone). Code a compiler writes needs 2 to 4."""
WORK_PER_BLOCK = 32
"""The dominators' walks and the natural loops' bodies may take this many steps per block (plus a thousand) in all;
past it, the dominators are not known, or the loops come from the strongly connected components alone (a nest of
thousands of loops, each body holding the next, would take the square of their number)."""

_LABEL_TARGET = re.compile(r"`\(([\w$.]+)\)")
_HEX_TARGET = re.compile(r"(?:^|[\s,])(0x[0-9a-fA-F]+)\s*$")
_NEVER = ("@!PT", "@!UPT")
_ALWAYS = ("", "@PT", "@UPT")


@dataclass(frozen=True)
class Loop:
    """One loop: its `header` block, its `blocks` (indices into Flow.blocks; the hub may be one), the loop it is
    nested in (`parent`, an index into Flow.loops, None: outermost), its `depth` (1: outermost), `natural` (False: an
    irreducible cycle, its header the first block reached), and its instructions' lowest and highest offsets
    (`start`, `end`), count (`size`, NOPs not counted) and source lines."""

    header: int
    blocks: frozenset[int]
    parent: int | None
    depth: int
    natural: bool
    start: int
    end: int
    size: int
    lines: tuple[int, ...]


@dataclass(frozen=True)
class Block:
    """Instructions `start` to `end` - 1 of the function (indices into its body), run one after the other."""

    start: int
    end: int
    succs: tuple[int, ...]
    preds: tuple[int, ...]


class Flow:
    """The control-flow graph of one function's instructions (module docstring). Instructions are named by their
    index in `body`; `index(offset)` finds one by its offset."""

    def __init__(self, body: Sequence, labels: dict[str, int] | None = None) -> None:
        self.body = tuple(body)
        self._at = {ins.offset: i for i, ins in enumerate(self.body) if ins.offset is not None}
        self.complete = True
        self.blocks, self.block_of, self.hub = self._graph(labels or {})
        n = len(self.blocks) + (1 if self.hub is not None else 0)
        everything = [tuple(range(len(self.blocks)))] if self.hub is not None else []
        self._succs = [b.succs for b in self.blocks] + everything
        self._preds = [b.preds for b in self.blocks] + ([self._hub_preds] if self.hub is not None else [])
        self._post = _postorder(self._succs, 0) if self.blocks else []
        self.reachable = frozenset(self._post)
        self.order = tuple(reversed(self._post))
        self._rpo = {b: k for k, b in enumerate(self.order)}
        self.dominators_known, idom = self._dominators()
        self._pre, self._last = _tree_numbers(idom, n)
        self.loops, self._innermost = self._loops()
        self._reach: dict[int, frozenset[int]] = {}

    # --- the graph --------------------------------------------------------------------------------------------

    def _graph(self, labels: dict[str, int]) -> tuple[tuple[Block, ...], tuple[int, ...], int | None]:
        """The blocks, the block of each instruction, and the hub's index (None: no indirect branch)."""
        body, n = self.body, len(self.body)
        if not n:
            self._hub_preds = ()
            return (), (), None
        targets: dict[int, int | None] = {}
        leaders = {0}
        for i, ins in enumerate(body):
            root = ins.root
            if ins.predicate.strip() in _NEVER:
                continue
            if root in DIRECT:
                t = self._target(ins, labels)
                targets[i] = t
                if t is not None:
                    leaders.add(t)
            if root in DIRECT or root in INDIRECT or root in ENDS or root in CALLS:
                if i + 1 < n:
                    leaders.add(i + 1)
        starts = sorted(leaders)
        block_of = [0] * n
        for k, s in enumerate(starts):
            for i in range(s, starts[k + 1] if k + 1 < len(starts) else n):
                block_of[i] = k
        hub = len(starts)
        succs: list[list[int]] = []
        uses_hub = False
        for k in range(len(starts)):
            last = (starts[k + 1] if k + 1 < len(starts) else n) - 1
            out, via_hub = self._successors(last, targets, block_of, hub)
            uses_hub |= via_hub
            succs.append(out)
        preds: list[list[int]] = [[] for _ in starts]
        hub_preds = []
        for k, out in enumerate(succs):
            for s in out:
                (hub_preds if s == hub else preds[s]).append(k)
        if uses_hub:
            for p in preds:
                p.append(hub)
            self.complete = False
        self._hub_preds = tuple(hub_preds)
        blocks = tuple(Block(s, starts[k + 1] if k + 1 < len(starts) else n, tuple(succs[k]), tuple(preds[k]))
                       for k, s in enumerate(starts))
        return blocks, tuple(block_of), hub if uses_hub else None

    def _target(self, ins, labels: dict[str, int]) -> int | None:
        """The index of a direct branch's target: a label of `labels`, or an offset written in hex."""
        m = _LABEL_TARGET.search(ins.operands)
        if m:
            return self._at.get(labels.get(m.group(1)))
        h = _HEX_TARGET.search(ins.operands)
        return self._at.get(int(h.group(1), 16)) if h else None

    def _successors(self, last: int, targets: dict[int, int | None], block_of: list[int],
                    hub: int) -> tuple[list[int], bool]:
        """The successor blocks of the block ending at instruction `last`, and whether one is the hub."""
        ins = self.body[last]
        root, guard = ins.root, ins.predicate.strip()
        fall = [block_of[last + 1]] if last + 1 < len(self.body) else []
        if guard in _NEVER or not (root in DIRECT or root in INDIRECT or root in ENDS):
            return fall, False
        guarded = guard not in _ALWAYS
        if root in ENDS:
            return (fall if guarded else []), False
        if root in INDIRECT:
            return [hub] + (fall if guarded else []), True
        t = targets.get(last)
        conditional = guarded or _predicate_operand(ins)
        out = [hub] if t is None else [block_of[t]]
        return out + [f for f in fall if conditional and f not in out], t is None

    # --- dominators and loops -----------------------------------------------------------------------------------

    def _dominators(self) -> tuple[bool, dict[int, int]]:
        """(converged, immediate dominator of each reachable node) by Cooper, Harvey and Kennedy's iteration."""
        if not self._post:
            return True, {}
        order = list(reversed(self._post))
        if self.hub is not None:
            return False, {order[0]: order[0]}  # every block may follow the hub: nothing is known to dominate
        pos = self._rpo
        idom = {order[0]: order[0]}
        budget = [WORK_PER_BLOCK * len(order) + 1000]

        def meet(a: int, b: int) -> int:
            """The nearest common dominator of a and b (walks charged to the budget)."""
            while a != b:
                while pos[a] > pos[b]:
                    a = idom[a]
                    budget[0] -= 1
                while pos[b] > pos[a]:
                    b = idom[b]
                    budget[0] -= 1
                if budget[0] < 0:
                    raise _OverBudget
            return a

        try:
            for _ in range(MAX_DOMINATOR_PASSES):
                changed = False
                for v in order[1:]:
                    new = None
                    for p in self._preds[v]:
                        if p in idom:
                            new = p if new is None else meet(p, new)
                    if new is not None and idom.get(v) != new:
                        idom[v], changed = new, True
                if not changed:
                    return True, idom
        except _OverBudget:
            pass
        return False, {order[0]: order[0]}

    def _block_dominates(self, a: int, b: int) -> bool:
        pa, pb = self._pre.get(a), self._pre.get(b)
        return pa is not None and pb is not None and pa <= pb and self._last[b] <= self._last[a]

    def _loops(self) -> tuple[tuple[Loop, ...], dict[int, int]]:
        """The loops (outermost first, each after its parent) and the innermost loop of each block in one."""
        bodies = self._natural() if self.dominators_known else {}
        found = [(h, frozenset(b), True) for h, b in bodies.items()]
        natural = {b for _, b, _ in found}
        for comp in _components(self._post, self._succs, self._preds, self.reachable):
            if comp not in natural:
                found.append((min(comp, key=self._rpo.__getitem__), comp, False))
        found.sort(key=lambda f: (-len(f[1]), self._rpo[f[0]]))
        loops: list[Loop] = []
        innermost: dict[int, int] = {}
        for k, (h, blocks, nat) in enumerate(found):
            parent = innermost.get(h)
            loops.append(self._loop(h, blocks, parent, 1 if parent is None else loops[parent].depth + 1, nat))
            for b in blocks:
                innermost[b] = k
        return tuple(loops), innermost

    def _natural(self) -> dict[int, set[int]]:
        """The natural loops' bodies by header; {} past the work budget (WORK_PER_BLOCK)."""
        bodies: dict[int, set[int]] = {}
        budget = WORK_PER_BLOCK * len(self._post) + 1000
        for u in self._post:
            for h in self._succs[u]:
                if not self._block_dominates(h, u):
                    continue
                body = bodies.setdefault(h, {h})
                stack = [u]
                while stack:
                    x = stack.pop()
                    budget -= 1
                    if budget < 0:
                        return {}
                    if x not in body:
                        body.add(x)
                        stack.extend(p for p in self._preds[x] if p in self.reachable)
        return bodies

    def _loop(self, header: int, blocks: frozenset[int], parent: int | None, depth: int, natural: bool) -> Loop:
        ins = [self.body[i] for b in blocks if b < len(self.blocks)
               for i in range(self.blocks[b].start, self.blocks[b].end)]
        offs = [i.offset for i in ins if i.offset is not None] or [0]
        return Loop(header, blocks, parent, depth, natural, min(offs), max(offs),
                    sum(1 for i in ins if i.root != "NOP"), tuple(sorted({i.line for i in ins if i.line})))

    # --- queries ----------------------------------------------------------------------------------------------

    def successors(self, b: int) -> tuple[int, ...]:
        """The nodes block (or hub) `b` leads to."""
        return tuple(self._succs[b])

    def predecessors(self, b: int) -> tuple[int, ...]:
        """The nodes that lead to block (or hub) `b`."""
        return tuple(self._preds[b])

    def position(self, b: int) -> int:
        """Node `b`'s place in reverse postorder (`order`), reachable nodes only."""
        return self._rpo[b]

    def back_edge(self, p: int, b: int) -> bool:
        """Whether the edge p -> b goes back to the header of a natural loop (b dominates p)."""
        return self.dominators_known and self._block_dominates(b, p)

    def loops_left(self, p: int, b: int) -> tuple[int, ...]:
        """The loops that the edge p -> b leaves (they hold p, not b)."""
        out, k = [], self._innermost.get(p)
        while k is not None and b not in self.loops[k].blocks:
            out.append(k)
            k = self.loops[k].parent
        return tuple(out)

    def index(self, offset: int | None) -> int | None:
        """The index of the instruction at `offset` in the body; None when there is none."""
        return self._at.get(offset)

    def loop_of(self, i: int) -> int | None:
        """The innermost loop (an index into `loops`) that instruction `i` is in; None: in no loop."""
        return self._innermost.get(self.block_of[i]) if 0 <= i < len(self.block_of) else None

    def nest(self, i: int) -> tuple[int, ...]:
        """The loops instruction `i` is in, outermost first."""
        out, k = [], self.loop_of(i)
        while k is not None:
            out.append(k)
            k = self.loops[k].parent
        return tuple(reversed(out))

    def runs(self, i: int) -> bool:
        """Whether some execution runs instruction `i` (its block is reachable from the function's start)."""
        return 0 <= i < len(self.block_of) and self.block_of[i] in self.reachable

    def _from(self, b: int) -> frozenset[int]:
        """The nodes reachable from node `b` through one edge or more."""
        if b not in self._reach:
            self._reach[b] = frozenset(_search(self._succs[b], self._succs))
        return self._reach[b]

    def reaches(self, a: int, b: int) -> bool:
        """Whether one thread can run instruction `a` and later instruction `b` (through the graph, back-edges
        included; `a` == `b`: run it again, inside a loop)."""
        if not (self.runs(a) and self.runs(b)):
            return False
        ba, bb = self.block_of[a], self.block_of[b]
        return (ba == bb and a < b) or bb in self._from(ba)

    def exclusive(self, a: int, b: int) -> bool:
        """Whether instructions `a` and `b` are on mutually exclusive paths: no execution of one thread runs both."""
        return a != b and not self.reaches(a, b) and not self.reaches(b, a)

    def dominates(self, a: int, b: int) -> bool:
        """Whether every execution that runs instruction `b` has run instruction `a` before it (or `a` is `b`);
        False where the dominators are not known."""
        if not (self.runs(a) and self.runs(b)):
            return False
        ba, bb = self.block_of[a], self.block_of[b]
        if ba == bb:
            return a <= b
        return self.dominators_known and self._block_dominates(ba, bb)

    def between(self, a: int, b: int) -> list[int] | None:
        """The instructions on some path from instruction `a` to instruction `b` that does not run `a` again
        (neither end included); None when no path leads from `a` to `b`."""
        if not self.reaches(a, b):
            return None
        ba, bb = self.block_of[a], self.block_of[b]
        if ba == bb and a < b:
            return list(range(a + 1, b))
        fwd = set(_search(self._succs[ba], self._succs, stop=ba))
        back = set(_search(self._preds[bb], self._preds, stop=ba)) | {bb}
        mid = (fwd & back) - {ba, bb}
        out = list(range(a + 1, self._end(ba)))
        for x in mid:
            out += self._span(x)
        start = self.blocks[bb].start
        if ba != bb and any(s in back for s in self._succs[bb]):
            out += [i for i in range(start, self._end(bb)) if i != b]
        else:
            out += list(range(start, b))
        return out

    def _end(self, b: int) -> int:
        return self.blocks[b].end if b < len(self.blocks) else 0

    def _span(self, b: int) -> range:
        return range(self.blocks[b].start, self.blocks[b].end) if b < len(self.blocks) else range(0)

    def same_value(self, a: int, b: int, regs: Iterable[str], writes: Callable[[object], Iterable[str]]) -> bool:
        """Whether the registers `regs` hold at instruction `b` what they held at instruction `a`, for every
        execution: `a` runs unguarded and dominates `b`, and no instruction on a path between them writes one of
        them (`writes(ins)`: the registers `ins` writes; a CALL may write any)."""
        if a == b or not self.dominates(a, b) or self.body[a].predicate.strip() not in _ALWAYS:
            return False
        mid = self.between(a, b)
        if mid is None:
            return False
        want = set(regs)
        return not any(self.body[i].root in CALLS or want & set(writes(self.body[i])) for i in mid)

    def runs_after(self, first: int, second: int) -> bool:
        """Whether loop `second` can run after loop `first` has been left, within one iteration of the innermost
        loop holding both (a path from `first`'s exits to `second` that does not go back to that loop's header)."""
        common = set(self._ancestors(first)) & set(self._ancestors(second))
        inner = max(common, key=lambda k: self.loops[k].depth) if common else None
        stop = self.loops[inner].header if inner is not None else None
        blocks = self.loops[first].blocks
        exits = [s for b in blocks for s in self._succs[b] if s not in blocks]
        seen = set(exits) | set(_search(exits, self._succs, stop=stop))
        return bool(seen & self.loops[second].blocks)

    def _ancestors(self, k: int) -> list[int]:
        out = []
        while k is not None:
            out.append(k)
            k = self.loops[k].parent
        return out

    def nested(self, a: int, b: int) -> bool:
        """Whether loop `a` is loop `b` or is nested in it, or `b` in `a`."""
        return a in self._ancestors(b) or b in self._ancestors(a)


class _OverBudget(Exception):
    """The dominators' iteration took more than its work budget."""


def flow(body: Sequence, labels: dict[str, int] | None = None) -> Flow:
    """The Flow of one function's instructions (objects with `opcode`, `root`, `operands`, `predicate`, `offset`,
    `line`: grader.feedback.sass.Instruction), with `labels` (name -> offset; nvdisasm's) to place branch targets."""
    return Flow(body, labels)


def _predicate_operand(ins) -> bool:
    """A branch that tests a predicate operand (`BRA !P0, target`, `BRA.U !UP0, target`) or the warp's state
    (`BRA.DIV`, `BRA.CONV`): it may fall through."""
    args = [a.strip() for a in ins.operands.split(",")]
    mods = set(ins.opcode.split(".")[1:])
    return bool(mods & {"DIV", "CONV"}) or any(a not in ("PT", "UPT") for a in args[:-1] if a)


def _postorder(succs: Sequence[Sequence[int]], root: int) -> list[int]:
    """The nodes reachable from `root`, in depth-first postorder (iterative)."""
    seen, order = {root}, []
    stack = [(root, iter(succs[root]))]
    while stack:
        node, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(succs[s])))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def _search(start: Iterable[int], edges: Sequence[Sequence[int]], stop: int | None = None) -> list[int]:
    """The nodes reached from `start` (included) along `edges`, not going on from `stop` (reached, it is given,
    but nothing past it)."""
    seen: set[int] = set()
    todo = list(start)
    out = []
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        out.append(x)
        if x != stop:
            todo.extend(s for s in edges[x] if s not in seen)
    return out


def _tree_numbers(idom: dict[int, int], n: int) -> tuple[dict[int, int], dict[int, int]]:
    """Preorder numbers of the dominator tree and the last preorder number under each node (a dominates b when
    pre[a] <= pre[b] <= last[a])."""
    children: dict[int, list[int]] = {}
    root = None
    for v, d in idom.items():
        if v == d:
            root = v
        else:
            children.setdefault(d, []).append(v)
    pre: dict[int, int] = {}
    last: dict[int, int] = {}
    if root is None:
        return pre, last
    stack = [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            last[v] = len(pre) - 1
            continue
        pre[v] = len(pre)
        stack.append((v, True))
        stack.extend((c, False) for c in children.get(v, ()))
    return pre, last


def _components(post: list[int], succs, preds, reachable) -> list[frozenset[int]]:
    """The strongly connected components of the reachable graph that hold a cycle (Kosaraju: the reverse graph
    searched in decreasing finish order)."""
    comp: dict[int, int] = {}
    out = []
    for v in reversed(post):
        if v in comp:
            continue
        members, stack = [v], [v]
        comp[v] = v
        while stack:
            x = stack.pop()
            for p in preds[x]:
                if p in reachable and p not in comp:
                    comp[p] = v
                    members.append(p)
                    stack.append(p)
        if len(members) > 1 or v in succs[v]:
            out.append(frozenset(members))
    return out


# --- what the flow says about the accesses (sass_access.Access: op, nbytes, line, offset) -----------------------

@dataclass(frozen=True)
class Pass:
    """A buffer swept twice: loop `first` (an index into Flow.loops) loads it and loop `second`, run after it,
    loads it again with the same width ("read twice"), or `first` stores it and `second` loads it back ("written
    then read"), or stores it again as wide without loading it ("written twice": a zero fill, then the answer).
    `accesses`: positions in the access list, the first loop's, then the second's."""

    buffer: object
    kind: str
    first: int
    second: int
    accesses: tuple[int, ...]


@dataclass(frozen=True)
class ComputeLoop:
    """A loop in the per-element path with no global memory access: Flow.loops[`loop`], its first offset,
    instructions (`size`, NOPs not counted) and lines, and `per`: the loop that stores whose every iteration runs
    it (None: the kernel stores outside every loop, and this loop runs on the way to its stores, once per thread)."""

    loop: int
    start: int
    size: int
    lines: tuple[int, ...]
    per: int | None


@dataclass(frozen=True)
class Frequency:
    """How often an instruction runs: `kind` "per iteration" (in `loop`, which also holds the stores `stores`,
    positions in the access list: once or more per iteration of it), "in a loop" (`loop`: its innermost loop, none
    of whose enclosing loops stores), "once" (in no loop: at most once per thread) or "never" (unreachable)."""

    kind: str
    loop: int | None = None
    stores: tuple[int, ...] = ()


def _is_store(a) -> bool:
    return a.op in ("st", "atom", "red")


def _placed(fl: Flow, accesses: Sequence) -> list[tuple[int, int]]:
    """(position in the list, instruction index) of each access found in the flow's body."""
    return [(k, i) for k, a in enumerate(accesses) if (i := fl.index(a.offset)) is not None]


def loop_of(fl: Flow, access) -> int | None:
    """The innermost loop (an index into fl.loops) that `access` (by its offset) is in; None: in no loop."""
    i = fl.index(access.offset)
    return None if i is None else fl.loop_of(i)


def passes(fl: Flow, accesses: Sequence, buffer_of: Callable[[object], object] | None = None) -> tuple[Pass, ...]:
    """The buffers swept twice (Pass), where `buffer_of(access)` names an access's buffer (None: not known; the
    default: its parameters, sass_access.Access.params). Two loops count when neither is nested in the other, the
    second can run after the first has been left (Flow.runs_after; so not on exclusive branches) and their accesses
    come from different source lines: copies of one loop that the compiler made (an unrolled body and its
    remainder) share their lines, so without line information nothing is claimed. None on an incomplete flow."""
    if not fl.complete:
        return ()
    buffer_of = buffer_of or (lambda a: a.params or None)
    by_loop: dict[int, list[int]] = {}
    for k, i in _placed(fl, accesses):
        if accesses[k].op in MEMORY and (loop := fl.loop_of(i)) is not None:
            by_loop.setdefault(loop, []).append(k)
    lines = {lp: {accesses[k].line for k in ks} for lp, ks in by_loop.items()}
    found = []
    for first, fa in by_loop.items():
        for second, sa in by_loop.items():
            if first == second or fl.nested(first, second) or None in lines[first] | lines[second] \
                    or lines[first] & lines[second] or not fl.runs_after(first, second):
                continue
            found += _sweeps(accesses, fa, sa, first, second, buffer_of)
    return tuple(found)


def _sweeps(accesses: Sequence, fa: list[int], sa: list[int], first: int, second: int,
            buffer_of: Callable[[object], object]) -> list[Pass]:
    """The Passes of two loops' accesses `fa` and `sa` (positions), per buffer."""
    out = []
    bufs = {buffer_of(accesses[k]) for k in fa} - {None}
    for buf in sorted(bufs, key=repr):
        mine = [k for k in fa if buffer_of(accesses[k]) == buf]
        theirs = [k for k in sa if buffer_of(accesses[k]) == buf and accesses[k].op == "ld"]
        widths = {accesses[k].nbytes for k in mine if accesses[k].op == "ld"}
        again = [k for k in theirs if accesses[k].nbytes in widths]
        if again:
            out.append(Pass(buf, "read twice", first, second,
                            tuple(k for k in mine if accesses[k].op == "ld") + tuple(again)))
        stored = [k for k in mine if _is_store(accesses[k])]
        if stored and theirs:
            out.append(Pass(buf, "written then read", first, second, tuple(stored) + tuple(theirs)))
        sizes = {accesses[k].nbytes for k in stored}
        rewritten = [k for k in sa if buffer_of(accesses[k]) == buf and _is_store(accesses[k])
                     and accesses[k].nbytes in sizes]
        if stored and rewritten and not theirs:
            out.append(Pass(buf, "written twice", first, second, tuple(stored) + tuple(rewritten)))
    return out


def _store_loops(fl: Flow, accesses: Sequence, is_store: Callable[[object], bool]) -> dict[int, list[int]]:
    """Loop -> positions of the stores (is_store) in it or in loops nested in it."""
    out: dict[int, list[int]] = {}
    for k, i in _placed(fl, accesses):
        if is_store(accesses[k]):
            for loop in fl.nest(i):
                out.setdefault(loop, []).append(k)
    return out


def compute_loops(fl: Flow, accesses: Sequence, is_store: Callable[[object], bool] | None = None
                  ) -> tuple[ComputeLoop, ...]:
    """The loops with no global memory access (no ld, st, atom or red in them or in loops nested in them) that run
    per element: nested in a loop that stores (`is_store`, default: any store, atomic or reduction), or, where
    the kernel stores in no loop, on a path to a store. Only the outermost such loop of a nest is given. None on an
    incomplete flow."""
    if not fl.complete:
        return ()
    is_store = is_store or _is_store
    touched = {lp for k, i in _placed(fl, accesses) if accesses[k].op in MEMORY for lp in fl.nest(i)}
    storing = _store_loops(fl, accesses, is_store)
    stores = [i for k, i in _placed(fl, accesses) if is_store(accesses[k])]
    out = []
    for k, loop in enumerate(fl.loops):
        if k in touched or loop.header not in fl.reachable or loop.header >= len(fl.blocks):
            continue
        if loop.parent is not None and loop.parent not in touched:
            continue  # inside a compute loop already given
        per = next((p for p in fl._ancestors(k) if p in storing), None)
        first = fl.blocks[loop.header].start
        if per is None and (storing or not any(fl.reaches(first, s) for s in stores)):
            continue
        out.append(ComputeLoop(k, loop.start, loop.size, loop.lines, per))
    return tuple(out)


def frequency(fl: Flow, i: int, accesses: Sequence, is_store: Callable[[object], bool] | None = None) -> Frequency:
    """How often instruction `i` (an index into the body) runs (Frequency): per iteration of the innermost loop
    around it that holds a store (`is_store`, default: any store, atomic or reduction), in a loop that stores
    nothing, once per thread (in no cycle of the flow), or never."""
    if not fl.runs(i):
        return Frequency("never")
    inner = fl.loop_of(i)
    if inner is None:
        return Frequency("once")
    storing = _store_loops(fl, accesses, is_store or _is_store)
    for loop in fl._ancestors(inner):
        if loop in storing:
            return Frequency("per iteration", loop, tuple(storing[loop]))
    return Frequency("in a loop", inner)
