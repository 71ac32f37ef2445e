"""Which guards of a PTX function every launch decides the same way: the values of its registers, where they
follow from the kernel's parameters (ranges, or exact values of one launch) and literals.

A register is known only where it has one definition in the body (counting every destination of every
statement: a vector load's, a `p|q`'s; a guarded definition leaves it unknown), that definition is one of the
instructions below, each register it reads is known, and the definition runs before every read of it on every
path (a must-be-defined data flow over the body's blocks, every branch taken both ways; a read before the
definition sees an undefined register). The values, each an interval of integers whose low `width` bits are the
register's (PTX ISA "Integer Arithmetic Instructions", "Logic and Shift Instructions", "Comparison and Selection
Instructions", "Data Movement and Conversion Instructions"):

- `ld.param.{b,u,s}{8..64}` of a parameter of the entry given in `params` (no wider than it is declared; into a
  wider register it is sign extended for an `.s` type, zero extended otherwise, as for `cvt`: PTX ISA "Operand Size
  Exceeding Instruction-Type Size");
- `mov`, `cvt` between integer types (wrapping to the destination's width, sign or zero extended by the source's
  type; `.sat` is not read), `add`, `sub`, `mul.lo`, `mul.hi`, `mul.wide`, `mad.lo`, `mad.wide`, `neg`, `abs`, `not`,
  `and`, `or`, `xor`, `shl`, `shr` (amounts past the width clamp to it), `div`, `rem` (C's truncation; a divisor
  that may be 0 leaves the result unknown: PTX gives no value for it), `min`, `max`, `selp`, read as signed for an
  `.s` type and unsigned otherwise, results wrapped to the type's width;
- predicates: `setp` of an integer comparison (`.s` types signed, `.u` unsigned: `lt` and `lo` alike, `.b` only
  eq and ne, as ptxas accepts them), with `.and`/`.or`/`.xor` of a third predicate, `p|q`, and `and`, `or`, `xor`,
  `not`, `mov` of `.pred`, all in three-valued logic (unknown stays unknown).

An interval that covers its type's whole range is unknown; anything not listed is unknown; a comparison is decided
only when it holds, or fails, for every pair of values of its operands' intervals.
"""

from __future__ import annotations

import re

from grader.feedback.ptx_statements import Budget, Code, Instr

_OP = re.compile(r"^(add|sub|min|max|div|rem|and|or|xor|shl|shr|neg|not|abs|mov|selp|mul\.lo|mul\.hi|mul\.wide"
                 r"|mad\.lo|mad\.wide|cvt\.[bsu](?:8|16|32|64)|ld\.param)\.([bsu])(8|16|32|64)$")
_SETP = re.compile(r"^setp\.(eq|ne|lt|le|gt|ge|lo|ls|hi|hs)(?:\.(and|or|xor))?\.([bsu])(16|32|64)$")
_LOGIC = re.compile(r"^(and|or|xor|not|mov)\.pred$")
_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}

Interval = tuple[int, int]


def wrap(lo: int, hi: int, bits: int, signed: bool) -> Interval | None:
    """[lo, hi] as values of a `bits`-wide register read signed or unsigned: shifted by a multiple of 2^bits into
    the type's range when all of it fits there; None when it does not (some value wraps, or it is the whole
    range: unknown)."""
    size = 1 << bits
    base = -(size >> 1) if signed else 0
    if hi - lo >= size - 1:
        return None
    k = (lo - base) // size
    lo, hi = lo - k * size, hi - k * size
    return (lo, hi) if hi < base + size else None


