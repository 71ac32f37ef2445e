"""What a register holds with respect to threadIdx.x, for grader.feedback.sass_stride's interpretation of the machine
code (SASS): the abstract values (a derivative, exact or except where something steps, and the value itself where it
is the same in every thread) and the rule of each opcode. The opcodes' meanings are those of NVIDIA's CUDA binary
utilities documentation ("Instruction Set Reference"); values are the low 32 bits of a register, a 64-bit address
tracked by its low register:

- S2R SR_TID.X: 1; SR_TID.Y/Z, SR_CTAID.*: 0; SR_LANEID: 1 within a warp; constants, c[0x0][...] (LDC, ULDC or an
  operand) and every uniform register (URn, one value per warp by definition): 0, with the value where it is
  an immediate or a constant-bank word;
- IMAD a*b+c (.MOV, .SHL, .IADD, .U32, .WIDE, .WIDE.U32), IADD3, VIADD, LEA (a << s) + b, SHF.L, MOV: exact
  (a product needs one factor with derivative 0 and a known value); SHF.R / SHR: exact when the shift divides the
  derivative; the high word of a 64-bit result (.WIDE's second register, IADD3.X, IMAD.X, LEA.HI, SHF.L.U64.HI):
  its inputs' derivative, except where a carry steps;
- IMAD.HI of a value with an integer derivative by one with derivative 0 (the multiply-high of an integer division
  by a run-time value, sass.py's module docstring): 0 except where the quotient steps (the divisor is taken to be
  larger than the index's step between threads; a quotient by 1 steps at every thread);
- SEL, IMNMX, a guarded instruction, and a join of two paths: the inputs' common derivative; when the choice can
  differ between neighbouring threads (a predicate computed from values that differ, or a join of two branches),
  only "except where the choice differs". Two threads at one execution of a loop's header came by the same edge
  (the first iteration or a later one), so a grid-stride loop's uniform increment keeps the derivative exact;
  leaving a loop, its values step where two threads ran a different number of iterations;
- LOP3, I2F, F2I, float and every other pure operation: 0 when its inputs are all 0, else unknown; loads: 0 from an
  address with derivative 0, else unknown; SHFL, MATCH, atomics, clocks and anything not listed: unknown;
- CALL of a function in the listing (a division routine; nvdisasm names it, cuobjdump gives its offset in the
  kernel's own body): interpreted with the caller's registers (at most
  sass_stride.MAX_CALL_DEPTH deep); any other CALL makes every register unknown;
- the divisor of an integer division (the operand of I2F...RP) is taken to be nonzero, division by zero being
  undefined in C++: the fix-up NVRTC emits for a zero divisor (`@!P LOP3 ..., 0x33`, `SEL ..., 0xffffffff, P`
  where P tests the divisor against 0) is not followed.

The rules take the interpreter (`ip`: sass_stride's, with `operand`, `get`, `bank`, `high_of`, `uniform_pred` and
`known_pred`), the instruction, its opcode's modifiers, its value operands (`vt`), all its source operands (`toks`)
and the registers' values (`st`), and return the values of the registers it writes, from its destination on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from grader.feedback.sass_access import address

__all__ = ["CBANK", "INT", "NUMBER", "PRED", "PURE", "REG", "RULES", "SETP", "UNKNOWN", "WARP_UNIFORM", "ZERO", "Lin",
           "Value", "add", "as_int", "bitnot", "const", "default", "dest_count", "merge", "neg", "next_reg", "opaque",
           "pure_width", "signed", "split", "uniform", "varying"]

_MASK = 0xFFFFFFFF
PRED = re.compile(r"^!?U?P(?:T|\d)$")
REG = re.compile(r"^([-~]?)(\|?)(U?R(?:\d+|Z))((?:\.\w+)*)\|?$")
CBANK = re.compile(r"^(-?)c\[(0x[0-9a-fA-F]+)\]\[([^\]]*)\]$")
INT = re.compile(r"^-?(?:0x[0-9a-fA-F]+|\d+)$")
NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|INF|QNAN|NAN)$")
SETP = {"ISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "PLOP3", "FCHK"}
"""Opcodes that write predicates only: their first (at most two) leading predicate operands."""
PURE = {"I2F", "F2I", "I2I", "F2F", "FRND", "I2FP", "F2IP", "MUFU", "FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSET",
         "FADD32I", "FMUL32I", "FFMA32I", "DADD", "DMUL", "DFMA", "DMNMX", "DSET", "HADD2", "HMUL2", "HFMA2",
         "HMNMX2", "HSET2", "F2FP", "POPC", "FLO", "BREV", "BMSK", "BFE", "BFI", "PRMT", "LOP", "LOP3", "LOP32I",
         "IABS", "IDP", "IDP4A", "SGXT", "P2R", "R2P", "ISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "PLOP3", "FCHK",
         "ICMP", "FSWZADD"}
_LOADS = {"LDG", "LD", "LDS", "LDL", "LDSM", "LDC"}
WARP_UNIFORM = {"VOTE", "REDUX"}  # every thread of the warp gets the same result
_SPECIAL = {"SR_TID.X": 1, "SR_LANEID": 1}
_UNIFORM_SPECIAL = re.compile(r"^SR_(?:TID\.[YZ]|CTAID\.[XYZ]|SMID|NSMID|GRIDID|WARPID|VIRTUALSMID)$")

Lin = tuple[tuple[int, int], ...]
"""A linear form: ((key, coefficient), ...) sorted, key -1 the constant term, others constant-bank byte offsets;
coefficients modulo 2^32, none zero."""
ZERO: Lin = ()


def _lin(terms: dict[int, int]) -> Lin:
    return tuple(sorted((k, c & _MASK) for k, c in terms.items() if c & _MASK))


def const(c: int) -> Lin:
    """The constant `c` as a linear form."""
    return _lin({-1: c})


def add(a: Lin | None, b: Lin | None) -> Lin | None:
    """a + b (None where either is unknown)."""
    if a is None or b is None:
        return None
    d = dict(a)
    for k, c in b:
        d[k] = d.get(k, 0) + c
    return _lin(d)


def _scale(a: Lin | None, k: int) -> Lin | None:
    return None if a is None else _lin({key: c * k for key, c in a})


def as_int(a: Lin | None) -> int | None:
    """The integer a linear form is (0 for ZERO); None when it has a constant-bank word or is unknown."""
    if a is None:
        return None
    if not a:
        return 0
    return a[0][1] if len(a) == 1 and a[0][0] == -1 else None


def _mul(a: Lin | None, b: Lin | None) -> Lin | None:
    ka, kb = as_int(a), as_int(b)
    return _scale(b, ka) if ka is not None else _scale(a, kb) if kb is not None else None


def signed(c: int) -> int:
    """A 32-bit word as a signed integer (0xfffffffc -> -4)."""
    return c - (1 << 32) if c & 0x80000000 else c


@dataclass(frozen=True, slots=True)
class Value:
    """A register's abstract value: derivative `d` (None: unknown), value `val` (only for d == ZERO and exact),
    `step` (holds except where a quotient, a carry or a thread-dependent choice steps) and `site` (the definition
    it comes from: equal sites, equal values)."""

    d: Lin | None
    val: Lin | None = None
    step: bool = False
    site: tuple = ()
    test: object = None  # a predicate's: it is "this value != 0" (the interpreter's key of the value)

    def exact_uniform(self) -> bool:
        """The same in every thread, without steps."""
        return self.d == ZERO and not self.step


UNKNOWN = Value(None)


def uniform(val: Lin | None = None, step: bool = False) -> Value:
    """The same in every thread (except at steps, with `step`), with value `val` where known."""
    return Value(ZERO, None if step else val, step)


def varying(d: Lin | None, step: bool = False) -> Value:
    """A value with derivative `d` (None: unknown) whose own value is not known."""
    return UNKNOWN if d is None else Value(d, None, step)


def opaque(values: Sequence[Value], preds_uniform: bool = True) -> Value:
    """A pure function of `values`: the same in every thread when they all are, else (or with none) unknown."""
    if values and preds_uniform and all(v.d == ZERO for v in values):
        return uniform(step=any(v.step for v in values))
    return UNKNOWN


def neg(v: Value) -> Value:
    """-v."""
    return Value(_scale(v.d, -1), _scale(v.val, -1), v.step)


def bitnot(v: Value) -> Value:
    """~v, which is -v - 1."""
    return Value(_scale(v.d, -1), add(_scale(v.val, -1), const(-1)), v.step)


def merge(a: Value, b: Value, divergent: bool, site: tuple) -> Value:
    """The value of a choice between `a` and `b` (module docstring); `divergent`: neighbouring threads may choose
    differently."""
    if a == b:
        return a
    step = a.step or b.step
    if a.site and a.site == b.site:
        return Value(a.d, None if step else a.val, step, a.site, a.test if a.test == b.test else None)
    d = a.d if a.d == b.d else None
    if d is None:
        return Value(None, site=site)
    val = a.val if a.val == b.val and not step else None
    if divergent and not (d == ZERO and val is not None):
        step, val = True, None
    return Value(d, val, step, site)


def _prod(a: Value, b: Value) -> Value:
    """a * b (the low 32 bits)."""
    if a.d == ZERO and b.d == ZERO:
        return uniform(_mul(a.val, b.val) if a.val is not None and b.val is not None else None, a.step or b.step)
    for u, w in ((a, b), (b, a)):
        if u.exact_uniform() and u.val is not None:
            return varying(_mul(u.val, w.d), w.step)
    return UNKNOWN


def _sum(values: Sequence[Value], step: bool = False) -> Value:
    d: Lin | None = ZERO
    val: Lin | None = ZERO
    for v in values:
        d, val = add(d, v.d), add(val, v.val) if val is not None and v.val is not None else None
        step = step or v.step
    if d == ZERO:
        return uniform(val, step)
    return varying(d, step)


def _shl(v: Value, s: int | None) -> Value:
    if s is None or not 0 <= s < 32:
        return opaque([v])
    return Value(_scale(v.d, 1 << s), _scale(v.val, 1 << s), v.step) if v.d is not None else UNKNOWN


def _shr(v: Value, s: int | None, step: bool = False) -> Value:
    """x >> s: exact where 2^s divides x's integer derivative; 0 except at steps where it is below 2^s."""
    if v.d == ZERO:
        return uniform(step=v.step or step)
    k = as_int(v.d)
    if s is None or k is None or not 0 <= s < 32:
        return UNKNOWN
    k = signed(k)
    if k % (1 << s) == 0:
        return varying(const(k >> s), v.step or step)
    return uniform(step=True) if abs(k) < (1 << s) else UNKNOWN


