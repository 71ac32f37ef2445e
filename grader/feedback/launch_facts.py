"""Static launch facts (issue 29): causes of a slow kernel that the launch (grid, block, elements per thread: the
submission's LaunchSpec) and the machine code (each access instruction's width, line and buffer:
grader.feedback.sass_access) show before any counter is measured, each with its numbers and its fix. `grade batch`
rarely measures counters, so for most of a class these are all the causes there will be.

  idle    threads that can have no element: the stores to out move V floats per thread (16-byte accesses: V = 4)
          but the launch gives each thread E < V elements (row or flat grid: ceil(cols / (block x E)) blocks
          per row), so (V - E) of every V threads exit at once, and (V - E) / V of the blocks have no element
          at all (every block, when cols is a multiple of block x V, as the benchmark's is);
  grid    fewer blocks than the card holds at once: the grid keeps W = min(blocks, SMs x blocks per SM) x warps
          per block warps resident, under GRID_SHARE of what the card holds (SMs x warps per SM); needs the
          card's SM count, so it is given only where a GPU is (an H100 PCIe has 114 SMs, an H200 132: a CPU run
          does not know which card the student has);
  blocks  blocks so small that the per-SM block limit caps the warps in flight: an SM holds at most
          MAX_BLOCKS_PER_SM blocks, so blocks of 32 threads on sm_90 leave 32 of its 64 warp slots empty; a
          fact of the architecture, given on a CPU run too;
  fence   a memory fence (MEMBAR: __threadfence) in the per-element path;
  atomic  an atomic (ATOMG, RED) in the per-element path;
  stores  an element stored more than once (a store to the address an earlier store wrote, grader.feedback.sass_access).

Per-SM limits by architecture: the CUDA C++ Programming Guide, "Compute Capabilities", table "Technical
Specifications per Compute Capability" (maximum resident blocks, warps and 32-bit registers per SM). An arch
not listed gets no "blocks" hint (an unknown limit is not guessed).

Each hint carries the numbers of its own model in `facts` (grader.feedback.worth costs it from them and the
grading's times), and the student's lines it names in `lines`. Pure Python: no GPU, no disassembler needed
here (the SassFacts come from grader.feedback.sass).
"""

from __future__ import annotations

import math

from grader.core import exercise as course
from grader.core.exercise import OUTPUT, Exercise
from grader.core.launch import LaunchSpec
from grader.feedback.code_paths import buffer, param_roles, paths, pointer_roles
from grader.feedback.flow_facts import divisions_per_element, flow_hints, stores_out
from grader.feedback.hint import Hint, HintKind, Site
from grader.feedback.sass import SassFacts
from grader.feedback.sass_access import Access

REGISTERS_PER_SM = 65536
"""32-bit registers of one SM, the same from sm_50 to sm_121 (CUDA C++ Programming Guide, compute capabilities)."""

MAX_WARPS_PER_SM = {"sm_50": 64, "sm_52": 64, "sm_53": 64, "sm_60": 64, "sm_61": 64, "sm_62": 64, "sm_70": 64,
                    "sm_72": 64, "sm_75": 32, "sm_80": 64, "sm_86": 48, "sm_87": 48, "sm_89": 48, "sm_90": 64,
                    "sm_100": 64, "sm_103": 64, "sm_120": 48, "sm_121": 48}
"""Resident warps per SM by architecture (same source); an arch not listed gets no occupancy fact."""

MAX_BLOCKS_PER_SM = {"sm_50": 32, "sm_52": 32, "sm_53": 32, "sm_60": 32, "sm_61": 32, "sm_62": 32, "sm_70": 32,
                     "sm_72": 32, "sm_75": 16, "sm_80": 32, "sm_86": 16, "sm_87": 16, "sm_89": 24, "sm_90": 32,
                     "sm_100": 32, "sm_103": 32}
"""Resident blocks per SM by architecture (same source). sm_120/121 are left out: not checked here."""