def decided(op: str, a: Interval, b: Interval) -> bool | None:
    """The comparison `a op b` (eq ne lt le gt ge) when it holds for every pair of values of the two intervals,
    or fails for every one; None otherwise."""
    (a0, a1), (b0, b1) = a, b
    rules = {"lt": (a1 < b0, a0 >= b1), "le": (a1 <= b0, a0 > b1), "gt": (a0 > b1, a1 <= b0),
             "ge": (a0 >= b1, a1 < b0), "eq": (a0 == a1 == b0 == b1, a1 < b0 or b1 < a0)}
    always, never = rules["eq" if op == "ne" else op]
    if op == "ne":
        always, never = never, always
    return True if always else False if never else None


class _Reader:
    """The operands of one statement as intervals or truth values: registers from `values` (unknown when in
    `missing`, not defined on every path there, or, with `allowed`, not in it), literals, parameters of `entry`
    from `params`."""

    def __init__(self, values: dict, widths: dict, missing: set, allowed: dict | None, entry: str,
                 params: dict[int, Interval], param_bits: dict[int, int] | None) -> None:
        self.values, self.widths, self.missing, self.allowed = values, widths, missing, allowed
        self.entry, self.params, self.param_bits = entry, params, param_bits

    def int(self, op, bits: int, signed: bool) -> Interval | None:
        if op is None:
            return None
        if op[0] == "#":
            return wrap(op[1], op[1], bits, signed)
        if op[0] == "p":
            ok = op[1] == self.entry and op[2] in self.params and (
                self.param_bits is None or bits <= self.param_bits.get(op[2], 0))
            return wrap(*self.params[op[2]], bits, signed) if ok else None
        if op[0] != "%" or op[2] or not self._usable(op[1]):
            return None
        v, width = self.values.get(op[1]), self.widths.get(op[1])
        return wrap(*v, bits, signed) if isinstance(v, tuple) and width and bits <= width else None

    def pred(self, op) -> bool | None:
        if op is not None and op[0] == "#" and op[1] in (0, 1):
            return bool(op[1])
        if op is None or op[0] != "%" or not self._usable(op[1]) or self.widths.get(op[1]) != 0:
            return None
        v = self.values.get(op[1])
        return None if not isinstance(v, bool) else v != op[2]

    def _usable(self, key: int) -> bool:
        return key not in self.missing and (self.allowed is None or key in self.allowed)


def _logic(op: str, a: bool | None, b: bool | None) -> bool | None:
    if op == "and":
        return False if a is False or b is False else True if a and b else None
    if op == "or":
        return True if a is True or b is True else False if a is False and b is False else None
    return None if a is None or b is None else a != b


def _hull(values: list[int]) -> Interval:
    return min(values), max(values)


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _arith(name: str, a: Interval, b: Interval | None, c: Interval | None, bits: int) -> Interval | None:
    """The mathematical interval of `name` (an _OP name) of the operand intervals, before wrapping."""
    (a0, a1), (b0, b1) = a, b or (0, 0)
    if name == "add":
        return a0 + b0, a1 + b1
    if name == "sub":
        return a0 - b1, a1 - b0
    if name in ("min", "max"):
        f = min if name == "min" else max
        return f(a0, b0), f(a1, b1)
    if name in ("mul.lo", "mul.wide", "mad.lo", "mad.wide", "mul.hi"):
        lo, hi = _hull([a0 * b0, a0 * b1, a1 * b0, a1 * b1])
        if name == "mul.hi":
            return lo >> bits, hi >> bits
        return (lo + c[0], hi + c[1]) if name.startswith("mad") else (lo, hi)
    if name in ("shl", "shr"):
        b0, b1 = min(b0, bits), min(b1, bits)
        corners = [x << s if name == "shl" else x >> s for x in (a0, a1) for s in (b0, b1)]
        return _hull(corners)
    if name == "neg":
        return -a1, -a0
    if name == "not":
        return ~a1, ~a0
    if name == "abs":
        return (a0, a1) if a0 >= 0 else (-a1, -a0) if a1 <= 0 else (0, max(-a0, a1))
    return _divide(name, a, b, bits) if name in ("div", "rem") else _bits(name, a, b)


