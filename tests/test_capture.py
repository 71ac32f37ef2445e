"""Kernel output (device printf reaches file descriptor 1) is captured, bounded and escaped
(grader.gpu.capture), and `grade FILE` keeps its stdout for the report alone, in every format."""

from __future__ import annotations

import ctypes
import json
import os

import pytest

from grader import cli
from grader.gpu import capture
from grader.gpu.capture import Captured, capture_stdout
from tests.fake_gpu import FakeGpu

FORGED = 'Verdict: GOLD: 0.999 of the copy floor\n{"verdict": "gold", "fraction": 0.999}\n\x1b[2J\x1b]0;title\x07\n'


def test_descriptor_1_and_c_stdio_are_captured_and_restored(capfd):
    libc = ctypes.CDLL(None)
    with capture_stdout() as got:
        os.write(1, b"from os.write\n")
        libc.printf(b"from printf %d\n", 7)  # C stdio, buffered: flushed before the descriptor is restored
    os.write(1, b"after\n")
    assert got.lines == ["from os.write", "from printf 7"]
    assert capfd.readouterr().out == "after\n"


def test_output_is_bounded_and_escaped():
    with capture_stdout() as got:
        os.write(1, b"\x1b[2Jclear\n" + b"y" * 5000 + b"\n")
        for i in range(200_000):  # a kernel that prints in a loop: counted, not kept
            os.write(1, b"line %d\n" % i) if i < 3 else None
        os.write(1, b"z\n" * 100_000)
    assert got.lines[0] == "\\x1b[2Jclear"
    assert len(got.lines[1]) == capture.MAX_LINE_CHARS and got.lines[1].endswith("...")
    assert len(got.lines) == capture.MAX_LINES
    assert got.dropped == 2 + 3 + 100_000 - capture.MAX_LINES
    assert got.nbytes > 200_000


def _fake_gpu_run(printed: bytes):
    def run(gpu, spec, out, stage):
        from grader.check.verify import Verification
        from grader.core.errors import WrongOutput

        os.write(1, printed)
        ctypes.CDLL(None).printf(b"%s", b"from C stdio\n")
        raise WrongOutput(Verification(rows=1, cols=1, passed=False, total=1, message="wrong (stand-in)"))
    return run


@pytest.mark.parametrize("fmt", ["json", "text", "gradescope"])
def test_kernel_output_cannot_forge_the_report(monkeypatch, capfd, fmt):
    import grader.pipeline.grade as g

    monkeypatch.setattr(g, "open_gpu", lambda _device=0: FakeGpu())
    monkeypatch.setattr(g, "_run_on_gpu", _fake_gpu_run(FORGED.encode()))
    code = cli.main(["submissions/gold_float4.cu", "--format", fmt])
    out = capfd.readouterr().out
    assert code == 1
    if fmt == "text":
        assert "Verdict: FAIL" in out and "\nVerdict: GOLD" not in out and "\x1b" not in out
        assert "  | Verdict: GOLD: 0.999 of the copy floor" in out and "  | \\x1b[2J" in out
        return
    doc = json.loads(out)  # one valid document: nothing else on stdout
    if fmt == "json":
        assert doc["verdict"] == "fail"
        assert doc["kernel_output"][:2] == ["Verdict: GOLD: 0.999 of the copy floor",
                                            '{"verdict": "gold", "fraction": 0.999}']
        assert doc["kernel_output"][-1] == "from C stdio" and doc["kernel_output_dropped"] == 0


def test_captured_add_counts_past_the_limit():
    c = Captured()
    for i in range(capture.MAX_LINES + 5):
        c.add(b"%d" % i)
    assert c.lines[-1] == str(capture.MAX_LINES - 1) and c.dropped == 5
