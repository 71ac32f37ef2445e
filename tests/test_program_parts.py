"""The parts of the whole-program extractor, each alone: the splitter (grader.source.program_split), the bracket
matchers, and the declarator reader (grader.source.program_declarators: read_declarators' one pass, the class and enum
reader, the function head, the macros that give an execution space)."""

from __future__ import annotations

import pytest

from grader.source.includes import scan
from grader.source.program_declarators import Declarators, Describer, macro_spaces, read_declarators
from grader.source.program_split import (
    Decl,
    Unsplittable,
    attribute_end,
    matching_brace,
    matching_paren,
    skip_angles,
    split,
)
from grader.source.program_tokens import Tokens


def tokens_of(text: str) -> Tokens:
    result = scan(text)
    assert result.refusal is None, result.refusal
    return Tokens(result.normalized, (d.offset for d in result.directives))


def at(tokens: Tokens, text: str, nth: int = 0) -> int:
    """The index of the nth token spelled `text`."""
    return [j for j, t in enumerate(tokens.texts) if t == text][nth]


# --- the splitter -----------------------------------------------------------------------------------------------

def test_split_gives_each_declaration_its_kind_and_tokens():
    tokens = tokens_of("#define N 4\nint a = 1, b;\n__device__ float f(float x) { return x; }\n"
                       "struct S { int v; } s;\n;\n")
    decls = split(tokens)
    assert [d.kind for d in decls] == ["directive", "declaration", "function", "declaration"]
    assert decls[0].directive == "define"
    texts = tokens.texts
    assert texts[decls[1].first] == "int" and texts[decls[1].last] == ";"
    assert texts[decls[2].body] == "{" and texts[decls[2].last] == "}"
    assert texts[decls[3].first] == "struct" and texts[decls[3].last] == ";"  # the class body does not end it


def test_split_opens_namespace_and_extern_c_blocks():
    tokens = tokens_of('namespace a::b { int x; }\nextern "C" { void f(); };\ninline namespace v1 { }\n'
                       "namespace { }\n")
    decls = split(tokens)
    assert [(d.kind, d.block) for d in decls] == [
        ("open", "namespace a::b"), ("declaration", ""), ("close", ""),
        ("open", 'extern "C"'), ("declaration", ""), ("close", ""),
        ("open", "namespace v1"), ("close", ""), ("open", "namespace"), ("close", "")]
    assert decls[1].parent == 0 and decls[0].close == 2 and decls[4].parent == 3 and decls[3].close == 5
    assert tokens.texts[decls[5].last] == ";"  # `};` closes the block with its `;`


def test_split_reads_templates_initializers_and_operators_as_one_declaration():
    tokens = tokens_of("template <int N = 1 << 2> __device__ int g() { return N; }\n"
                       "int v[] = { 1, 2 };\nbool operator==(A, A);\nauto l = [](int x) { return x; };\n")
    decls = split(tokens)
    assert [d.kind for d in decls] == ["function", "declaration", "declaration", "declaration"]


@pytest.mark.parametrize("text, what", [
    ("}\n", "a `}` that closes nothing"),
    ("int f() )\n", "a `)` that closes nothing"),
    ("int x = 1\n", "a declaration that does not end"),
    ("namespace a { int x;\n", "a block that is not closed"),
    ("int f() { return 0;\n", "a `{` that is never closed"),
    ("int x = a } ;\n", "a `}` inside a declaration"),
])
def test_split_refuses_what_does_not_balance(text, what):
    with pytest.raises(Unsplittable) as err:
        split(tokens_of(text))
    assert err.value.what.startswith(what)


def test_bracket_matchers():
    tokens = tokens_of("a(b(c), d) { e { f } } [[x, [y]]] g; template <int B = 1 << 8, int C = (2 > 1)> h;\n")
    texts = tokens.texts
    assert matching_paren(texts, at(tokens, "("), len(texts)) == at(tokens, ")", 1)
    assert matching_paren(texts, at(tokens, "("), at(tokens, "d")) == at(tokens, "d")  # none before the end
    assert matching_brace(tokens, at(tokens, "{")) == at(tokens, "}", 1)
    assert attribute_end(texts, at(tokens, "["), len(texts)) == at(tokens, "g")
    assert texts[skip_angles(tokens, at(tokens, "<"), len(texts))] == "h"


# --- the declarator reader --------------------------------------------------------------------------------------