def _divide(name: str, a: Interval, b: Interval, bits: int) -> Interval | None:
    """div or rem, truncating as C does; None when the divisor may be 0 or the quotient may overflow."""
    (a0, a1), (b0, b1) = a, b
    if b0 <= 0 <= b1 or (a0 <= -(1 << (bits - 1)) and b0 <= -1 <= b1):
        return None
    if name == "div":
        return _hull([_tdiv(x, y) for x in (a0, a1) for y in (b0, b1)])
    if a0 == a1 and b0 == b1:
        return a0 - b0 * _tdiv(a0, b0), a0 - b0 * _tdiv(a0, b0)
    top = max(abs(b0), abs(b1)) - 1
    if a0 >= 0:
        return (a0, a1) if a1 < min(abs(b0), abs(b1)) else (0, min(a1, top))
    return (max(a0, -top), 0) if a1 <= 0 else (max(a0, -top), min(a1, top))


def _bits(name: str, a: Interval, b: Interval) -> Interval | None:
    """and, or, xor of unsigned intervals (both at least 0)."""
    (a0, a1), (b0, b1) = a, b
    if a0 == a1 and b0 == b1:
        v = a0 & b0 if name == "and" else a0 | b0 if name == "or" else a0 ^ b0
        return v, v
    if name == "and":
        top = min(a1, b1)
        for (_, x1), (y0, y1) in ((a, b), (b, a)):
            if y0 == y1:
                top = min(top, y0 & ((1 << x1.bit_length()) - 1))
        return 0, top
    mask = (1 << max(a1, b1).bit_length()) - 1
    return (max(a0, b0), mask) if name == "or" else (0, mask)


def _compute(ins: Instr, r: _Reader, widths: dict) -> dict[int, object]:
    """{register key: value} that the instruction `ins` gives its destinations ({} when it gives none known)."""
    if not ins.ops or ins.guard is not None or not ins.ops[0]:
        return {}
    first = ins.ops[0]
    if m := _SETP.match(ins.opcode):
        return _setp(m, ins, r)
    if m := _LOGIC.match(ins.opcode):
        name, vals = m.group(1), [r.pred(op) for op in ins.ops[1:3]]
        v = (None if vals[0] is None else not vals[0]) if name == "not" else vals[0] if name == "mov" else (
            _logic(name, *vals) if len(vals) == 2 else None)
        return {first[1]: v} if first[0] == "%" and v is not None else {}
    m = _OP.match(ins.opcode)
    if not m or first[0] != "%":
        return {}
    name, signed, bits = m.group(1), m.group(2) == "s", int(m.group(3))
    src_bits, out_bits, out_signed = bits, bits, signed
    if name.startswith("cvt"):
        out_signed, out_bits = name[4] == "s", int(name[5:])
    elif name in ("mul.wide", "mad.wide"):
        out_bits = 2 * bits
    if name in ("ld.param", "mov") or name.startswith("cvt"):
        v = r.int(ins.ops[1] if len(ins.ops) > 1 else None, src_bits, signed)
    elif name == "selp":
        v = _select(ins, r, bits, signed)
    else:
        v = _operate(name, ins, r, bits, signed)
    if v is None or (v := wrap(*v, out_bits, out_signed)) is None:
        return {}
    width, extends = widths.get(first[1]), name == "ld.param" or name.startswith("cvt")
    fits = width == out_bits or (width and width > out_bits and (extends or 0 <= v[0] and v[1] < 1 << (out_bits - 1)))
    return {first[1]: v} if fits else {}