def _high(inputs: Sequence[Value], hi: Value) -> Value:
    """The high word of a 64-bit result whose low word is computed from `inputs` and whose high inputs sum to
    `hi`: the same everywhere when they all are, else hi's derivative except where a carry steps."""
    if all(v.exact_uniform() for v in inputs) and hi.exact_uniform():
        return uniform()
    if any(v.d is None for v in inputs) or hi.d is None:
        return UNKNOWN
    return Value(hi.d, None, True)


def _int(tok: str) -> int | None:
    t = tok.strip()
    return int(t, 0) if INT.match(t) else None


def default(reg: str) -> Value:
    """A register no instruction has written: unknown, but the same in every thread for a uniform one."""
    return uniform() if reg.startswith(("UR", "UP")) or reg in ("PT", "UPT") else UNKNOWN


def split(ins, base: str) -> tuple[str | None, list[str], list[str]]:
    """(register written, predicates written, source operands) of an instruction whose opcode's root is `base`:
    a SETP's first two predicates (`ISETP P0, PT, a, b, P1`, `PLOP3 P0, PT, P1, P2, ...`), VOTE's register and
    predicate (`VOTE.ANY R0, PT, P0`), else the leading predicates, the register, and the carries after it
    (`LOP3.LUT P0, RZ, ...`, `IADD3 R10, P0, R2, ...`)."""
    args = ins.args()
    if base in SETP:
        k = 0
        while k < len(args) and k < 2 and PRED.match(args[k]):
            k += 1
        return None, args[:k], args[k:]
    if base == "VOTE":
        reg = args[0] if args and re.fullmatch(r"U?R(?:\d+|Z)", args[0]) else None
        pred = args[1:2] if reg and len(args) > 1 and PRED.match(args[1]) else []
        return reg, pred, args[1 + len(pred):] if reg else args
    k, preds, reg = 0, [], None
    while k < len(args) and PRED.match(args[k]):
        preds.append(args[k])
        k += 1
    if k < len(args) and re.fullmatch(r"U?R(?:\d+|Z)", args[k]):
        reg, k = args[k], k + 1
        while k < len(args) and PRED.match(args[k]):
            preds.append(args[k])
            k += 1
    return reg, preds, args[k:]


