"""The tokenizer of C source (grader.source.lexer): phases 1-2 with their map back to the file, and every token form,
read as NVRTC reads it. The include policy's NVRTC cases are in tests/test_directives.py."""

import random

import pytest

from conftest import assert_linear
from grader.source.lexer import (
    BAD_RAW,
    BLANK,
    CHAR,
    COMMENT,
    IDENT,
    NEWLINE,
    NUMBER,
    OPEN_COMMENT,
    OPEN_RAW,
    OTHER,
    PUNCT,
    RAW,
    STRING,
    Spliced,
    literal_quote,
    normalize,
    token_at,
    tokens,
)


def lexed(s: str, **kw) -> list[tuple[str, str]]:
    """(kind, text) of every token of `s` but blanks."""
    return [(t.kind, t.text(s)) for t in tokens(s, **kw) if t.kind != BLANK]


@pytest.mark.parametrize("source, expected", [
    # raw strings: any legal delimiter, a `"` or `'` in it too; prefixes; a suffix
    ('R"a"b(\n#x )a" )a"b"_s;', [(RAW, 'R"a"b(\n#x )a" )a"b"_s'), (PUNCT, ";")]),
    ('u8R""(x)"")"";', [(RAW, 'u8R""(x)""'), (PUNCT, ")"), (STRING, '""'), (PUNCT, ";")]),
    ("LR\"'#(x)'#\"", [(RAW, "LR\"'#(x)'#\"")]),
    ('R"{}[]<>%:;.?*+-/^(x){}[]<>%:;.?*+-/^"', [(RAW, 'R"{}[]<>%:;.?*+-/^(x){}[]<>%:;.?*+-/^"')]),
    ("R\"&|~!=,#'\"_aZ09(x)&|~!=,#'\"_aZ09\"", [(RAW, "R\"&|~!=,#'\"_aZ09(x)&|~!=,#'\"_aZ09\"")]),
    # a delimiter NVRTC calls invalid ($), one over 16 characters, one with a blank: BAD_RAW, lexed on after
    ('R"$(x)$"', [(BAD_RAW, 'R"'), (OTHER, "$"), (PUNCT, "("), (IDENT, "x"), (PUNCT, ")"), (OTHER, "$"),
                  (STRING, '"')]),
    ('R"' + "a" * 17 + '(', [(BAD_RAW, 'R"'), (IDENT, "a" * 17), (PUNCT, "(")]),
    ('R"(no end\n', [(OPEN_RAW, 'R"(no end\n')]),
    # strings and characters: prefixes, suffixes, escapes, and the line's end
    ('u8"a\\"b"_x U\'c\' L"" u\'\\\'\'', [(STRING, 'u8"a\\"b"_x'), (CHAR, "U'c'"), (STRING, 'L""'),
                                          (CHAR, "u'\\''")]),
    ('""R"(x)"', [(STRING, '""R'), (STRING, '"(x)"')]),  # the R is a suffix: no raw string
    ('"ab\\\n', [(STRING, '"ab\\'), (NEWLINE, "\n")]),  # an escape never takes a newline
    ("'a\n'", [(CHAR, "'a"), (NEWLINE, "\n"), (CHAR, "'")]),
    # pp-numbers, digit separators, user-defined literals
    ("1'000'000 0x1p-3f .5e+3_km 1.5_x 0b1'0", [(NUMBER, "1'000'000"), (NUMBER, "0x1p-3f"), (NUMBER, ".5e+3_km"),
                                                 (NUMBER, "1.5_x"), (NUMBER, "0b1'0")]),
    ("1'+'/*'", [(NUMBER, "1'"), (PUNCT, "+"), (CHAR, "'/*'")]),  # NVRTC's reading in code
    # identifiers: ASCII, and a backslash-u joins one whatever follows (NVRTC: \uR, \u00R)
    ('\\uR"(x)" a\\u0041b \\u00R', [(IDENT, "\\uR"), (STRING, '"(x)"'), (IDENT, "a\\u0041b"), (IDENT, "\\u00R")]),
    ("\u00e9x $ @ \\ ", [(OTHER, "\u00e9"), (IDENT, "x"), (OTHER, "$"), (OTHER, "@"), (OTHER, "\\")]),
    # punctuators: maximal munch, digraphs, the <:: rule
    ("a-->b<<=c->*d...e.*f", [(IDENT, "a"), (PUNCT, "--"), (PUNCT, ">"), (IDENT, "b"), (PUNCT, "<<="), (IDENT, "c"),
                              (PUNCT, "->*"), (IDENT, "d"), (PUNCT, "..."), (IDENT, "e"), (PUNCT, ".*"),
                              (IDENT, "f")]),
    ("<% %> <: :> %: %:%: <::x <::>", [(PUNCT, "<%"), (PUNCT, "%>"), (PUNCT, "<:"), (PUNCT, ":>"), (PUNCT, "%:"),
                                       (PUNCT, "%:%:"), (PUNCT, "<"), (PUNCT, "::"), (IDENT, "x"), (PUNCT, "<:"),
                                       (PUNCT, ":>")]),
    # comments
    ('// a "b\n/* c\n */ /* open', [(COMMENT, '// a "b'), (NEWLINE, "\n"), (COMMENT, "/* c\n */"),
                                    (OPEN_COMMENT, "/* open")]),
])
def test_every_token_form(source, expected):
    assert lexed(source) == expected


