"""The grader's own CUDA sources (copies for the floor, the input generator) and the shared draw of inputs
(draws.cuh), which an exercise's own check kernel includes."""

from importlib.resources import files

SHARED = "draws.cuh"
"""The one header the grader's CUDA sources may include, as `#include "draws.cuh"` on a line of its own: the
counter-based draw of inputs (grader.check.draws is its numpy twin)."""


def source_text(package: str, source: str) -> str:
    """The text of `source` in `package`'s folder (a grader.gpu.kernels or an exercise's .cu), with the line
    `#include "draws.cuh"` replaced by that header (NVRTC compiles one text; the header is the grader's own)."""
    text = files(package).joinpath(source).read_text()
    header = files(__name__).joinpath(SHARED).read_text()
    return text.replace(f'#include "{SHARED}"\n', header, 1)


def load(gpu, source: str, kernels: tuple[str, ...], package: str = __name__) -> dict:
    """Compile `source` of `package`'s folder (default grader/gpu/kernels/; an exercise passes its own package) for
    `gpu`'s arch with NVRTC (once per NVRTC version and arch: grader.compile.kernel_cache) and load it: {kernel
    name: Kernel}.

    gpu: a grader.gpu.device.Gpu. Raises SubmissionError only if the grader's own source is broken.
    """
    from grader.compile import kernel_cache

    return gpu.load(kernel_cache.compiled(source_text(package, source), source, kernels, gpu.info.arch))