def dest_count(base: str, mods: list[str]) -> int:
    """Registers an instruction of opcode root `base` and modifiers `mods` may write (.128: 4; .64, .WIDE: 2;
    LDSM by its count; a ...MMA 8); those past the first that no rule gives a value to are unknown."""
    if base.endswith("MMA"):
        return 8  # a matrix multiply-accumulate writes a tile of registers (more for some: not followed)
    if base == "LDSM" and mods and mods[-1].isdigit():
        return int(mods[-1])  # LDSM.16.M88.4: four registers
    if "128" in mods:
        return 4
    if base == "CS2R":
        return 1 if "32" in mods else 2
    return 2 if "64" in mods or "WIDE" in mods else 1


def pure_width(base: str, mods: list[str]) -> int:
    """Registers a pure operation surely writes: 2 for a double (D...), an F2I or I2I to a 64-bit integer
    (`F2I.U64.TRUNC`: its first type is the result's) and an I2F or F2F to a double (`I2F.F64.U64`), else 1
    (`I2F.U64.RP` converts a 64-bit integer to a float)."""
    types = [m for m in mods if re.fullmatch(r"[USF](?:8|16|32|64)", m)]
    if base in ("DADD", "DMUL", "DFMA", "DMNMX"):
        return 2
    if base in ("F2I", "I2I"):
        return 2 if types and types[0] in ("U64", "S64") else 1
    if base in ("I2F", "F2F"):
        return 2 if types and types[0] == "F64" else 1
    return 1