SHARED_PER_SM = {"sm_70": 96 * 1024, "sm_72": 96 * 1024, "sm_75": 64 * 1024, "sm_80": 164 * 1024, "sm_86": 100 * 1024,
                 "sm_87": 164 * 1024, "sm_89": 100 * 1024, "sm_90": 228 * 1024, "sm_100": 228 * 1024,
                 "sm_103": 228 * 1024, "sm_120": 100 * 1024, "sm_121": 100 * 1024}
"""Shared memory one SM holds for its blocks, bytes (CUDA C++ Programming Guide, compute capabilities: "maximum amount
of shared memory per SM"); an arch not listed gets no shared-memory fact."""
SHARED_RESERVED = 1024
"""Shared memory the system reserves per resident block from compute capability 8.0 on, bytes (CUDA C++ Programming
Guide, compute capability 8.x and 9.0: "1 KB of shared memory is reserved for system use per thread block")."""

ISSUE_PER_CYCLE = 4
"""Warp instructions one SM issues per cycle at most: four schedulers, one each (sm_70 to sm_120; CUDA C++
Programming Guide, the SIMT architecture of compute capabilities 7.x and later)."""
INLINE_DIVISION = 20
"""Instructions of an inline 32-bit integer division by a run-time value (I2F.U32.RP, MUFU.RCP, ...: 18 to 22
in NVRTC 13.5's sm_90 code, tests/data/hints)."""

FP64_PER_CLOCK = {"sm_60": 32, "sm_61": 4, "sm_70": 32, "sm_75": 2, "sm_80": 32, "sm_86": 2, "sm_89": 2, "sm_90": 64,
                  "sm_100": 64, "sm_120": 2}
"""Double-precision add, multiply or multiply-add results one SM delivers per clock, by architecture (CUDA C++
Programming Guide, "Arithmetic Instructions", throughput of native arithmetic instructions); an arch not listed
gets the double fact without an estimate."""

GRID_SHARE = 0.5
"""The grid hint is given when the grid keeps fewer than this share of the card's warp slots busy (a 396-block
grid-stride float4 kernel, 37.5% of an H200's, ran at 0.77 of the copy floor; 16 blocks, 1.5%, at 0.048)."""

FROM = "from the launch and the machine code"


