"""The RoPE exercise on a GPU (grader/exercises/rope/): `in` drawn on the GPU is the host's draw bit for bit, the
on-GPU check (check.cu) accepts a right output and names a wrong element and a changed input, and the examples in
submissions/rope/ verify as their first comments say at every verification size (the wrong ones with their mistake
named) and pass or fail the on-GPU check at the benchmark size. The launches here are built from the exercise's
roles directly (grader.core.launch), not through the harness: these tests hold the exercise to its own promises.

Run on the course's H200: `python -m pytest -q tests/test_rope_gpu.py` (skips, saying why, without a GPU).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import SUBMISSIONS
from grader.check.verify import GuardedRun
from grader.compile.nvrtc import compile_kernels
from grader.core.launch import LaunchSpec, Param, bind, integer_param
from grader.exercises.rope import EXERCISE as E
from rope_twins import judge, rope32

pytestmark = pytest.mark.gpu

EXAMPLES = sorted((SUBMISSIONS / "rope").glob("*.cu"))
MIDDLE = (4, 64, 8, 128)
"""A size between the verification sizes and the benchmark: 131072 pairs, many blocks of the check's stride grid."""


def example(gpu, path):
    """(kernel, a function giving the LaunchSpec's values for a Problem and the buffers by role, the LaunchSpec,
    the expected verdict word) of the example at `path`, compiled for `gpu`."""
    text = path.read_text()
    m = re.search(r"^// grade: params = (.+)$", text, re.M)
    params = tuple(v.strip() for v in m.group(1).split(",")) if m else E.default_params
    e = re.search(r"^// grade: elems_per_thread = (\d+)$", text, re.M)
    compiled = compile_kernels(text, path.name, (E.kernel_name,), gpu.info.arch)
    widths = [p.size for p in compiled.kernels[E.kernel_name].params]
    spec = LaunchSpec(tuple(Param(r, "ptr") if r in {q.name for q in E.pointers} else integer_param(r, w)
                            for r, w in zip(params, widths, strict=False)), grid="flat",
                      elems_per_thread=int(e.group(1)) if e else 1)
    kernel = gpu.load(compiled)[E.kernel_name]

    def values(problem, buffers):
        return {r: buffers[r] if r in buffers else problem.integers[r] for r in params}

    verdict = re.match(r"// Expected verdict: (\w+ ?\w*)", text).group(1)
    return kernel, values, spec, verdict


def test_in_drawn_on_the_gpu_is_the_hosts_draw(gpu):
    p = E.problem(MIDDLE)
    dev = E.device(gpu, p)
    try:
        for seed in (1, 2):
            dev.redraw(np.random.default_rng(seed))
            host = E.draw(E.seeds_from(np.random.default_rng(seed)), p)
            got = gpu.download(dev.buffers["in"], p.n, np.float32)
            assert np.array_equal(got.view(np.uint32), host["in"].reshape(-1).view(np.uint32))
            for role in ("cosTab", "sinTab"):
                assert np.array_equal(gpu.download(dev.buffers[role], p.floats[role], np.float32),
                                      host[role].reshape(-1))
    finally:
        dev.close()


def test_the_check_accepts_the_reference_and_names_a_wrong_element_and_a_changed_input(gpu):
    p = E.problem(MIDDLE)
    dev = E.device(gpu, p)
    try:
        dev.redraw(np.random.default_rng(3))
        inputs = E.draw(E.seeds_from(np.random.default_rng(3)), p)
        right = E.reference(inputs, p).astype(np.float32)
        gpu.upload(dev.buffers["out"], right)
        assert dev.check("timed launch 1").passed
        wrong = right.copy()
        wrong.reshape(-1)[p.n - 3] = np.float32(1e30)
        gpu.upload(dev.buffers["out"], wrong)
        v = dev.check("timed launch 2")
        assert not v.passed and v.bad == 1 and v.first_bad.row * p.cols + v.first_bad.col == p.n - 3
        assert "got 1.00000002e+30" in v.message
        gpu.upload(dev.buffers["out"], right)
        x = inputs["in"].copy()
        x.reshape(-1)[1001] += np.float32(1.0)
        gpu.upload(dev.buffers["in"], x)
        v = dev.check("timed launch 3")
        assert not v.passed and v.first_changed == {"in": 1001} and "changed its input in" in v.message
    finally:
        dev.close()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verifies_as_its_first_comment_says(gpu, path):
    kernel, values, spec, verdict = example(gpu, path)
    wrong = verdict == "FAIL verification"
    failed = []
    for dims in E.verify_dims:
        p = E.problem(dims)
        inputs = E.draw(E.seeds_from(np.random.default_rng(sum(dims))), p)
        with GuardedRun(gpu) as run:
            buffers = {r: run.input(r, inputs[r].reshape(-1)).data for r in ("in", "cosTab", "sinTab")}
            out = run.output(p.n)
            buffers["out"] = out.data
            bind(gpu, kernel, spec, *p.grid, values(p, buffers))()
            gpu.sync()
            got = out.read().reshape(p.rows, p.cols)
            assert not out.guard_damage() and not run.changed_inputs(), (dims, out.guard_damage())
        ref = E.reference(inputs, p)
        ok, share = judge(got, ref, E.tolerance(inputs, ref, p))
        if not wrong:
            assert ok.all() and share.max() < 0.5, (dims, share.max())
        elif not ok.all():
            failed.append(dims)
            assert E.mistake(inputs, got, p).name == path.stem, dims  # the file is named after its mistake
    assert not wrong or E.verify_dims[0] in failed


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_on_gpu_check_of_each_example_at_the_benchmark_size(gpu, path):
    kernel, values, spec, verdict = example(gpu, path)
    p = E.bench_problem(gpu.free_bytes(), gpu.info.l2_bytes)
    dev = E.device(gpu, p)
    try:
        for k in range(2):
            dev.redraw(np.random.default_rng(10 + k))
            gpu.fill_words(dev.buffers["out"], E.poison_word, p.n)
            bind(gpu, kernel, spec, *p.grid, values(p, dev.buffers))()
            v = dev.check(f"timed launch {k + 1}")
            if verdict == "FAIL verification":
                assert not v.passed and v.bad > p.n // 2 and "first bad element pair" in v.message
            else:
                assert v.passed, v.message
    finally:
        dev.close()


def test_the_float32_twin_is_what_the_pages_kernel_computes(gpu):
    """The CPU tests' float32 twin (tests/rope_twins.py) against the page's kernel on the GPU: within a few float32
    roundings of each other (the compiler may contract either product into an FMA)."""
    kernel, values, spec, _ = example(gpu, SUBMISSIONS / "rope" / "page_scalar.cu")
    p = E.problem(E.verify_dims[0])
    inputs = E.draw(E.seeds_from(np.random.default_rng(5)), p)
    with GuardedRun(gpu) as run:
        buffers = {r: run.input(r, inputs[r].reshape(-1)).data for r in ("in", "cosTab", "sinTab")}
        out = run.output(p.n)
        buffers["out"] = out.data
        bind(gpu, kernel, spec, *p.grid, values(p, buffers))()
        gpu.sync()
        got = out.read().reshape(p.rows, p.cols)
    twins = [rope32(inputs, p.dims, fma=f) for f in (False, True)]
    ref = E.reference(inputs, p)
    tol = E.tolerance(inputs, ref, p)
    ok, _ = judge(got, ref, tol)
    assert ok.all()
    close = np.minimum(*(np.abs(got.astype(np.float64) - t) for t in twins))
    finite = np.isfinite(ref)
    assert (close[finite] <= tol[finite] / 4).all()