def next_reg(reg: str, k: int = 1) -> str:
    """The register `k` after `reg` (R2 -> R3), the next of a 64-bit pair."""
    m = re.fullmatch(r"(U?R)(\d+)", reg)
    return f"{m.group(1)}{int(m.group(2)) + k}" if m else reg


# --- the rules, by opcode (the uniform datapath's U... versions share them) ------------------------------------

def _r_mov(ip, ins, mods, vt, toks, st) -> list[Value]:
    return [ip.operand(vt[0], st)] if vt else []


def _mulhi(a: Value, b: Value, c: Value) -> Value:
    """The high word of a * b, plus c (module docstring: a quotient's step)."""
    if a.d == ZERO and b.d == ZERO and c.d == ZERO:
        return uniform(step=a.step or b.step or c.step)
    for u, w in ((a, b), (b, a)):
        k = as_int(w.d)
        if u.d == ZERO and c.d == ZERO and k is not None and abs(signed(k)) < 1 << 16:
            return uniform(step=True)
    return UNKNOWN


def _r_imad(ip, ins, mods, vt, toks, st) -> list[Value]:
    if len(vt) < 3:
        return []
    a, b, c = (ip.operand(t, st) for t in vt[:3])
    if "HI" in mods:
        return [_mulhi(a, b, c)]
    if "RZ" in vt[:2] and "X" not in mods and "WIDE" not in mods:
        return [c]  # IMAD.MOV: a copy
    low = _sum([_prod(a, b), c], "X" in mods)
    return [low, _high([a, b, c], ip.high_of(vt[2], st))] if "WIDE" in mods else [low]


def _r_imul(ip, ins, mods, vt, toks, st) -> list[Value]:
    if len(vt) < 2:
        return []
    a, b = (ip.operand(t, st) for t in vt[:2])
    if "HI" in mods:
        return [_mulhi(a, b, Value(ZERO, ZERO))]
    low = _prod(a, b)
    return [low, _high([a, b], Value(ZERO, ZERO))] if "WIDE" in mods else [low]


def _r_add(ip, ins, mods, vt, toks, st) -> list[Value]:
    return [_sum([ip.operand(t, st) for t in vt], "X" in mods)]


def _r_lea(ip, ins, mods, vt, toks, st) -> list[Value]:
    """LEA d, a, b, s: (a << s) + b; LEA.HI d, a, b, c, s: b + the high word of {c:a} << s (.SX32: c is a's
    sign)."""
    v = [ip.operand(t, st) for t in vt]
    if "HI" not in mods:
        return [_sum([_shl(v[0], _int(vt[2])), v[1]], "X" in mods)] if len(v) >= 3 else []
    if "SX32" in mods and len(v) >= 3:
        a, b, s = v[0], v[1], _int(vt[2])
        c = uniform(step=not a.exact_uniform()) if a.d is not None else UNKNOWN
    elif len(v) >= 4:
        a, b, c, s = v[0], v[1], v[2], _int(vt[3])
    else:
        return []
    if all(x.exact_uniform() for x in (a, b, c)):
        return [uniform()]
    return [UNKNOWN] if a.d is None else [_sum([b, _shl(c, s)], True)]


