"""Correctness gates of the reference kernels, run on the GPU before anything is timed.

Every run is a grader.check.verify.GuardedRun, the grader's own: every buffer has guard regions and every output
starts as NaN, so an element never written stays NaN and fails, a write outside a buffer damages a guard and
fails, and a write into an input is seen. Shapes are the course
page's ragged ones: RoPE at B=3, S=17, H=5, D=64 in both layouts and two bases, plus D=12 in both layouts
(where the wide half-split kernel cannot use its 16-byte quads and takes its pair-by-pair path); the chain at
101 rows of 97 (scalar paths) and 101 rows of 388 (the float4 path of the wide kernels, rows 16-byte aligned,
97 float4s per row, which no block size divides).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from grader.check.verify import GuardedRun, compare, guard_damage, guard_text
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.page_kernels import (
    FUSED,
    MODEL_ANSWER,
    STAGED,
    WIDTHS,
    Version,
    chain_versions,
    launch_kernel,
    make_launch,
)
from grader.exercises.bias_gelu.reference import bias_gelu, gelu_erf, gelu_tanh, make_inputs
from grader.gpu.device import Gpu
from reference_kernels import expected as ref
from reference_kernels.suite import BF16_VERSIONS, GELU_FORMS, TO_BF16, rope_versions

ROPE_SHAPE = (3, 17, 5, 64)
"""B, S, H, D of the RoPE gates (the page's ragged shape)."""

ROPE_ODD_HEAD_SHAPE = (2, 7, 3, 12)
"""B, S, H, D of the extra RoPE gates at the default base: D / 2 = 6 is not a multiple of 4, so
ropeHalfSplit<4> cannot read a head's half in float4 quads and falls back to the page's body pair by pair."""

ROPE_BASES = (ref.DEFAULT_BASE, ref.LONG_CONTEXT_BASE)

CHAIN_SHAPES = ((101, 97), (101, 388))

BF16_LENGTHS = (3, 8 * 37, 8 * 1000 + 5)
"""bf16 lengths: shorter than one 8-element group, a whole number of groups, and groups plus a tail of 5."""

BF16_NAN_PAIR = 0x7FC07FC0
"""Two bf16 quiet NaNs in one 32-bit word: the bf16 output's contents before the launch."""


class Gate(BaseModel):
    """One pass/fail check: what was checked, whether it passed, and the measured detail."""

    name: str
    passed: bool
    detail: str


class StagedFusedMismatch(BaseModel):
    """Elements where two chain versions' float32 outputs differ (not a gate: an intermediate rounded to
    float32 in memory need not equal one kept in a register), and the widest gap."""

    first: str
    second: str
    rows: int
    cols: int
    differing: int
    total: int
    widest_gap: float


def _inputs_gate(name: str, run: GuardedRun) -> Gate:
    """Passed when every input of `run` still holds the bytes it was copied from."""
    changed = run.changed_inputs()
    return Gate(name=name, passed=not changed,
                detail=f"a kernel wrote into {', '.join(changed)}" if changed else
                f"{', '.join(run.inputs)} read back equal")


def _share(err: np.ndarray, bound: np.ndarray) -> float:
    """Largest err / bound (0 / 0 counts as 0)."""
    ratio = np.divide(err, bound, out=np.where(err > 0, np.inf, 0.0), where=bound > 0)
    return float(ratio.max()) if ratio.size else 0.0


# --- RoPE ----------------------------------------------------------------------------------------------
def rope_gates(gpu: Gpu, loaded: dict, rng: np.random.Generator) -> list[Gate]:
    """Every RoPE kernel at both widths, both layouts and both bases against float64; the interleaved kernels
    equal to ropeInterleaved<1> bit for bit; ropeHalfSplit different from it, and the wide ropeHalfSplit
    equal to ropeHalfSplit<1> bit for bit (the same rotate() per pair)."""
    gates = []
    for base in ROPE_BASES:
        for layout in ref.LAYOUTS:
            gates += _rope_case(gpu, loaded, rng, base, layout)
    for layout in ref.LAYOUTS:
        gates += _rope_case(gpu, loaded, rng, ref.DEFAULT_BASE, layout, ROPE_ODD_HEAD_SHAPE)
    return gates


def _rope_case(gpu: Gpu, loaded: dict, rng: np.random.Generator, base: float, layout: str,
               bshd: tuple[int, int, int, int] = ROPE_SHAPE) -> list[Gate]:
    b, s, h, d = bshd
    shape = (b, s, h, d) if layout == "bshd" else (b, h, s, d)
    q = rng.uniform(-4.0, 4.0, size=shape).astype(np.float32)
    k = rng.uniform(-4.0, 4.0, size=shape).astype(np.float32)
    cos, sin = ref.rope_tables(s, d, base)
    n = q.size
    scalars = {"pairs": n // 2, "halfDim": d // 2, "heads": h if layout == "bshd" else 1, "seq": s}
    tag = f"rope {layout} base {base:g}" if bshd == ROPE_SHAPE else f"rope D={d} {layout} base {base:g}"
    scratch = GuardedRun(gpu)
    gates, outs = [], {}
    try:
        inputs = {"q": scratch.input("q", q), "k": scratch.input("k", k), "cos": scratch.input("cos", cos),
                  "sin": scratch.input("sin", sin)}

        def run(version: Version, q_name: str = "q") -> tuple[np.ndarray, np.ndarray | None, list[str]]:
            arrays = {"qOut": scratch.output(n), "kOut": scratch.output(n)}
            buffers = {**{key: g.data for key, g in inputs.items()}, **{key: g.data for key, g in arrays.items()}}
            buffers["q"] = inputs[q_name].data
            make_launch(gpu, loaded, version, buffers, scalars, 1, n)()
            gpu.sync()
            second = arrays["kOut"].read().reshape(shape) if version.label.startswith("ropeFusedQK") else None
            return arrays["qOut"].read().reshape(shape), second, guard_damage(arrays)

        refs = {p: ref.rope_reference(q, layout, p, base) for p in ref.PAIRINGS}
        ref_k = ref.rope_reference(k, layout, "interleaved", base)
        for width in WIDTHS:
            for name, version in rope_versions(width).items():
                got, got_k, damage = run(version)
                outs[version.label] = got
                pairing = "half" if name == "ropeHalfSplit" else "interleaved"
                gates.append(_rope_check(f"{tag}: {version.label} vs float64", got, refs[pairing], q, pairing,
                                         damage))
                if got_k is not None:
                    outs[version.label + " k"] = got_k
                    gates.append(_rope_check(f"{tag}: {version.label} (k) vs float64", got_k, ref_k, k,
                                             "interleaved", []))
        outs["k"], _, _ = run(rope_versions(1)["ropeInterleaved"], q_name="k")
        gates.append(_inputs_gate(f"{tag}: inputs unchanged", scratch))
    finally:
        scratch.close()
    return gates + _rope_bit_gates(tag, outs)


def _rope_bit_gates(tag: str, outs: dict[str, np.ndarray]) -> list[Gate]:
    """The bitwise gates of one RoPE case over its outputs (`outs`: by version label, "LABEL k" for a fused
    kernel's k output, "k" for ropeInterleaved<1> on k): every interleaved kernel equals ropeInterleaved<1>, the
    wide half-split kernels equal ropeHalfSplit<1>, and the half-split kernels differ from the interleaved."""
    gates = []
    base_label = rope_versions(1)["ropeInterleaved"].label
    base_out = outs[base_label]
    for label, got in outs.items():
        if label in (base_label, "k") or label.startswith("ropeHalfSplit"):
            continue
        want = outs["k"] if label.endswith(" k") else base_out
        gates.append(_bit_gate(f"{tag}: {label} == {base_label}{' (on k)' if label.endswith(' k') else ''} "
                               "bit for bit", got, want))
    half_label = rope_versions(1)["ropeHalfSplit"].label
    for width in WIDTHS[1:]:
        label = rope_versions(width)["ropeHalfSplit"].label
        gates.append(_bit_gate(f"{tag}: {label} == {half_label} bit for bit", outs[label], outs[half_label]))
    for width in WIDTHS:
        label = rope_versions(width)["ropeHalfSplit"].label
        differ = int(np.count_nonzero(outs[label].view(np.uint32) != base_out.view(np.uint32)))
        gates.append(Gate(name=f"{tag}: {label} differs from {base_label}", passed=differ > 0,
                          detail=f"differs at {differ} of {base_out.size} elements" if differ else
                          "identical output: the half-split kernel computes the interleaved pairing"))
    return gates


def _rope_check(name: str, got: np.ndarray, want: np.ndarray, x: np.ndarray, pairing: str,
                damage: list[str]) -> Gate:
    bound = ref.rope_error_bound(x, pairing)
    err = np.abs(got.astype(np.float64) - want)
    bad = ~(err <= bound)
    if damage:
        return Gate(name=name, passed=False, detail=guard_text(damage))
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), got.shape)
        return Gate(name=name, passed=False,
                    detail=f"{int(bad.sum())} of {got.size} elements wrong; first at {tuple(int(v) for v in i)}: "
                           f"got {got[i]:.9g}, expected {want[i]:.9g} (bound 8u(|x0|+|x1|) = {bound[i]:.3g})")
    return Gate(name=name, passed=True,
                detail=f"largest error {err.max():.3g}, at most {_share(err, bound):.2f} of the bound")