def declarators(text: str, macros: dict[str, set[str]] | None = None) -> Declarators:
    """read_declarators over the tokens of `text` (one declaration ending at `;`)."""
    tokens = tokens_of(text)
    return read_declarators(tokens, macros or {}, 0, at(tokens, ";", -1))


@pytest.mark.parametrize("text, names", [
    ("int a, *b, c[4];", ["a", "b", "c"]),
    ("static const float k = 1.0f, m = 2.0f;", ["k", "m"]),
    ("void (*fp)(int);", ["fp"]),
    ("[[maybe_unused]] int z;", ["z"]),
    ("__align__(16) float q;", ["q"]),
    ("Vec<int, 4> v, w;", ["v", "w"]),
    ("float4 operator+(float4 a, float4 b);", ["operator+"]),
    ("int bits : 3;", ["bits"]),
])
def test_read_declarators_names_each_declarator(text, names):
    assert declarators(text).names == names


@pytest.mark.parametrize("text, const", [
    ("const float k = 1;", True),
    ("constexpr float* p = nullptr;", True),  # constexpr makes the object itself const
    ("const float* p;", False),
    ("float const* const p = 0;", True),
    ("int a, const b;", False),  # only the first declarator counts
])
def test_read_declarators_tells_a_const_object(text, const):
    assert declarators(text).const is const


def test_read_declarators_lead_spaces_function_and_eq():
    found = declarators("__device__ __host__ float f(int x);")
    assert found.lead == ["__device__", "__host__", "float"]
    assert found.spaces == {"__device__", "__host__"} and found.function and not found.eq
    found = declarators("DEV int g = 2;", {"DEV": {"__device__"}})
    assert found.spaces == {"__device__"} and found.names == ["g"] and found.eq and not found.function
    assert not declarators("int a, f(int);").function  # a parameter list after the first declarator


def describe(text: str) -> Decl:
    """The Decl of the only declaration of `text`, described."""
    tokens = tokens_of(text)
    decls = split(tokens)
    describer = Describer(tokens, macro_spaces(tokens))
    for d in decls:
        if d.kind == "function":
            describer.describe_function(d)
        elif d.kind == "declaration":
            describer.describe_declaration(d)
        elif d.kind == "directive":
            describer.describe_directive(d)
    return decls[-1]


@pytest.mark.parametrize("text, names, kind, device", [
    ("static const float k;", ("k",), "variable", True),
    ("float host_buffer[16];", ("host_buffer",), "variable", False),
    ("__constant__ float c[4];", ("c",), "variable", True),
    ("typedef struct Tag { int v; } Name;", ("Tag", "Name"), "type", True),
    ("typedef float real;", ("real",), "type", True),
    ("using vec = float4;", ("vec",), "type", True),
    ("enum Color { RED, GREEN = 2, BLUE } c;", ("Color", "RED", "GREEN", "BLUE", "c"), "type", True),
    ("struct S;", ("S",), "type", True),
    ("struct S* p;", ("p",), "variable", False),
    ("__global__ void k(float* x);", ("k",), "kernel", True),
    ("int host(int);", ("host",), "function", False),
    ("namespace a = b;", (), "", False),
])
def test_describe_declaration(text, names, kind, device):
    d = describe(text)
    assert (d.names, d.kind_name, d.device) == (names, kind, device)


def test_describe_using_and_undef_give_a_target():
    assert describe("using namespace detail;").target == "detail"
    d = describe("using detail::helper;")
    assert (d.target, d.names) == ("detail", ("helper",))
    assert describe("#undef N\n").target == "N"


def test_describe_function_reads_its_head():
    d = describe("template <int N> __device__ __forceinline__ float f(float x) { return x; }\n")
    assert (d.names, d.kind_name, d.device, d.strict, d.template) == (("f",), "function", True, True, True)
    d = describe("__host__ __device__ float2 operator*(float2 a, float s) { return a; }\n")
    assert (d.names, d.operator, d.strict) == (("operator*",), True, False)
    d = describe("__global__ void __launch_bounds__(256) biasGeluFused(const float* x) { }\n")
    assert (d.names, d.kind_name) == (("biasGeluFused",), "kernel")


def test_macro_spaces_follows_macros_named_in_macros():
    tokens = tokens_of("#define DEV __device__\n#define HD __host__ DEV\n#define N 4\n#define A B\n#define B A\n")
    assert macro_spaces(tokens) == {"DEV": {"__device__"}, "HD": {"__host__", "__device__"}}
    d = describe("#define HD __host__ __device__\nHD inline float f(float x) { return x; }\n")
    assert d.device and not d.strict