def _operate(name: str, ins: Instr, r: _Reader, bits: int, signed: bool) -> Interval | None:
    """The mathematical interval of an arithmetic or logic instruction's result, or None."""
    if name in ("and", "or", "xor", "not"):
        signed = False
    count = {"neg": 1, "not": 1, "abs": 1, "mad.lo": 3, "mad.wide": 3}.get(name, 2)
    if len(ins.ops) != count + 1:
        return None
    shift = name in ("shl", "shr")
    a = r.int(ins.ops[1], bits, signed)
    b = r.int(ins.ops[2], 32 if shift else bits, False if shift else signed) if count > 1 else None
    c = r.int(ins.ops[3], 2 * bits if name == "mad.wide" else bits, signed) if count > 2 else None
    if a is None or (count > 1 and b is None) or (count > 2 and c is None):
        if name == "and" and (a == (0, 0) or b == (0, 0)):
            return 0, 0
        return None
    return _arith(name, a, b, c, bits)


def _select(ins: Instr, r: _Reader, bits: int, signed: bool) -> Interval | None:
    """selp d, a, b, p: a where p, b where not p, either (their hull) where p is unknown."""
    if len(ins.ops) != 4:
        return None
    p = r.pred(ins.ops[3])
    a, b = (r.int(op, bits, signed) for op in ins.ops[1:3])
    if p is not None:
        return a if p else b
    return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))


def _setp(m: re.Match, ins: Instr, r: _Reader) -> dict[int, object]:
    """setp.cmp[.bop].type p[|q], a, b[, c]: p and, where written, q (the comparison's negation, combined)."""
    cmp, bop, kind, bits = m.group(1), m.group(2), m.group(3), int(m.group(4))
    value = None
    if not ((kind == "s" and cmp in _UNSIGNED) or (kind == "b" and cmp not in ("eq", "ne"))) and len(ins.ops) >= 3:
        a, b = r.int(ins.ops[1], bits, kind == "s"), r.int(ins.ops[2], bits, kind == "s")
        value = decided(_UNSIGNED.get(cmp, cmp), a, b) if a and b else None
    if (len(ins.ops) == 4) != bool(bop):
        return {}
    third = r.pred(ins.ops[3]) if bop else None
    p = _logic(bop, value, third) if bop else value
    q = _logic(bop, None if value is None else not value, third) if bop else (None if value is None else not value)
    first = ins.ops[0]
    keys = (first[1], None) if first[0] == "%" else (first[1], first[2]) if first[0] == "|" else (None, None)
    return {k: v for k, v in zip(keys, (p, q), strict=True) if k is not None and v is not None}


def guards(code: Code, entry: str, params: dict[int, Interval], param_bits: dict[int, int] | None,
           budget: Budget) -> dict[int, bool]:
    """{statement index: whether its guard holds} for the guarded statements of `code` whose guard every launch
    decides alike, when the parameters of `entry` at the indices of `params` hold values in their intervals
    (param_bits: each one's declared width in bits; None: a load is taken to read a whole parameter). {} for an
    odd body. Charges `budget`; raises OverBudget (grader.feedback.ptx_statements) past it."""
    if code.odd:
        return {}
    ins = code.code
    count: dict[int, int] = {}
    for i in ins:
        budget.charge()
        for k in i.dests:
            count[k] = count.get(k, 0) + 1
    single = {k: n for n, i in enumerate(ins) if i.guard is None for k in i.dests if count[k] == 1}
    roots = [i.guard for i in ins if i.guard is not None and i.guard >= 0]
    context = (code.widths, entry, params, param_bits)
    first = _evaluate(roots, ins, single, context, {}, None, budget)
    relevant = {k: b for b, k in enumerate(sorted(k for k in first if k in single))}
    if not any(isinstance(first.get(k), bool) for k in roots):
        return {}
    missing = _undefined(code, single, relevant, budget)
    values = _evaluate(roots, ins, single, context, missing, relevant, budget)
    out = {}
    for n, i in enumerate(ins):
        if i.guard is not None and i.guard >= 0 and i.guard not in missing.get(n, ()):
            v = values.get(i.guard)
            if isinstance(v, bool):
                out[n] = v != i.negated
    return out