def _r_iscadd(ip, ins, mods, vt, toks, st) -> list[Value]:
    if len(vt) < 3:
        return []
    return [_sum([_shl(ip.operand(vt[0], st), _int(vt[2])), ip.operand(vt[1], st)])]


def _r_shf(ip, ins, mods, vt, toks, st) -> list[Value]:
    """SHF.L/.R d, a, s, b: the funnel shift of {b:a} by s; .HI gives the high word."""
    if len(vt) < 3:
        return []
    a, sv, b = (ip.operand(t, st) for t in vt[:3])
    s = as_int(sv.val) if sv.exact_uniform() else None
    hi = "HI" in mods
    if "W" in mods or sv.d != ZERO:
        return [opaque([a, b, sv])]
    if "L" in mods and not hi:
        return [_shl(a, s)]
    if all(x.exact_uniform() for x in (a, b)):
        return [uniform()]
    if "L" in mods:
        w = _shl(b, s)
        return [UNKNOWN if a.d is None or w.d is None else Value(w.d, None, True)]
    if "R" in mods:
        return [_shr(b, s)] if hi else [_shr(a, s, b.step) if b.d == ZERO else UNKNOWN]
    return [opaque([a, b, sv])]


def _r_shl(ip, ins, mods, vt, toks, st) -> list[Value]:
    return [_shl(ip.operand(vt[0], st), _int(vt[1]))] if len(vt) >= 2 else []


def _r_shr(ip, ins, mods, vt, toks, st) -> list[Value]:
    return [_shr(ip.operand(vt[0], st), _int(vt[1]))] if len(vt) >= 2 else []


def _r_sel(ip, ins, mods, vt, toks, st) -> list[Value]:
    if len(vt) < 2:
        return []
    a, b = ip.operand(vt[0], st), ip.operand(vt[1], st)
    preds = [t for t in toks if PRED.match(t)]
    known = ip.known_pred(preds[-1], st) if preds else None
    if known is not None:
        return [a if known else b]
    return [merge(a, b, not all(ip.uniform_pred(t, st) for t in preds), ())]


def _r_minmax(ip, ins, mods, vt, toks, st) -> list[Value]:
    if len(vt) < 2:
        return []
    a, b = ip.operand(vt[0], st), ip.operand(vt[1], st)
    return [merge(a, b, not (a.exact_uniform() and b.exact_uniform()), ())]


def _r_s2r(ip, ins, mods, vt, toks, st) -> list[Value]:
    sr = vt[0].strip() if vt else ""
    if sr == "SRZ":
        return [Value(ZERO, ZERO), Value(ZERO, ZERO)]
    if sr in _SPECIAL:
        return [Value(const(_SPECIAL[sr]), None, sr == "SR_LANEID")]
    return [uniform()] if _UNIFORM_SPECIAL.match(sr) else [UNKNOWN]


def _r_ldc(ip, ins, mods, vt, toks, st) -> list[Value]:
    c = CBANK.match(vt[0].strip()) if vt else None
    if not c:
        return [UNKNOWN]
    return [ip.bank(c.group(2), c.group(3), st, w) for w in ((0, 4) if "64" in mods else (0,))]


def _r_load(ip, ins, mods, vt, toks, st) -> list[Value]:
    """A load: the same in every thread from an address that is (a broadcast), else unknown."""
    n = dest_count("LDG", mods)
    a = address(ins)
    v = ip.get(st, a[0]) if a else UNKNOWN
    return [uniform(step=v.step) if v.d == ZERO else UNKNOWN] * n


RULES = {"MOV": _r_mov, "MOV32I": _r_mov, "R2UR": _r_mov, "IMAD": _r_imad, "IMUL": _r_imul, "IADD3": _r_add,
          "IADD": _r_add, "IADD32I": _r_add, "VIADD": _r_add, "LEA": _r_lea, "ISCADD": _r_iscadd, "SHF": _r_shf,
          "SHL": _r_shl, "SHR": _r_shr, "SEL": _r_sel, "IMNMX": _r_minmax, "VIMNMX": _r_minmax, "S2R": _r_s2r,
          "S2UR": _r_s2r, "CS2R": _r_s2r, "LDC": _r_ldc, **{r: _r_load for r in _LOADS - {"LDC"}}}