def register_limited_warps(registers: int, arch: str | None) -> tuple[int, int] | None:
    """(warps one SM can hold at `registers` per thread, warps it can run at most) for `arch`; None for an
    arch not in MAX_WARPS_PER_SM. Registers are allocated per warp in units of 256 (8 per thread)."""
    most = MAX_WARPS_PER_SM.get(arch or "")
    if most is None or registers <= 0:
        return None
    per_warp = -(-registers // 8) * 8 * 32
    return min(most, REGISTERS_PER_SM // per_warp), most


def shared_limited_blocks(shared: int | None, arch: str) -> int | None:
    """Blocks with `shared` bytes of static shared memory each that one `arch` SM holds (SHARED_PER_SM, less
    SHARED_RESERVED per block from sm_80 on); None where the kernel uses none or the arch is not listed."""
    per_sm = SHARED_PER_SM.get(arch)
    if not shared or per_sm is None:
        return None
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    reserved = SHARED_RESERVED if digits and int(digits) >= 80 else 0
    return per_sm // (shared + reserved)


def warps_per_sm(block: int, arch: str, registers: int | None = None, shared: int | None = None) -> int | None:
    """Warps of blocks of `block` threads one `arch` SM keeps resident: whole blocks, limited by its warp slots,
    its block slots, (with `registers` per thread) its registers and (with `shared` bytes per block) its shared
    memory; None for an arch not listed."""
    most, blocks = MAX_WARPS_PER_SM.get(arch), MAX_BLOCKS_PER_SM.get(arch)
    if most is None:
        return None
    wpb = -(-block // 32)
    limit = most
    if registers:
        limit = min(limit, (register_limited_warps(registers, arch) or (most, most))[0])
    fit = limit // wpb
    if blocks is not None:
        fit = min(fit, blocks)
    by_shared = shared_limited_blocks(shared, arch)
    if by_shared is not None:
        fit = min(fit, by_shared)
    return fit * wpb


def sites(facts: SassFacts | None, spec: LaunchSpec) -> list[Site]:
    """Each global load, store and atomic of the kernel's machine code (`facts`; [] without it) as the report keeps
    it (grader.feedback.hint.Site): what it does, the buffer of `spec`'s parameters its address comes from, its line
    and width; for the hints that need the code after the counters are measured (grader.feedback.worth's bytes
    hint)."""
    if facts is None:
        return []
    roles = pointer_roles(spec)
    p = paths(facts, roles)
    loops = {a.offset: lp for a, lp in zip(p.accesses, p.loops, strict=True)}  # the kernel's own function's
    own = len(p.accesses)
    return [Site(op=a.op, buffer=buffer(a, roles) or "", line=a.line, nbytes=a.nbytes,
                 loop=loops.get(a.offset) if k < own else None)
            for k, a in enumerate(facts.accesses) if a.op in ("ld", "st", "atom", "red")]


def _where(accesses: list[Access], what: str) -> str:
    """'line 23: STG.E.128' for the accesses (each line once), for the hint's text."""
    seen: dict[int | None, str] = {}
    for a in accesses:
        seen.setdefault(a.line, a.opcode)
    parts = [f"line {line}: {op}" if line else op for line, op in seen.items()]
    return f"{what} ({', '.join(parts[:4])}{', ...' if len(parts) > 4 else ''})"


def _lines(accesses: list[Access]) -> list[int]:
    return sorted({a.line for a in accesses if a.line})


def launch_hints(spec: LaunchSpec, facts: SassFacts | None, arch: str, *, ex: Exercise, sms: int | None = None,
                 shape: tuple[int, int] | None = None, shared: int | None = None, sm_mhz: int | None = None
                 ) -> list[Hint]:
    """The static launch facts of the module docstring that hold for the kernel of exercise `ex` (its
    kernel_name names it) launched per `spec`, its machine code `facts` (None without a disassembler: then only the
    launch's own facts, grid and blocks), compiled for `arch` ('sm_90'), on a card of `sms` multiprocessors (None:
    no GPU, no grid hint), at the graded `shape` (rows, cols; None: the counts that need it are left out, and a
    stride grid's blocks are counted at the grid of the exercise's first verified size,
    ex.problem(ex.verify_dims[0]).grid); `shared`: its static shared memory per block, bytes (ptxas's report; None:
    not known); `sm_mhz`: the SM clock it was timed at (the double fact's model). Returns Hints
    (grader.feedback.hint) without estimates."""
    hints: list[Hint] = []
    kernel = ex.kernel_name
    item = item_floats(ex)
    regs = facts.registers if facts else None
    if facts is not None and facts.accesses:
        roles = pointer_roles(spec)
        p = paths(facts, roles)
        hints += [h for h in (_idle(spec, facts.accesses, roles, shape, sms, facts, kernel, item, stores_out(p)),)
                  if h]
        hints += _per_element(spec, facts.accesses, roles, shape, sms, arch, regs, kernel)
        hints += [h for h in (_double(facts, roles, arch, kernel, ex, sms, sm_mhz, shape),) if h]
        hints += flow_hints(p, ex, param_roles(spec))
    first = ex.problem(ex.verify_dims[0]).grid
    hints += [h for h in (_grid(spec, arch, regs, sms, shape, first), _blocks(spec, arch, regs),
                          _shared(spec, arch, regs, shared)) if h]
    return hints


def _vector(accesses: tuple[Access, ...], roles: dict[int, str]) -> tuple[int, list[Access]]:
    """Floats per thread of the widest stores to out (all stores where none is known to write out), and them."""
    stores = [a for a in accesses if a.op in ("st", "atom", "red") and a.nbytes]
    to_out = [a for a in stores if buffer(a, roles) == OUTPUT] or stores
    if not to_out:
        return 1, []
    widest = max(a.nbytes for a in to_out)
    return max(1, widest // course.BYTES_PER_FLOAT), [a for a in to_out if a.nbytes == widest]


def item_floats(ex: Exercise) -> int:
    """Floats of out per element of the launch's elems_per_thread for exercise `ex` (1 for biasGeluFused, 2 for a
    RoPE pair), from its first verified Problem: output floats over grid items."""
    first = ex.problem(ex.verify_dims[0])
    return max(1, first.n // (first.grid[0] * first.grid[1]))


def _idle(spec: LaunchSpec, accesses, roles, shape, sms, facts: SassFacts, kernel: str,
          item: int = 1, stored: int = 0) -> Hint | None:
    """The idle-threads fact (module docstring), in floats of out: `item` floats are one element of the launch's
    elems_per_thread (the exercise's: 1 for biasGeluFused, 2 for a RoPE pair), so E elements per thread are
    E x item floats, and `shape` (the output's rows x cols) is a grid of rows x cols / item elements. `stored`:
    the floats a thread stores outside every loop on one path (grader.feedback.flow_facts.stores_out), the vector
    when wider than its widest store (eight pairs stored as eight float2: 16 floats)."""
    if spec.grid not in ("row", "flat"):
        return None
    vec, widest = _vector(accesses, roles)
    if stored > vec and stored % vec == 0:
        vec = stored
    elems = spec.elems_per_thread
    per = elems * item
    if vec <= per or vec % per:
        return None
    g = math.gcd(vec - per, vec)
    share = f"{(vec - per) // g} of every {vec // g} threads"
    grid = ("the page's row grid, ceil(cols / 256) blocks per row" if spec.grid == "row" and spec.block == 256
            and elems == 1 else f"a {spec.grid} grid of blocks of {spec.block} threads, {elems} element"
            f"{'s' if elems > 1 else ''} per thread")
    text = (f"{share} exit at once ({FROM}): {kernel}'s {_where(widest, 'stores to out')} move {vec * 4} bytes, "
            f"{vec} floats, per thread, but the launch gives each thread {elems} element{'s' if elems > 1 else ''} "
            f"({grid}), so the grid starts {vec // per} times the threads the body needs")
    facts_ = {"vector": float(vec), "per_thread": float(per)}
    if shape:
        rows, cols = shape
        work = (rows, cols) if item == 1 else (1, rows * cols // item)  # the grid's (rows, cols): Problem.grid
        now = spec.grid_for(*work)
        fixed = LaunchSpec(spec.params, spec.grid, spec.block, vec // item).grid_for(*work)
        blocks, empty = now[0] * now[1], now[0] * now[1] - fixed[0] * fixed[1]
        text += f"; at {rows} x {cols}, {empty:,} of the {blocks:,} blocks have no element at all"
        facts_ |= {"blocks": float(blocks), "empty_blocks": float(empty),
                   "idle_instructions": float(_prologue(facts) * empty * -(-spec.block // 32)),
                   "elements": float(rows * cols)}
    if sms:
        facts_["sms"] = float(sms)
    text += (f". Declare `// grade: elems_per_thread = {vec // item}` (the grid then has one thread per "
             f"{vec // item} elements), or move {per} float{'s' if per > 1 else ''} per thread.")
    return Hint(text=text, kind=HintKind.IDLE, facts=facts_, lines=_lines(widest))


def _prologue(facts: SassFacts) -> int:
    """Instructions a warp with no element executes: the kernel's up to its first EXIT (its bounds check; an
    upper bound where the first EXIT is past a branch the idle warps take)."""
    return facts.first_exit or dict(facts.function_sizes).get(facts.functions[0], 0) if facts.functions else 0


def _resident(spec: LaunchSpec, arch: str, regs: int | None) -> tuple[int | None, int | None]:
    """(warps one SM keeps of this launch's blocks, the most it holds)."""
    return warps_per_sm(spec.block, arch, regs), MAX_WARPS_PER_SM.get(arch)


def _grid(spec: LaunchSpec, arch: str, regs: int | None, sms: int | None, shape,
          first: tuple[int, int]) -> Hint | None:
    """The too-few-blocks fact (module docstring); `first`: the (rows, cols) a stride grid is counted at when no
    shape was graded."""
    per_sm, most = _resident(spec, arch, regs)
    if not sms or per_sm is None or most is None:
        return None
    rows, cols = shape or first
    gx, gy, _ = spec.grid_for(rows, cols, sms * most * 32)
    blocks, wpb = gx * gy, -(-spec.block // 32)
    fits = sms * (per_sm // wpb)
    if blocks >= fits or blocks * wpb >= GRID_SHARE * sms * most or (spec.grid != "stride" and not shape):
        return None
    fixed = sms * per_sm
    fill = sms * most * 32 // spec.block
    text = (f"too few blocks for the card ({FROM.split(' and ')[0]}): {blocks:,} blocks of {spec.block} threads "
            f"for {sms} SMs, so at most {blocks * wpb:,} warps are in flight where the card holds {fixed:,} "
            f"({sms} SMs x {per_sm} warps; an {arch} SM holds {most} warps and "
            f"{MAX_BLOCKS_PER_SM.get(arch, '?')} blocks, CUDA C++ Programming Guide, compute capabilities)"
            + (f", and {sms - blocks} SMs have no block at all" if blocks < sms else "")
            + ". A kernel that streams memory needs many loads in flight to cover the memory's latency (Little's "
            f"law: bytes in flight = bandwidth x latency): `// grade: grid = stride` without a count fills the card "
            f"once ({fill:,} blocks here), or use the page's row grid.")
    return Hint(text=text, kind=HintKind.GRID,
                facts={"warps_now": float(blocks * wpb), "warps_fixed": float(fixed), "sms": float(sms)})


def _blocks(spec: LaunchSpec, arch: str, regs: int | None) -> Hint | None:
    """The small-blocks fact (module docstring)."""
    per_sm, most = _resident(spec, arch, regs)
    cap = MAX_BLOCKS_PER_SM.get(arch)
    if per_sm is None or most is None or cap is None:
        return None
    wpb = -(-spec.block // 32)
    if cap * wpb >= most or per_sm >= most:
        return None
    fixed = warps_per_sm(course.BLOCK, arch, regs) or most
    if fixed <= per_sm:
        return None
    text = (f"blocks of {spec.block} threads are too small (from the launch): an {arch} SM holds at most {cap} "
            f"blocks (CUDA C++ Programming Guide, compute capabilities), so at most {cap} x {wpb} = {per_sm} of "
            f"its {most} warp slots are used ({per_sm / most:.0%}), and every block is scheduled on its own. A kernel "
            "that streams memory needs many loads in flight: use blocks of 256 threads (`// grade: block = 256`; a "
            "row grid then has 256 / "
            f"{spec.block} times fewer blocks per row).")
    return Hint(text=text, kind=HintKind.BLOCKS, facts={"warps_now": float(per_sm), "warps_fixed": float(fixed)})


def _double(facts: SassFacts, roles: dict[int, str], arch: str, kernel: str, ex: Exercise, sms: int | None,
            sm_mhz: int | None, shape: tuple[int, int] | None) -> Hint | None:
    """The double fact: double-precision instructions in the kernel (SassFacts.fp64), per float it stores (its
    static count over the floats its stores to out move: a float4 body and its scalar fallback count 4 + 1 floats
    for their 5 bodies), with what they take on the FP64 pipe if it did nothing else ("fp64_ms": elements x per
    float / 32 warp instructions, over SMs x FP64_PER_CLOCK / 32 per clock; an upper bound: branches of a math
    routine that a value skips are counted too)."""
    total = sum(n for _, n in facts.fp64)
    stored = sum(a.nbytes // course.BYTES_PER_FLOAT for a in facts.accesses
                 if a.op == "st" and a.nbytes and buffer(a, roles) in (OUTPUT, None))
    if not total or not stored:
        return None
    per = total / stored
    lines = sorted(line for line, _ in facts.fp64 if line)
    where = f" (lines {', '.join(map(str, lines[:6]))}{', ...' if len(lines) > 6 else ''})" if lines else ""
    rate = FP64_PER_CLOCK.get(arch)
    model = {"fp64_per_float": per}
    if rate and sms and sm_mhz and shape:
        model["fp64_ms"] = shape[0] * shape[1] * per / 32 / (sms * rate / 32 * sm_mhz * 1e6) * 1e3
    pace = f", which an {arch} SM runs at {rate} results per clock (CUDA C++ Programming Guide, arithmetic " \
        "instructions)" if rate else ""
    return Hint(kind=HintKind.DOUBLE, lines=lines, facts=model, text=(
        f"{kernel} computes in double (from the machine code): {total} double-precision instructions{where}, "
        f"{per:.0f} for each float it stores, on the FP64 pipe{pace}. " + ex.counter_texts.fp64))


SHARED_HINT_BELOW = 0.5
"""The shared-memory fact is given when the shared memory per block leaves an SM fewer than this share of the warps
it can run, and fewer than the launch would keep without it (as grader.feedback.hints.REGISTER_HINT_BELOW)."""


def _shared(spec: LaunchSpec, arch: str, regs: int | None, shared: int | None) -> Hint | None:
    """The shared-memory fact: static shared memory per block that caps the resident warps (SHARED_HINT_BELOW)."""
    most, fit = MAX_WARPS_PER_SM.get(arch), shared_limited_blocks(shared, arch)
    now, without = warps_per_sm(spec.block, arch, regs, shared), warps_per_sm(spec.block, arch, regs)
    if most is None or fit is None or now is None or without is None or now >= without \
            or now >= SHARED_HINT_BELOW * most:
        return None
    per_sm = SHARED_PER_SM[arch]
    text = (f"{shared:,} bytes of shared memory per block (from ptxas's report of the machine code) let an {arch} SM "
            f"hold {fit} block{'s' if fit != 1 else ''}, {now} warps of the {most} it can run (its {per_sm // 1024} "
            "KiB of shared memory, less 1 KiB per block the system keeps: CUDA C++ Programming Guide, compute "
            f"capabilities); without it the launch would keep {without}. A kernel that streams memory needs many "
            "loads in flight to cover the memory's latency (Little's law: bytes in flight = bandwidth x latency). An "
            "elementwise kernel needs no shared memory: each thread reads its own elements once, and a row every "
            "block reads again stays in the L1 and the L2; stage only what a block uses, if anything.")
    return Hint(text=text, kind=HintKind.SHARED, facts={"warps_now": float(now), "warps_fixed": float(without)})


def _per_element(spec: LaunchSpec, accesses, roles, shape, sms, arch, regs, kernel: str) -> list[Hint]:
    """The fence, atomic and repeated-store facts (module docstring)."""
    out = []
    vec, _ = _vector(accesses, roles)
    per_sm = warps_per_sm(spec.block, arch, regs) if arch else None
    slots = (sms * per_sm * 32) if sms and per_sm else None
    model = {"vector": float(vec)}
    if shape:
        model["elements"] = float(shape[0] * shape[1])
    if slots:
        model["resident_threads"] = float(slots)
    fences = [a for a in accesses if a.op == "fence"]
    if fences:
        fenced = model | {"fences": float(len(fences))}
        out.append(Hint(kind=HintKind.FENCE, lines=_lines(fences), facts=fenced, text=(
            f"a memory fence in the per-element path ({FROM}): {_where(fences, f'{len(fences)} MEMBAR')} for every "
            f"{f'{vec} elements' if vec > 1 else 'element'} a thread stores: __threadfence() makes each warp wait "
            "until its earlier stores have reached the GPU's point of coherence, a round trip to the L2 per element, "
            "and empties the L1 (CCTL.IVALL after it). No thread of an elementwise kernel reads what another wrote: "
            "take the fence out.")))
    atomics = [a for a in accesses if a.op in ("atom", "red")]
    if atomics:
        counted = model | {"atomics": float(len(atomics))}
        out.append(Hint(kind=HintKind.ATOMIC, lines=_lines(atomics), facts=counted, text=(
            f"atomics in the per-element path ({FROM}): {kernel} "
            f"{_where(atomics, 'writes through atomic instructions')}: each one is carried out by the L2's atomic "
            "units, and an atomic that returns the old value makes the warp wait for it. Every element of out "
            "has one writer: store it with a plain store (out[i] = ...).")))
    repeats = [a for a in accesses if a.repeat]
    if repeats:
        stores = [a for a in accesses if a.op == "st" and buffer(a, roles) in (OUTPUT, None)]
        k = max(2, round(len(stores) / max(1, len(stores) - len(repeats))))
        first = [a for a in stores if not a.repeat and a.nbytes == repeats[0].nbytes][:1]
        volatile = " through a volatile pointer (.STRONG.SYS), which the compiler may not merge" \
            if any(a.strong for a in repeats) else ""
        out.append(Hint(kind=HintKind.STORES, lines=_lines(first + repeats), facts=model | {"stores": float(k)}, text=(
            f"each element is stored {k} times ({FROM}): {_where(first + repeats, 'stores to the same address')}"
            f"{volatile}. Every store is traffic through the L1 and the L2 (the DRAM sees the line once): "
            "store each element once, through a plain pointer.")))
    return out


def division_facts(facts: SassFacts | None, spec: LaunchSpec, *, sms: int | None, sm_mhz: int | None,
                   shape: tuple[int, int] | None, item: int = 1, threads_per_sm: int | None = None
                   ) -> dict[str, float]:
    """The division hint's model (grader.feedback.worth): how many divisions the launch at `shape` runs per element
    ("per_element": grader.feedback.flow_facts.divisions_per_element, from the machine code's loops; the first
    guess, one per store's vector, where the flow cannot tell), and the issue slots their instructions take if the
    SMs did nothing else: "issue_ms" = elements x per element x instructions per division / 32 / (SMs x
    ISSUE_PER_CYCLE x clock). Instructions: INLINE_DIVISION where the kernel divides inline (a 64-bit division's
    fast path is inline, and every value the grader passes fits 32 bits: INT32_LIMIT), else the largest division
    routine it calls (its size). {} where a number is missing (no machine code, no GPU, no clock, no shape);
    without a GPU, "per_element" alone where the flow tells it."""
    if facts is None or not facts.int_division or not shape:
        return {}
    roles = pointer_roles(spec)
    per_element = divisions_per_element(paths(facts, roles), spec, shape, item, sms, threads_per_sm)
    vec, _ = _vector(facts.accesses, roles)
    known = {"per_element": per_element} if per_element is not None else {}
    if not sms or not sm_mhz:
        return known
    sizes = dict(facts.function_sizes)
    called = [n for f, n in sizes.items() if any(f.endswith(r) for r in facts.division_routines)]
    inline = any(s in ("I2F.U32.RP", "I2F.RP") for s in facts.division_sequences)
    per = float(INLINE_DIVISION) if inline or not called else float(max(called))
    each = per_element if per_element is not None else 1 / vec
    warps = shape[0] * shape[1] * each / 32
    return known | {"issue_ms": warps * per / (sms * ISSUE_PER_CYCLE * sm_mhz * 1e6) * 1e3,
                    "division_instructions": per}