def _evaluate(roots: list[int], ins: list[Instr], single: dict[int, int], context: tuple,
              missing: dict[int, set], allowed: dict | None, budget: Budget) -> dict[int, object]:
    """The values of `roots` and of the registers they follow from, each definition after those it reads (a
    register met again while it is being read, a loop-carried one, is unknown); _Reader says which reads count."""
    widths = context[0]
    values: dict[int, object] = {}
    state: dict[int, int] = {}
    done: set[int] = set()
    for root in roots:
        stack = [root]
        while stack:
            key = stack[-1]
            n = single.get(key)
            if state.get(key) == 2 or n is None:
                state[key] = 2
                stack.pop()
                continue
            budget.charge()
            if key not in state:
                state[key] = 1
                deps = [d for d in ins[n].reads if d not in state]
                if deps:
                    stack.extend(deps)
                    continue
            if n not in done:
                done.add(n)
                reader = _Reader(values, widths, missing.get(n, set()), allowed, *context[1:])
                values.update(_compute(ins[n], reader, widths))
            state[key] = 2
            stack.pop()
    return values


def _undefined(code: Code, single: dict[int, int], relevant: dict[int, int], budget: Budget) -> dict[int, set]:
    """{statement index: the `relevant` registers it reads (or guards on) that are not defined on every path to
    it} (relevant: register key -> bit). Blocks start at labels and after branches; a `bra` goes to its targets
    (every block for None), `brx.idx` to every block, a guarded one also on; the greatest fixed point."""
    ins = code.code
    n = len(ins)
    starts = [i for i in range(n) if i == 0 or ins[i].labelled or ins[i - 1].kind]
    block = [0] * n
    for b, s in enumerate(starts):
        for i in range(s, starts[b + 1] if b + 1 < len(starts) else n):
            block[i] = b
    budget.charge(n)
    gen = [0] * len(starts)
    for k, bit in relevant.items():
        gen[block[single[k]]] |= 1 << bit
    preds: list[list[int]] = [[] for _ in starts]
    anywhere: list[int] = []
    for b in range(len(starts)):
        last = ins[(starts[b + 1] if b + 1 < len(starts) else n) - 1]
        budget.charge(1 + len(last.targets or ()))
        if last.kind == "brx" or (last.kind == "bra" and last.targets is None):
            anywhere.append(b)
        elif last.kind == "bra":
            for t in last.targets:
                preds[block[t]].append(b)
        if (not last.kind or last.guard is not None) and b + 1 < len(starts):
            preds[b + 1].append(b)
    top = (1 << len(relevant)) - 1
    entry_in, out = [top] * len(starts), [top] * len(starts)
    changed = True
    while changed:
        changed = False
        budget.charge(len(starts) + sum(map(len, preds)))
        any_out = top
        for b in anywhere:
            any_out &= out[b]
        for b in range(len(starts)):
            x = 0 if b == 0 else top
            for p in preds[b]:
                x &= out[p]
            x &= any_out if anywhere else top
            if x != entry_in[b] or (x | gen[b]) != out[b]:
                entry_in[b], out[b], changed = x, x | gen[b], True
    return _missing(ins, starts, entry_in, relevant, budget)


def _missing(ins: list[Instr], starts: list[int], entry_in: list[int], relevant: dict[int, int],
             budget: Budget) -> dict[int, set]:
    """_undefined's answer from each block's registers defined on entry."""
    out: dict[int, set] = {}
    n = len(ins)
    for b, s in enumerate(starts):
        defined = entry_in[b]
        for i in range(s, starts[b + 1] if b + 1 < len(starts) else n):
            budget.charge()
            reads = [*ins[i].reads, *((ins[i].guard,) if ins[i].guard is not None else ())]
            gone = {k for k in reads if k in relevant and not defined >> relevant[k] & 1}
            if gone:
                out[i] = gone
            for k in ins[i].dests:
                if k in relevant:
                    defined |= 1 << relevant[k]
    return out
