"""The grader's own kernels compiled once per NVRTC version and arch (grader.compile.kernel_cache): from memory, then
from the cache folder; a torn, foreign or planted entry is never used; writers running at once leave whole
entries; the cache can be turned off and cleared. No GPU needed (NVRTC compiles to cubin without one)."""

from __future__ import annotations

import os
import stat
import threading
from importlib.resources import files as kernel_files

import pytest

from grader.compile import kernel_cache

ARCH = "sm_90"
SOURCE = "floor.cu"
KERNELS = ("copyScalar", "copyVec4")


def floor_text() -> str:
    return kernel_files("grader.gpu.kernels").joinpath(SOURCE).read_text()


def same(a, b) -> bool:
    """Two compiles of one source: the same cubin and kernels (ptxas's log names its own compile time)."""
    return a.cubin == b.cubin and a.kernels == b.kernels and a.ptx == b.ptx


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder (0700) and an empty memory; `compiles` counts NVRTC compiles."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv(kernel_cache.ENV, str(folder))
    monkeypatch.setattr(kernel_cache, "_memory", {})
    compiles = []
    real = kernel_cache.compile_kernels

    def counted(*args):
        compiles.append(args[1])
        return real(*args)

    monkeypatch.setattr(kernel_cache, "compile_kernels", counted)
    return folder, compiles


def test_compiled_once_then_from_memory_then_from_disk(cache):
    folder, compiles = cache
    first = kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH) is first and compiles == [SOURCE]
    assert len(kernel_cache.entries()) == 1
    kernel_cache._memory.clear()  # a new process: the disk answers
    again = kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert compiles == [SOURCE] and again == first and again is not first
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, "sm_80")  # another arch is another entry
    assert compiles == [SOURCE, SOURCE] and len(kernel_cache.entries()) == 2


def test_a_changed_source_is_compiled_again(cache):
    folder, compiles = cache
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    kernel_cache.compiled(floor_text() + "\n// changed\n", SOURCE, KERNELS, ARCH)
    assert compiles == [SOURCE, SOURCE]


@pytest.mark.parametrize("damage", ["torn", "foreign key", "other cubin", "not json"])
def test_a_damaged_entry_is_not_used_and_is_written_again(cache, damage):
    folder, compiles = cache
    good = kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    (entry,) = kernel_cache.entries()
    text = entry.read_text()
    entry.write_text({"torn": text[: len(text) // 2], "foreign key": text.replace('"key": "', '"key": "0', 1),
                      "other cubin": text.replace('"cubin": "', '"cubin": "AAAA', 1), "not json": "\x00"}[damage])
    kernel_cache._memory.clear()
    assert same(kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH), good)
    assert compiles == [SOURCE, SOURCE]
    kernel_cache._memory.clear()
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert compiles == [SOURCE, SOURCE]  # rewritten whole: read from disk again


@pytest.mark.skipif(os.name != "posix", reason="folder ownership and modes are POSIX's")
def test_a_folder_others_may_write_to_is_not_read(cache):
    folder, compiles = cache
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    folder.chmod(0o777)  # a planted cubin of the copies would move the floor
    kernel_cache._memory.clear()
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert compiles == [SOURCE, SOURCE]
    folder.chmod(0o700)


def test_off_writes_nothing_and_clear_empties_the_folder(cache, monkeypatch):
    folder, compiles = cache
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert kernel_cache.clear() == 1 and kernel_cache.entries() == [] and kernel_cache._memory == {}
    monkeypatch.setenv(kernel_cache.ENV, "off")
    assert kernel_cache.folder() is None
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert not any(folder.iterdir()) and compiles == [SOURCE, SOURCE]


def test_an_unwritable_folder_is_no_error(cache, tmp_path, monkeypatch):
    target = tmp_path / "file-not-folder"
    target.write_text("x")
    monkeypatch.setenv(kernel_cache.ENV, str(target / "cache"))
    assert kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH).cubin


def test_writers_at_once_leave_only_whole_entries(cache):
    folder, _ = cache
    good = kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    key = kernel_cache._key(floor_text(), SOURCE, KERNELS, ARCH)
    path = folder / f"{key}.json"
    seen, stop = [], threading.Event()

    def writer():
        for _ in range(40):
            kernel_cache._write(folder, key, good)

    def reader():
        while not stop.is_set():
            seen.append(kernel_cache._read(path, key))

    threads = [threading.Thread(target=writer) for _ in range(2)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert seen and all(c == good for c in seen)
    assert [p.name for p in folder.iterdir()] == [path.name]  # no temporary file left behind
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_grade_cache_shows_and_clears(cache, capsys):
    from grader.cli import main

    folder, _ = cache
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert main(["cache"]) == 0
    assert f"{folder}: 1 entries" in capsys.readouterr().out
    assert main(["cache", "--clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out and kernel_cache.entries() == []


def test_only_entries_are_counted_read_and_cleared(cache):
    folder, compiles = cache
    (folder / "gradebook.json").write_text("{}")  # a folder shared with other files: they are not ours
    (folder / "notes.txt").write_text("keep")
    kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    assert len(kernel_cache.entries()) == 1 and kernel_cache.clear() == 1
    assert sorted(p.name for p in folder.iterdir()) == ["gradebook.json", "notes.txt"]


@pytest.mark.parametrize("plant", ["fifo", "deep", "kernels as a list", "edited ptx"])
def test_a_planted_entry_is_never_used_and_never_hangs(cache, plant):
    folder, compiles = cache
    good = kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH)
    (entry,) = kernel_cache.entries()
    text = entry.read_text()
    entry.unlink()
    if plant == "fifo":
        os.mkfifo(entry)  # opened without blocking, then refused: not a regular file
    else:
        entry.write_text({"deep": "[" * 200_000, "kernels as a list": text.replace('"kernels": {', '"kernels": [{', 1),
                          "edited ptx": text.replace('"ptx": "', '"ptx": "// edited\\n', 1)}[plant])
    kernel_cache._memory.clear()
    assert same(kernel_cache.compiled(floor_text(), SOURCE, KERNELS, ARCH), good) and compiles == [SOURCE, SOURCE]


def test_workers_get_the_cache_folder_and_the_gpu_lock_folder_as_this_process_resolved_them(tmp_path, monkeypatch):
    from grader.batch import pool
    from grader.timing import contention

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(kernel_cache.ENV, "relative/cache")  # the worker runs in a folder of its own
    env = pool.child_env(None)
    assert env[kernel_cache.ENV] == str(tmp_path / "relative" / "cache")
    assert env["GRADER_LOCK_DIR"] == contention.LOCK_DIR  # not the worker's private TMPDIR
    monkeypatch.setenv(kernel_cache.ENV, "off")
    assert pool.child_env(None)[kernel_cache.ENV] == "off"
