"""The differential fuzzer of the include lexer against NVRTC (benchmarks/fuzz_lexer.py), bounded: fixed
seeds and a few hundred soups, so it runs in seconds here and in CI (NVRTC needs no GPU). The long run is
`python benchmarks/fuzz_lexer.py --minutes N`."""

import json

import pytest

from conftest import benchmark_module
from grader.source.includes import Scan, normalize


@pytest.fixture(scope="module")
def fuzz():
    yield from benchmark_module("fuzz_lexer")


@pytest.fixture(scope="module")
def canary(fuzz, tmp_path_factory):
    return fuzz.Canary.create(tmp_path_factory.mktemp("fuzz"))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_lexer_and_nvrtc_agree_on_seeded_soups(fuzz, canary, seed):
    report = fuzz.fuzz(seed, canary, soups=60, shrink=False)
    assert report.disagreements == []
    assert report.soups == 60 and report.accepted > 0 and report.canaries_compared > 0


# Every disagreement the fuzzer found, minimized (the run, then the fix):
FOUND = [
    # NVRTC moves its line numbers after a line marker (`%:1`, refused): the judge takes canary lines from
    # the text (fixed in the fuzzer).
    "\n%:1\n# warning CANARY_1 ;",
    # A digit separator's look-ahead refused a raw string two lines down; the lexer's directive list is
    # complete only up to the separator's line (Scan.listed_before).
    "\n# warning CANARY_1 ;if 1'/*\n#warning CANARY_2 ;\n*/R\"x(",
    # In a directive NVRTC takes the `'` into a number only before an alphanumeric: `0x1'f` then `'/*`
    # opens a character literal, no comment (the lexer read `0x1'f'` and a comment).
    "\n#warning CANARY_4 ;0x1'f'/*\n%:warning CANARY_5 ;*/)\"",
    # NVRTC takes no suffix after a character literal with too many characters, or an empty one, so the
    # `R"x(` after it opens a raw string (the lexer read a suffix; such suffixes are refused now).
    "'2R\"x('R\"x(\n# warning CANARY_4 ;",
    "''R\"(\n#warning CANARY_5 ;",
    # In code NVRTC reads `e'+` on as an exponent's sign (`...define'+R` is one number, so no raw string);
    # a `'` after a number that is not followed by a digit or letter is refused now.
    "0x1'fdefine'+R\"x(\n# warning CANARY_1 ;)x\"",
]


@pytest.mark.parametrize("text", FOUND)
def test_disagreements_found_are_fixed(fuzz, canary, text):
    assert fuzz.judge(text, canary).kind is None


def test_the_judge_sees_a_lexer_that_disagrees(fuzz, canary, monkeypatch):
    # A lexer that sees no directive and refuses nothing: NVRTC's canaries and include show it up.
    monkeypatch.setattr(fuzz, "scan", lambda text: Scan(normalized=normalize(text)))
    assert fuzz.judge("int x;\n#warning CANARY_1 ;\n", canary).kind == "nvrtc_only"
    verdict = fuzz.judge(f'#include "{canary.path}"\n', canary)
    assert (verdict.kind, verdict.detail) == ("include", "read the canary file")


def test_the_judge_ignores_canaries_in_skipped_groups_and_after_nvrtc_stops(fuzz, canary):
    text = "#if 0\n#warning CANARY_1 ;\n#endif\n#warning CANARY_2 ;\n#error stop\n#warning CANARY_3 ;\n"
    verdict = fuzz.judge(text, canary)
    assert verdict.kind is None and verdict.compared == 1 and verdict.cut_short


def test_minimize_keeps_the_disagreement(fuzz, canary, monkeypatch):
    monkeypatch.setattr(fuzz, "scan", lambda text: Scan(normalized=normalize(text)))
    pieces = ["int x;", "\n", "/* a */", "\n#warning CANARY_1 ;", "\n", "y"]
    assert "".join(fuzz.minimize(pieces, "nvrtc_only", canary)) == "\n#warning CANARY_1 ;"


def test_script_writes_its_report(fuzz, tmp_path):
    out = tmp_path / "fuzz.json"
    assert fuzz.main(["--minutes", "0.02", "--seed", "7", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["soups"] > 0 and report["disagreements"] == [] and report["seeds"][0] == 7
