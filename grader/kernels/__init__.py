"""The grader's own CUDA sources (copies for the floor, the input generator, the on-GPU check)."""

from importlib.resources import files


def load(gpu, source: str, kernels: tuple[str, ...]) -> dict:
    """Compile grader/kernels/`source` for `gpu`'s arch with NVRTC and load it: {kernel name: Kernel}.

    gpu: a grader.device.Gpu. Raises SubmissionError only if the grader's own source is broken.
    """
    from grader.compile import compile_kernels

    text = files(__name__).joinpath(source).read_text()
    return gpu.load(compile_kernels(text, source, kernels, gpu.info.arch))