def test_a_skipped_group_reads_a_quote_after_digits_as_a_character_literal():
    assert lexed("1'000'0;", skipped=True) == [(NUMBER, "1"), (CHAR, "'000'"), (NUMBER, "0"), (PUNCT, ";")]
    assert lexed("1'000'0;") == [(NUMBER, "1'000'0"), (PUNCT, ";")]


def test_literal_parts():
    s = 'u8R"a"b(x)a"b"_s'
    tok = token_at(s, 0)
    assert (tok.kind, literal_quote(s, tok), s[tok.suffix :]) == (RAW, 3, "_s")
    s = "'a'_x"
    assert s[token_at(s, 0).suffix :] == "_x"
    assert token_at('"open', 0).suffix == -1


def test_splices_map_back_to_lines_and_columns():
    text = normalize("\ufeffab\\\r\ncd\ref\\\n\\\ngh")
    assert text == "ab\\\ncd\nef\\\n\\\ngh"
    sp = Spliced(text)
    assert sp.s == "abcd\nefgh" and sp.splices == [2, 7, 7]
    assert [sp.offset(k) for k in range(len(sp.s) + 1)] == [0, 1, 4, 5, 6, 7, 8, 13, 14, 15]
    assert [sp.line(k) for k in range(len(sp.s))] == [1, 1, 2, 2, 2, 3, 3, 5, 5]
    assert [sp.column(k) for k in range(len(sp.s))] == [1, 2, 1, 2, 3, 1, 2, 1, 2]
    assert all(sp.index(sp.offset(k)) == k for k in range(len(sp.s)))
    assert Spliced("a\\ \nb").s == "a\\ \nb"  # blanks after the backslash: no splice (NVRTC)


SOUP = ['R"a"b(', ')a"b"', 'R"(', ')"', '"', "'", "/*", "*/", "//", "\\\n", "\\", "\n", " ", "1'", "'2", "0x1'f",
        "\\u0041", "u8", "R", "<%", ":>", "<::", "%:%:", "#", "x", "'a'_x", '""R', "é", "$", "e+", ".", "??="]


@pytest.mark.parametrize("seed", range(5))
def test_tokens_cover_the_text_with_no_gap(seed):
    rng = random.Random(seed)
    for _ in range(300):
        s = "".join(rng.choice(SOUP) for _ in range(rng.randint(1, 40)))
        for skipped in (False, True):
            toks = list(tokens(s, skipped=skipped))
            assert "".join(t.text(s) for t in toks) == s
            assert all(a.end == b.start for a, b in zip(toks, toks[1:], strict=False))


@pytest.mark.parametrize("make", [
    lambda n: "a" * n, lambda n: "1'" * (n // 2), lambda n: "/*" * (n // 2), lambda n: 'R"(' * (n // 3),
    lambda n: 'R"' * (n // 2), lambda n: 'R"a"b(' * (n // 6), lambda n: '"\\\n' * (n // 3), lambda n: "\\\n" * (n // 2),
    lambda n: "<::" * (n // 3), lambda n: "'" * n, lambda n: "x/**/" * (n // 5),
    lambda n: 'R"abcdefghijklmnop' * (n // 18),
], ids=["ident", "separators", "open-comments", "open-raw", "bad-raw", "raw-quote-delimiter", "string-splice",
        "splices", "digraphs", "quotes", "comments", "long-delimiters"])
def test_tokenizing_is_linear(make):
    def run(text):
        sp = Spliced(text)
        return sum(1 for _ in tokens(sp.s)), sp.line(len(sp.s) // 2)

    assert_linear(run, make, 256 * 1024)
