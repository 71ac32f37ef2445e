"""Issue 30: the instructor's route holds. Whose metadata counts (a class folder's own, or one given as a PATH;
never a file inside a submission), who is who (`grade batch uploads/*` gives the ids `grade batch uploads/` gives,
every row its path relative to the class, a student on two submissions named), merges that lose no student
(torn, duplicate and foreign rows named by file and line, verdicts read from their reports, only the files a batch
writes, writers that never crash each other), reports that name no path of the grading machine, and one grammar
for the commands (--json, --format, exit codes). No GPU needed: the rows are the static checks' (or a stand-in
worker's)."""

from __future__ import annotations

import threading
from pathlib import Path

from grader.output.student_files import write_atomic


def test_two_writers_of_one_file_never_crash_each_other(tmp_path):
    target = tmp_path / "gradebook.json"
    errors: list[BaseException] = []
    texts = [f"writer {n}\n" * 2000 for n in range(4)]

    def write(n: int) -> None:
        try:
            for _ in range(150):
                write_atomic(target, texts[n])
        except OSError as err:  # with one fixed temporary name: FileNotFoundError ... gradebook.json.tmp
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text() in texts  # one writer's whole text, never a mix
    assert [p.name for p in tmp_path.iterdir()] == ["gradebook.json"]  # no temporary file left behind
    assert target.stat().st_mode & 0o777 == 0o644 & ~_umask()


def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask
