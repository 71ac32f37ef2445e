"""How a global memory access's address changes from one thread to the next (threadIdx.x + 1, the same block,
threadIdx.y and .z, at the same execution of the instruction: the same iteration of each loop around it), read from
the machine code (SASS), so that "consecutive threads are cols floats apart" rests on what the card runs (issue 39).

A forward abstract interpretation over the function's control flow (grader.feedback.sass_flow), every register
holding its derivative with respect to threadIdx.x: an exact integer, a linear form in constant-bank words (a
kernel parameter read from c[0x0][OFFSET] times a constant: 4 x cols), or unknown; and, where the derivative is 0
(the same value in every thread), the value itself when it is a constant or such a form. Values are the low 32 bits
of a register; a 64-bit address is tracked by its low register (its difference between two threads is the low
words' difference whenever it is under 2^31 bytes). The rule of each opcode, with its source (NVIDIA's CUDA binary
utilities documentation, "Instruction Set Reference"), is in grader.feedback.sass_values: in short, S2R SR_TID.X
is 1, constants, constant-bank words and uniform registers 0, IMAD, IADD3, LEA, SHF and MOV exact, a division's
multiply-high 0 except where its quotient steps, SEL and joins of paths the common derivative (except where the
choice differs between threads), every other operation 0 when its inputs are, else unknown; a CALL of a function in
the listing (a division routine) is followed into it.

A result that holds only "except where ... steps" has `exact` False. A branch's or a choice's own predicate is
tracked only for being the same in every thread. A function whose flow is incomplete (an indirect branch, a target
not placed: grader.feedback.sass_flow), malformed or unexpected SASS, or more work than MAX_VISITS visits of a block
or MAX_STEPS steps gives unknown for every access: never an exception.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from grader.feedback.sass_access import PARAM_BASE, accesses, address
from grader.feedback.sass_flow import CALLS, Flow, flow
from grader.feedback.sass_values import (
    CBANK,
    INT,
    NUMBER,
    PRED,
    PURE,
    REG,
    RULES,
    SETP,
    UNKNOWN,
    WARP_UNIFORM,
    ZERO,
    Value,
    as_int,
    bitnot,
    const,
    default,
    dest_count,
    merge,
    neg,
    next_reg,
    opaque,
    pure_width,
    signed,
    split,
    uniform,
)

__all__ = ["MAX_CALL_DEPTH", "MAX_STEPS", "MAX_VISITS", "Stride", "judge", "judge_all", "kernel_strides", "strides"]

MAX_VISITS = 16
"""Visits of one block before the interpretation gives up (a register's value changes at most three times)."""
MAX_STEPS = 400_000
"""Instructions interpreted plus register values joined, per function analysed and the functions it calls,
before the interpretation gives up (a kernel of 2,000 instructions takes about 10,000)."""
MAX_CALL_DEPTH = 2
"""Calls followed into their function, nested (a division routine is one deep)."""


@dataclass(frozen=True)
class Stride:
    """How one access's address changes from a thread to the next (module docstring): `bytes`, an integer, where
    that is all it is; `terms`, where it depends on constant-bank words: ((offset from the first parameter,
    bytes per unit), ...) (negative offsets are the launch's own words below the parameters: c[0x0][0x0] ...),
    with `constant` bytes added; neither: unknown. `exact` False: holds except where a quotient, a carry or a
    choice between threads steps. `value`: which address value it is (equal for accesses through one register
    value in one block), `offset`: the immediate its address operand adds (`[R2.64+0x4]`: 4)."""

    bytes: int | None = None
    terms: tuple[tuple[int, int], ...] = ()
    constant: int = 0
    exact: bool = False
    value: object = field(default=None, compare=False, repr=False)
    offset: int = field(default=0, compare=False, repr=False)

    @property
    def known(self) -> bool:
        """Whether the stride is known (an integer or a form in parameters)."""
        return self.bytes is not None or bool(self.terms)

    def describe(self, roles: Mapping[int, str] | None = None) -> str:
        """'4 bytes', '4 x cols' (`roles`: parameter offset -> name, grader.feedback.code_paths.param_roles),
        'unknown'; ', except where a quotient, a carry or a choice steps' added when not exact."""
        if not self.known:
            return "unknown"
        if self.bytes is not None:
            text = f"{self.bytes} bytes"
        else:
            parts = [f"{k} x {_name(off, roles or {})}" for off, k in self.terms]
            text = " + ".join(parts + ([f"{self.constant} bytes"] if self.constant else []))
        return text + ("" if self.exact else ", except where a quotient, a carry or a choice steps")


def _name(off: int, roles: Mapping[int, str]) -> str:
    if off in roles:
        return roles[off]
    if off - 4 in roles:
        return f"the high word of {roles[off - 4]}"
    return f"the parameter at offset {off:#x}" if off >= 0 else f"the launch's constant at c[0x0][{off:#x}] before them"


def judge(stride: Stride, nbytes: int | None) -> str:
    """'coalesced' where consecutive threads' accesses of `nbytes` each are adjacent or closer (|stride| <= nbytes:
    a float per thread 4 bytes apart, a float4 16 apart, or 0: one address for all, a broadcast), 'scattered'
    where they are further apart (a known multiple of the width: a thread per 16-float chunk, 64 bytes for 4-byte
    accesses; or a parameter-valued stride: a column walk, 4 x cols, scattered unless the parameter is so small
    that the stride is at most nbytes, a matrix of one column), 'unknown' otherwise: no claim. A Stride that is
    not exact is judged on the neighbours it holds for."""
    if nbytes is None or not stride.known:
        return "unknown"
    if stride.bytes is not None:
        return "coalesced" if abs(stride.bytes) <= nbytes else "scattered"
    return "scattered"


def judge_all(found: Sequence, found_strides: Sequence[Stride]) -> tuple[str, ...]:
    """judge() of each access (objects with `nbytes`: sass_access.Access) with its Stride, except that accesses
    through one address value with one integer stride whose bytes, together, tile that stride (in[2p] and
    in[2p + 1]: [R6.64] and [R6.64+0x4], 8 bytes apart, 4 bytes each) are 'coalesced' together."""
    out = [judge(s, getattr(a, "nbytes", None)) for a, s in zip(found, found_strides, strict=False)]
    groups: dict[tuple, list[int]] = {}
    for k, s in enumerate(found_strides):
        if out[k] == "scattered" and s.bytes is not None and s.value is not None:
            groups.setdefault((s.value, s.bytes), []).append(k)
    for (_, b), ks in groups.items():
        spans = sorted((found_strides[k].offset, found[k].nbytes) for k in ks)
        reach = spans[0][0]
        for lo, n in spans:
            if lo > reach:
                break
            reach = max(reach, lo + n)
        if reach - spans[0][0] >= abs(b):
            for k in ks:
                out[k] = "coalesced"
    return tuple(out)


_CALL_TARGET = re.compile(r"`\(([\w$.]+)\)")
_NEVER = ("@!PT", "@!UPT")
_ALWAYS = ("", "@PT", "@UPT")
_NO_DEST = {"STG", "ST", "STS", "STL", "RED", "REDG", "BAR", "MEMBAR", "ERRBAR", "CGAERRBAR", "CCTL", "BRA", "BRX",
            "JMP", "JMX", "EXIT", "RET", "KILL", "BSSY", "BSYNC", "WARPSYNC", "NOP", "DEPBAR", "YIELD", "NANOSLEEP",
            "LDGSTS", "LDGDEPBAR", "BPT", "RTT", "BREAK", "UTMALDG", "UBLKCP", "UTMAPF", "SYNCS", "ARRIVES"}

# --- the interpretation ------------------------------------------------------------------------------------------

class _GiveUp(Exception):
    """More work than MAX_VISITS or MAX_STEPS allow."""


class _Interp:
    """The interpretation of one function (and the functions it calls): `callees` maps a function's name to
    (its instructions, its labels)."""

    def __init__(self, callees: Mapping[str, tuple[Sequence, Mapping[str, int] | None]] | None) -> None:
        self.callees = callees or {}
        self.flows: dict[object, Flow] = {}
        self.steps = 0
        self.seen: dict[int, Value] = {}
        self.divisors: set = set()

    def get(self, st: dict, reg: str) -> Value:
        """The value of register `reg` (RZ, URZ: 0; one never written: default)."""
        if reg in ("RZ", "URZ"):
            return Value(ZERO, ZERO)
        v = st.get(reg)
        return v if v is not None else default(reg)

    def operand(self, tok: str, st: dict) -> Value:
        """The value of a source operand."""
        t = tok.strip()
        m = REG.match(t)
        if m:
            sign, bars, reg, suffix = m.groups()
            v = self.get(st, reg)
            if bars or {x for x in suffix.split(".") if x} - {"reuse", "64"}:
                v = opaque([v])
            return neg(v) if sign == "-" else bitnot(v) if sign == "~" else v
        c = CBANK.match(t)
        if c:
            v = self.bank(c.group(2), c.group(3), st)
            return neg(v) if c.group(1) else v
        if INT.match(t):
            return uniform(const(int(t, 0)))
        return uniform() if NUMBER.match(t) else UNKNOWN

    def bank(self, bank: str, index: str, st: dict, word: int = 0) -> Value:
        """A constant-bank word c[BANK][INDEX] (`word` bytes on): bank 0's at an immediate offset is that word."""
        idx = index.strip()
        if int(bank, 16) != 0:
            return uniform()
        if idx == "RZ" or re.fullmatch(r"0x[0-9a-fA-F]+", idx):
            return uniform((((0 if idx == "RZ" else int(idx, 16)) + word, 1),))
        m = re.fullmatch(r"(U?R\d+)(?:\s*[+-]\s*0x[0-9a-fA-F]+)?", idx)
        return opaque([self.get(st, m.group(1))]) if m else UNKNOWN

    def high_of(self, tok: str, st: dict) -> Value:
        """The high word of a 64-bit source operand (the register after it; an immediate's sign; the next word)."""
        t = tok.strip()
        m = REG.match(t)
        if m:
            if m.group(3) in ("RZ", "URZ"):
                return Value(ZERO, ZERO)
            return opaque([self.get(st, next_reg(m.group(3)))]) if m.group(1) else self.get(st, next_reg(m.group(3)))
        c = CBANK.match(t)
        if c:
            return self.bank(c.group(2), c.group(3), st, 4)
        return uniform()

    def uniform_pred(self, tok: str, st: dict) -> bool:
        """Whether predicate `tok` is the same in every thread (PT, a uniform predicate, one of uniform values)."""
        t = tok.strip().lstrip("@").lstrip("!")
        return t in ("PT", "UPT") or t.startswith("UP") or self.get(st, t).exact_uniform()

    def known_pred(self, tok: str, st: dict) -> bool | None:
        """True or False where predicate `tok` (`P1`, `!P1`) is known: PT, or a test that a divisor is not 0 (module
        docstring: division by zero is undefined, so its fix-up is not followed); None otherwise."""
        t = tok.strip().lstrip("@")
        neg, name = t.startswith("!"), t.lstrip("!")
        if name in ("PT", "UPT"):
            return not neg
        test = self.get(st, name).test
        return (not neg) if test is not None and test in self.divisors else None

    @staticmethod
    def key(v: Value) -> object:
        """What identifies a value for the divisor rule: its constant-bank word, else its definition."""
        return ("val", v.val) if v.val is not None else v.site or None

    def _test(self, base: str, mods: list[str], toks: list[str], st: dict) -> object:
        """The key of X for `ISETP.NE ... X, RZ` (the 64-bit `.EX` half keeps its low half's test)."""
        if base != "ISETP" or "NE" not in mods:
            return None
        vt = [t for t in toks if not PRED.match(t)]
        if len(vt) < 2 or "RZ" not in (vt[0], vt[1]):
            return None
        if "EX" in mods:
            combine = [t for t in toks if PRED.match(t)]
            return self.get(st, combine[-1]).test if combine and not combine[-1].startswith("!") else None
        return self.key(self.operand(vt[1] if vt[0] == "RZ" else vt[0], st))

    # --- the fixpoint ---------------------------------------------------------------------------------------

    def run(self, fl: Flow, entry: dict, ctx: tuple, watch: Mapping[int, str] | None = None) -> dict | None:
        """The state after the function returns (the join over its RETs; None: it never does), from `entry`;
        `watch`: instruction -> register whose value before it goes to `seen`."""
        if not fl.blocks:
            return entry
        outs: dict[int, dict | None] = {}
        visits: dict[int, int] = {}
        heap, queued = [(0, 0)], {0}
        while heap:
            _, b = heapq.heappop(heap)
            queued.discard(b)
            visits[b] = visits.get(b, 0) + 1
            if visits[b] > MAX_VISITS:
                raise _GiveUp
            st = self.entry_state(fl, b, outs, entry, ctx)
            if st is None:
                continue
            out = st if b == fl.hub else self.block(fl, b, st, ctx, watch)
            if b not in outs or outs[b] != out:
                outs[b] = out
                for s in fl.successors(b):
                    if s not in queued and s in fl.reachable:
                        queued.add(s)
                        heapq.heappush(heap, (fl.position(s), s))
        rets = [outs[b] for b in outs if b != fl.hub and outs[b] is not None
                and fl.body[fl.blocks[b].end - 1].root == "RET"]
        return self.join(rets, True, (ctx, "ret")) if rets else None

    def entry_state(self, fl: Flow, b: int, outs: dict, entry: dict, ctx: tuple) -> dict | None:
        """The join of the states that reach block `b` (module docstring: the first iteration and later ones of a
        loop are joined without a step)."""
        fwd, back = [], []
        for p in fl.predecessors(b):
            if outs.get(p) is not None:
                st = self.leaving(fl, p, b, outs[p], ctx)
                (back if fl.back_edge(p, b) else fwd).append(st)
        if b == 0:
            fwd.append(entry)
        first = self.join(fwd, True, (ctx, -1 - b, 0))
        later = self.join(back, True, (ctx, -1 - b, 1))
        if first is None or later is None:
            return first if later is None else later
        return self.join([first, later], False, (ctx, -1 - b, 2))

    def leaving(self, fl: Flow, p: int, b: int, st: dict, ctx: tuple) -> dict:
        """`st` along the edge p -> b: the values made in the loops it leaves step between threads."""
        left = fl.loops_left(p, b)
        if not left:
            return st
        blocks = frozenset().union(*(fl.loops[k].blocks for k in left))
        out = dict(st)
        for reg, v in st.items():
            if v.d is not None and not v.step and self._site_block(fl, v.site, ctx) in blocks:
                out[reg] = Value(v.d, None, True, v.site)
        return out

    @staticmethod
    def _site_block(fl: Flow, site: tuple, ctx: tuple) -> int | None:
        if len(site) != 3 or not isinstance(site[0], tuple) or site[0][:len(ctx)] != ctx:
            return None
        if len(site[0]) > len(ctx):
            return fl.block_of[site[0][len(ctx)]]
        idx = site[1]
        return fl.block_of[idx] if idx >= 0 else -1 - idx

    def join(self, states: list[dict], divergent: bool, site: tuple) -> dict | None:
        """The registers' values where `states` meet (sass_values.merge of each; `divergent`: neighbouring threads
        may come from different ones); None for no state."""
        if not states:
            return None
        if len(states) == 1:
            return states[0]
        out = {}
        regs = set().union(*states)
        self.steps += len(regs) * len(states)
        if self.steps > MAX_STEPS:
            raise _GiveUp
        for reg in regs:
            vals = [s.get(reg) or default(reg) for s in states]
            v = vals[0]
            for w in vals[1:]:
                v = merge(v, w, divergent, site)
            out[reg] = v
        return out

    def block(self, fl: Flow, b: int, st: dict, ctx: tuple, watch: Mapping[int, str] | None) -> dict | None:
        """The state after block `b` from `st` (None: it calls a function that never returns)."""
        st = dict(st)
        for i in range(fl.blocks[b].start, fl.blocks[b].end):
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise _GiveUp
            if watch is not None and i in watch:
                self.seen[i] = self.get(st, watch[i])
            st = self.step(fl, i, st, ctx)
            if st is None:
                return None
        return st

    # --- one instruction --------------------------------------------------------------------------------------

    def step(self, fl: Flow, i: int, st: dict, ctx: tuple) -> dict | None:
        """`st` after instruction `i` (changed in place); None after a call that never returns."""
        ins = fl.body[i]
        guard = ins.predicate.strip()
        root = ins.root
        known = self.known_pred(guard, st) if guard not in _ALWAYS else True
        if guard in _NEVER or root in _NO_DEST or known is False:
            return st
        if root in CALLS:
            return self.call(fl, ins, i, st, ctx)
        base = root[1:] if root.startswith("U") and (root[1:] in RULES or root[1:] in PURE
                                                      or root[1:] in SETP) else root
        mods = ins.opcode.split(".")[1:]
        reg, preds, toks = split(ins, base)
        if base == "I2F" and "RP" in mods and toks:
            self.divisors.add(self.key(self.operand(toks[-1], st)))
        values = self.evaluate(ins, base, mods, toks, st)
        if base == "R2P":  # writes predicates P0 to P6 from a register's bits
            preds = [f"P{n}" for n in range(7)]
        guarded = known is None
        divergent = guarded and not self.uniform_pred(guard, st)
        writes = [(next_reg(reg, k), v) for k, v in enumerate(values)] if reg else []
        writes += [(p.lstrip("!"), self.predicate(base, mods, toks, st, k == 0)) for k, p in enumerate(preds)]
        for k, (r, v) in enumerate(writes):
            if r in ("RZ", "URZ", "PT", "UPT"):
                continue
            if r.startswith(("UR", "UP")):
                v = Value(ZERO, v.val if v.exact_uniform() else None, False, v.site, v.test)
            site = v.site if v.site and not guarded else (ctx, i, k)
            v = Value(v.d, v.val, v.step, site, v.test)
            st[r] = merge(self.get(st, r), v, divergent, site) if guarded else v
        return st

    def predicate(self, base: str, mods: list[str], toks: list[str], st: dict, first: bool) -> Value:
        """The value of a predicate an instruction writes: the same in every thread when its inputs are."""
        if base in WARP_UNIFORM:
            return uniform()
        if not (base in RULES or base in PURE):
            return UNKNOWN
        vals = [self.operand(t, st) for t in toks if not PRED.match(t)]
        v = opaque(vals, all(self.uniform_pred(t, st) for t in toks if PRED.match(t)))
        test = self._test(base, mods, toks, st) if first else None
        return Value(v.d, None, v.step, (), test) if test is not None else v

    def evaluate(self, ins, base: str, mods: list[str], toks: list[str], st: dict) -> list[Value]:
        """The values an instruction writes to its destination register and the ones after it."""
        n = dest_count(base, mods)
        rule = RULES.get(base)
        vtoks = [t for t in toks if not PRED.match(t)]
        if rule is not None:
            out = rule(self, ins, mods, vtoks, toks, st)
        elif base in PURE:
            out = [opaque([self.operand(t, st) for t in vtoks], all(self.uniform_pred(t, st) for t in toks
                                                                     if PRED.match(t)))]
            out *= pure_width(base, mods)
        elif base in WARP_UNIFORM:
            out = [uniform()]
        else:
            out = []
        return (out + [UNKNOWN] * n)[:max(n, len(out))]

    def call(self, fl: Flow, ins, i: int, st: dict, ctx: tuple) -> dict | None:
        """The state after a CALL: its function interpreted from `st` where the listing has it (nvdisasm names it;
        cuobjdump gives its offset in the same body), else every register unknown."""
        m = _CALL_TARGET.search(ins.operands)
        h = None if m else re.search(r"(?:^|\s)(0x[0-9a-fA-F]+)\s*$", ins.operands)
        at = fl.index(int(h.group(1), 16)) if h else None
        key = m.group(1) if m else (id(fl), at) if at is not None else None
        if key is not None and (at is not None or key in self.callees) and len(ctx) < MAX_CALL_DEPTH:
            if key not in self.flows:
                body, labels = self.callees[key] if at is None else (fl.body[at:], {})
                self.flows[key] = flow(body, dict(labels or {}))
            return self.run(self.flows[key], st, ctx + (i,))
        return {r: (uniform() if r.startswith(("UR", "UP")) else UNKNOWN) for r in st}


# --- the answers -------------------------------------------------------------------------------------------------

def _stride(v: Value | None, base: int, where: object, offset: int) -> Stride:
    if v is None or v.d is None:
        return Stride(offset=offset)
    k = as_int(v.d)
    value = (v.site, where) if v.site else None
    if k is not None:
        return Stride(signed(k), exact=not v.step, value=value, offset=offset)
    terms = tuple((key - base, signed(c)) for key, c in v.d if key != -1)
    constant = next((signed(c) for key, c in v.d if key == -1), 0)
    return Stride(None, terms, constant, not v.step, value, offset)


def strides(body: Sequence, found: Sequence, base: int, labels: Mapping[str, int] | None = None,
            callees: Mapping[str, tuple[Sequence, Mapping[str, int] | None]] | None = None) -> tuple[Stride, ...]:
    """The Stride of each access in `found` (sass_access.accesses of `body`, or any objects with `offset` and
    `nbytes`; fences and accesses not in `body` get an unknown one), in bytes per thread, from the instructions of
    one function `body` (`labels`: its labels, name -> offset) whose parameters start at constant-bank offset
    `base` (0x210 on sm_90); `callees`: the listing's functions by name (instructions, labels), which CALLs are
    followed into. Never raises: unexpected code gives unknown strides."""
    try:
        fl = flow(body, dict(labels or {}))
        if not fl.complete:
            return tuple(Stride() for _ in found)
        where = []
        watch: dict[int, str] = {}
        for a in found:
            i = fl.index(a.offset) if getattr(a, "nbytes", None) else None
            addr = address(fl.body[i]) if i is not None else None
            if addr:
                watch[i] = addr[0]
            where.append((i, addr))
        ip = _Interp(callees)
        ip.run(fl, {}, (), watch)
        return tuple(_stride(ip.seen.get(i), base, fl.block_of[i], addr[1]) if addr else Stride()
                     for i, addr in where)
    except Exception:  # noqa: BLE001 - advice only: malformed code, or more work than the bounds, is unknown
        return tuple(Stride() for _ in found)


def kernel_strides(listing, mangled: str) -> tuple[tuple, tuple[Stride, ...]]:
    """(sass_access.accesses, strides) of the kernel `mangled` of a parsed listing (grader.feedback.sass.Listing:
    its functions, labels, parameter base and arch), the functions it calls followed; ((), ()) when the listing
    has no such function."""
    body = listing.functions.get(mangled)
    if body is None:
        return (), ()
    base = listing.param_base.get(mangled) or PARAM_BASE.get(listing.arch or "", PARAM_BASE["sm_90"])
    labels = getattr(listing, "labels", {}) or {}
    found = accesses(body, base, labels.get(mangled))
    callees = {n: (b, labels.get(n)) for n, b in listing.functions.items() if n != mangled}
    return found, strides(body, found, base, labels.get(mangled), callees)
