"""The grader's own CUDA sources (copies for the floor, the input generator, the on-GPU check, the page's chain
kernels of grader.timing.page_kernels)."""

from importlib.resources import files


def load(gpu, source: str, kernels: tuple[str, ...]) -> dict:
    """Compile grader/gpu/kernels/`source` for `gpu`'s arch with NVRTC (once per NVRTC version and arch:
    grader.compile.kernel_cache) and load it: {kernel name: Kernel}.

    gpu: a grader.gpu.device.Gpu. Raises SubmissionError only if the grader's own source is broken.
    """
    from grader.compile import kernel_cache

    text = files(__name__).joinpath(source).read_text()
    return gpu.load(kernel_cache.compiled(text, source, kernels, gpu.info.arch))