def _bit_gate(name: str, got: np.ndarray, want: np.ndarray) -> Gate:
    differ = np.flatnonzero(got.view(np.uint32).ravel() != want.view(np.uint32).ravel())
    if differ.size:
        i = int(differ[0])
        return Gate(name=name, passed=False, detail=f"{differ.size} of {got.size} elements differ; first at flat "
                    f"index {i}: {got.ravel()[i]:.9g} vs {want.ravel()[i]:.9g}")
    return Gate(name=name, passed=True, detail=f"all {got.size} elements equal")


# --- The chain -----------------------------------------------------------------------------------------
def chain_gates(gpu: Gpu, loaded: dict, rng: np.random.Generator) -> tuple[list[Gate], list[StagedFusedMismatch]]:
    """Every chain version at both widths and both shapes against float64 (the grader's tolerance), the tanh
    kernel failing the erf reference, and the staged / model-answer vs fused mismatches (reported)."""
    gates, mismatches = [], []
    for rows, cols in CHAIN_SHAPES:
        x, bias = make_inputs(rng, rows, cols)
        r = rng.uniform(-1.0, 1.0, size=(rows, cols)).astype(np.float32)
        expected = {
            "addBiasRow": ref.add_bias(x, bias), "applyGeluErf": gelu_erf(x), "applyGeluTanh": gelu_tanh(x),
            "addResidual": x.astype(np.float64) + r, "biasGeluFused": bias_gelu(x, bias),
            STAGED: ref.chain_reference(x, bias, r), MODEL_ANSWER: ref.chain_reference(x, bias, r),
            FUSED: ref.chain_reference(x, bias, r),
        }
        scratch = GuardedRun(gpu)
        try:
            inputs = {"x": scratch.input("x", x), "bias": scratch.input("bias", bias), "r": scratch.input("r", r)}
            for width in WIDTHS:
                outs = {}
                for name, version in chain_versions(width).items():
                    arrays = {"t1": scratch.output(x.size), "t2": scratch.output(x.size), "out": scratch.output(x.size)}
                    buffers = {key: g.data for key, g in {**inputs, **arrays}.items()}
                    make_launch(gpu, loaded, version, buffers, {"cols": cols, "n": x.size}, rows, cols)()
                    gpu.sync()
                    got = arrays["out"].read().reshape(rows, cols)
                    outs[name] = got
                    v = compare(got, expected[name], BIAS_GELU)
                    damage = guard_damage(arrays)
                    passed = v.passed and not damage
                    detail = v.message if not damage else guard_text(damage)
                    gates.append(Gate(name=f"chain {rows}x{cols}: {version.label} vs float64", passed=passed,
                                      detail=detail))
                wrong = compare(outs["applyGeluTanh"], gelu_erf(x), BIAS_GELU)
                gates.append(Gate(name=f"chain {rows}x{cols}: applyGeluTanh<{width}> fails the erf reference",
                                  passed=not wrong.passed,
                                  detail=f"{wrong.bad} of {wrong.total} elements outside the f32 tolerance, largest "
                                         f"gap {wrong.max_abs_error:.3g}" if not wrong.passed else
                                         "the tanh form passed the erf tolerance: the tolerance is too loose"))
                for first in (STAGED, MODEL_ANSWER):
                    gap = np.abs(outs[first].astype(np.float64) - outs[FUSED])
                    mismatches.append(StagedFusedMismatch(
                        first=f"{first}<{width}>", second=f"{FUSED}<{width}>", rows=rows, cols=cols,
                        differing=int(np.count_nonzero(outs[first] != outs[FUSED])), total=x.size,
                        widest_gap=float(gap.max())))
            gates.append(_inputs_gate(f"chain {rows}x{cols}: inputs unchanged", scratch))
        finally:
            scratch.close()
    return gates, mismatches


# --- bf16 ----------------------------------------------------------------------------------------------
def bf16_gates(gpu: Gpu, loaded: dict, rng: np.random.Generator) -> list[Gate]:
    """toBf16 equal to numpy's f32_to_bf16 bit for bit; each bf16 GELU (geluTanhBf16, geluTanhBf16Sigmoid)
    against float64 at lengths with and
    without a tail, within ref.gelu_bf16_tolerance, rounding like the float64 result rounded to bf16 on all
    but ref.BF16_MAX_ROUNDING_MISMATCH of the elements, and writing nothing past n."""
    gates = []
    scratch = GuardedRun(gpu)
    try:
        gates.append(_to_bf16_gate(gpu, loaded, rng, scratch))
        for n in BF16_LENGTHS:
            x32 = rng.uniform(-4.0, 4.0, size=n).astype(np.float32)
            x32[: min(n, 4)] = np.array([0.0, -0.0, 1e-3, -6.0], dtype=np.float32)[: min(n, 4)]
            bits = ref.f32_to_bf16(x32)
            src = scratch.input(f"in {n}", bits)
            for version in BF16_VERSIONS:
                words = -(-n // 2) + 1  # one whole spare word past the end: a write there is caught below
                out = scratch.output(words, BF16_NAN_PAIR)
                make_launch(gpu, loaded, version, {"in": src.data, "out": out.data}, {"n": n}, 1, n)()
                gpu.sync()
                got_all = gpu.download(out.data.ptr, 2 * words, np.uint16)
                got, past = got_all[:n], got_all[n:]
                gates.append(_bf16_check(version.label, n, bits, got, past, guard_damage({"out": out})))
    finally:
        scratch.close()
    return gates


def _to_bf16_gate(gpu: Gpu, loaded: dict, rng: np.random.Generator, scratch: GuardedRun) -> Gate:
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 3.3895314e38, 1e-40, -1e-45], dtype=np.float32)
    # float32s exactly halfway between two bf16s (low half 0x8000), above even and odd bf16s: ties to even.
    ties = (np.uint32(0x3F808000) + (np.arange(64, dtype=np.uint32) << np.uint32(16))).view(np.float32)
    x = np.concatenate([specials, ties, rng.uniform(-1e4, 1e4, size=4093).astype(np.float32)])
    src, out = scratch.input("x", x), scratch.output(-(-x.size // 2))
    launch_kernel(gpu, loaded, TO_BF16, x.size, **{"in": src.data, "out": out.data, "n": x.size})
    gpu.sync()
    got = gpu.download(out.data.ptr, x.size, np.uint16)
    want = ref.f32_to_bf16(x)
    differ = np.flatnonzero(got != want)
    name = "bf16: toBf16 (device) == f32_to_bf16 (numpy) bit for bit, ties, NaN and inf included"
    if differ.size:
        i = int(differ[0])
        return Gate(name=name, passed=False, detail=f"{differ.size} of {x.size} differ; first: {x[i]!r} -> "
                    f"0x{got[i]:04x}, numpy 0x{want[i]:04x}")
    return Gate(name=name, passed=True, detail=f"all {x.size} equal")


def _bf16_check(label: str, n: int, bits: np.ndarray, got: np.ndarray, past: np.ndarray, damage: list[str]) -> Gate:
    name = f"bf16: {label} at n = {n} (n % 8 = {n % 8}) vs float64"
    want = ref.gelu_tanh_bf16_reference(bits)
    x = ref.bf16_to_f32(bits)
    value = ref.bf16_to_f32(got).astype(np.float64)
    err = np.where(np.isfinite(value), np.abs(value - want), np.inf)
    tol = ref.gelu_bf16_tolerance(x, want)
    bad = ~(err <= tol)
    rounding = float(np.mean(got != ref.f64_to_bf16(want)))
    if damage or np.any(past != np.uint16(BF16_NAN_PAIR & 0xFFFF)):
        return Gate(name=name, passed=False, detail="wrote past element n-1 (the tail is not bounds-checked)")
    if bad.any():
        i = int(np.argmax(bad))
        return Gate(name=name, passed=False, detail=f"{int(bad.sum())} of {n} elements wrong; first at {i}: "
                    f"x = {x[i]:.6g}, got {value[i]:.6g}, expected {want[i]:.6g} (tolerance {tol[i]:.3g})")
    if rounding > ref.BF16_MAX_ROUNDING_MISMATCH:
        return Gate(name=name, passed=False, detail=f"{rounding:.1%} of elements round differently from the "
                    f"float64 result rounded to bf16 (at most {ref.BF16_MAX_ROUNDING_MISMATCH:.0%}): truncating?")
    return Gate(name=name, passed=True, detail=f"largest error {err.max():.3g}, at most "
                f"{_share(err, tol):.2f} of the tolerance; {rounding:.2%} round differently from float64")


# --- GELU gap on the device ----------------------------------------------------------------------------
def gelu_gap_float32(gpu: Gpu, loaded: dict, lo: float = 0.0, hi: float = 8.0,
                     points: int = 800_001) -> tuple[float, float]:
    """Largest |GELU_erf - GELU_tanh| with the float32 device functions of chain.cu (geluErf, geluTanh) over
    `points` x evenly spaced in [lo, hi] (computed in float64, rounded to float32), and the x where it occurs.
    The difference of the two float32 results is taken in float64 (exact for results this close)."""
    x = np.linspace(lo, hi, points).astype(np.float32)
    scratch = GuardedRun(gpu)
    try:
        src, e, t = scratch.input("x", x), scratch.output(points), scratch.output(points)
        launch_kernel(gpu, loaded, GELU_FORMS, points, x=src.data, erfOut=e.data, tanhOut=t.data, n=points)
        gpu.sync()
        gap = np.abs(e.read().astype(np.float64) - t.read())
    finally:
        scratch.close()
    i = int(np.argmax(gap))
    return float(gap[i]), float(x[i])


def all_gates(gpu: Gpu, loaded: dict, seed: int) -> tuple[list[Gate], list[StagedFusedMismatch]]:
    """Run every gate with inputs drawn from `seed`; returns (gates, staged/fused mismatches)."""
    rng = np.random.default_rng(seed)
    gates = rope_gates(gpu, loaded, rng)
    chain, mismatches = chain_gates(gpu, loaded, rng)
    return gates + chain + bf16_gates(gpu, loaded, rng), mismatches
