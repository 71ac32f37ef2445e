"""The README and docs/ (issue 20): a README whose first screen is the quick start, at most 220 lines, with the
rest in docs/; every relative link, anchor, repository path and `python -m` module they name exists; the README's
commands are the ones CI runs. No GPU needed."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
MAX_README_LINES = 220

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # [text](target); text may span lines
CODE = re.compile(r"`([^`]+)`")
TOP = ("grader/", "reference_kernels/", "tests/", "benchmarks/", "docs/", "submissions/", ".ci/")  # the tree's roots
MODULE = re.compile(r"python -m\s+((?:grader|reference_kernels)(?:\.\w+)+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading's text: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    text = " ".join(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).split()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (outside code blocks), as GitHub makes them (repeats get -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        m = None if fenced else re.match(r"#{1,6} (.+)", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return out


def prose(page: Path) -> str:
    """A page's text with indented code blocks left out (commands there are not links or paths to check)."""
    return "\n".join(line for line in page.read_text(encoding="utf-8").splitlines() if not line.startswith("    "))


def test_readme_is_at_most_220_lines_and_links_every_doc():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move text to docs/"
    linked = {(README.parent / t.split("#")[0]).resolve() for t in LINK.findall(README.read_text(encoding="utf-8"))}
    assert {p.resolve() for p in DOCS} - linked == set(), "a page of docs/ the README does not link"
    names = {p.name for p in DOCS}
    assert {"grading.md", "submissions.md", "batch.md", "security.md", "reference-kernels.md", "development.md",
            "h200.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto: (not checked: no network in tests)
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or ROOT.resolve() not in dest.parents:
            broken.append(f"{target}: no such file in the repository")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.relative_to(ROOT.resolve())}")
    assert broken == []


def test_the_slug_is_githubs():
    assert slug("For an instructor: `grade batch`") == "for-an-instructor-grade-batch"
    assert slug("Gradescope's \"Export Submissions\"") == "gradescopes-export-submissions"
    assert slug("4. Grade: bytes, fraction, thresholds") == "4-grade-bytes-fraction-thresholds"


def test_every_repository_path_the_docs_name_is_tracked():
    """A path such as `grader/source/prelude.py` or `tests/data/programs/` in README.md or docs/ names a tracked file or
    a folder holding one (so a module moved without its docs fails here)."""
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout (an sdist): the files to check are the repository's")
    files = set(tracked.stdout.splitlines())
    folders = {str(Path(f).parent) + "/" for f in files} | {p + "/" for f in files for p in _parents(f)}
    missing = []
    for page in PAGES:
        for span in CODE.findall(prose(page)):
            for word in span.split():
                path = word.rstrip(".,;:)").lstrip("(")
                if path.startswith(TOP) and not any(c in path for c in "*<>{}$"):
                    if path not in files and path.rstrip("/") + "/" not in folders:
                        missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert missing == []


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def test_every_module_run_with_python_m_exists():
    """`python -m grader.batch.worker` and the like, in README.md and docs/, name a module that exists."""
    named = {m for page in PAGES for m in MODULE.findall(page.read_text(encoding="utf-8"))}
    assert named, "the docs name the processes the grader starts (python -m ...)"
    assert sorted(m for m in named if importlib.util.find_spec(m) is None) == []


def test_the_readme_commands_are_the_ones_ci_runs():
    """The README's first command is what CI's newest Python runs (install, grade an example), and its test
    command is exactly what CI's oldest Python runs, with the same extras."""
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in readme.splitlines() if line.startswith("    pip install ")]
    first, test = commands[0], next(c for c in commands if "pytest" in c)
    example = re.fullmatch(r'pip install "\.\[cu13\]" && grade (submissions/\w+\.cu)', first)
    assert example and (ROOT / example.group(1)).is_file(), first
    assert f'grade "$OLDPWD/{example.group(1)}"' in ci
    extras = re.fullmatch(r'pip install "(\.\[[\w,]+\])" && (python -m pytest -q)', test)
    assert extras, test
    assert f'python -m pip install -q "{extras.group(1)}"' in ci
    assert re.search(rf"^(\w+=\S+ )*{re.escape(extras.group(2))}$", ci, re.M), "CI runs the README's test command"


SECTION = re.compile(r'(docs/[\w.-]+\.md|README)(?:\.md)?,? \(?"([^"]+)"')


def test_the_docs_and_sections_the_code_names_exist():
    """The code's pointers to the documentation (`docs/batch.md`, `README, "Exit codes"`, `docs/grading.md
    ("Counters")`) name a page, and a heading of it, that exist."""
    broken = []
    for path in sorted(p for d in ("grader", "reference_kernels", "benchmarks", "tests", ".ci")
                       for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".sh", ".cu", "") and p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        for doc in set(re.findall(r"docs/[\w.-]+\.md", text)):
            if not (ROOT / doc).is_file():
                broken.append(f"{path.relative_to(ROOT)}: {doc}")
        for doc, heading in SECTION.findall(text):
            page = ROOT / (doc if doc.endswith(".md") else "README.md")
            if page.is_file() and slug(heading) not in anchors(page):
                broken.append(f"{path.relative_to(ROOT)}: {doc}, \"{heading}\": no such heading")
    assert broken == []
