"""The page's RoPE kernels (rope.cu, in this folder) as the rope exercise uses them: the model answer and the
page's answer that `grade --exercise rope --counters` profiles beside the submission (grader.pipeline.profiled).

rope.cu holds the page's ropeInterleaved as a template on its pairs per thread, with the float2, half-split
and fused q/k variants; reference_kernels.suite times every one of them in the self-check. Here:
- the page's answer is ropeInterleaved<1>, the page's kernel as printed: one pair per thread, two 4-byte loads
  and two 4-byte stores, (pos, j) from 64-bit division;
- the model answer is ropeInterleavedVec2<4>: 4 pairs per thread one block apart, each pair one float2 (8-byte
  loads and stores), (pos, j) in 32-bit integers, every load issued before the first store (0.98 of the copy
  floor on the H200, rope.cu's header; the page's lesson for RoPE is the index arithmetic first, then the width).
ncu's --kernel-name filter keeps the submission's launch and these two (NAMES), and the child's launch order
tells them apart (grader.feedback.counters.LAUNCH_ORDER).
"""

from __future__ import annotations

from importlib.resources import files

from grader.compile import kernel_cache
from grader.core.launch import LaunchSpec, Param, bind

SOURCE = "rope.cu"
ANSWERS = {"model": "ropeInterleavedVec2<4>", "page": "ropeInterleaved<1>"}
"""The model answer's and the page's answer's NVRTC name expressions (their template argument: pairs per thread)."""
NAMES = ("ropeInterleaved", "ropeInterleavedVec2")
"""The functions' own names, as ncu names their launches."""
PARAMS = tuple(Param(*p.split(":")) for p in ("in:ptr", "cos:ptr", "sin:ptr", "out:ptr", "pairs:u64",
                                              "halfDim:i32", "heads:i32", "seq:i32"))
"""rope.cu's RoPE kernels' parameters, the page's signature (grader.core.launch.KINDS: u64 is size_t)."""


def source_text() -> str:
    """The text of grader/exercises/rope/rope.cu."""
    return files(__package__).joinpath(SOURCE).read_text()


def references(gpu, problem, buffers: dict[str, object]) -> dict[str, object]:
    """{"model": launch, "page": launch} of ANSWERS over `problem`'s pairs (a flat grid of 256-thread blocks, as
    many pairs per thread as the template argument), reading buffers in, cosTab, sinTab and writing buffers out
    (grader.core.exercise.Exercise.references). Raises SubmissionError(Stage.COMPILE) only if rope.cu is broken."""
    loaded = gpu.load(kernel_cache.compiled(source_text(), SOURCE, tuple(ANSWERS.values()), gpu.info.arch))
    values = {"in": buffers["in"], "cos": buffers["cosTab"], "sin": buffers["sinTab"], "out": buffers["out"],
              **{k: problem.integers[k] for k in ("pairs", "halfDim", "heads", "seq")}}
    return {label: bind(gpu, loaded[expr], LaunchSpec(PARAMS, grid="flat", elems_per_thread=_pairs(expr)),
                        *problem.grid, values)
            for label, expr in ANSWERS.items()}


def _pairs(expr: str) -> int:
    """The template argument of `expr` ("ropeInterleaved<4>": 4)."""
    return int(expr.split("<", 1)[1].rstrip(">"))
