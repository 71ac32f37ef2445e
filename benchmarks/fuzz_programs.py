"""Fuzz whole programs against nvcc: random programs around a kernel, extracted by the grader and compiled
both ways (benchmarks/nvcc_oracle.py), biasGeluFused's machine code compared.

    python benchmarks/fuzz_programs.py [--minutes 5] [--seed 1] [--out results/fuzz_programs.json] [--jobs 1]

Each program (make_program, seeded by "SEED:K" for program K, so any one is made again from its seed) is a
list of chunks: includes of host headers (PROGRAM_INCLUDES), the kernel (before main, or after it with a
forward declaration; sometimes `extern "C"`, sometimes with launch bounds), main with a launch, and around
them, at random places:
- device code the kernel uses (FEATURES): macros (plain, function-like, chosen by an `#if`, defined inside
  main's body, #undef'd and redefined after the kernel for the host), constexpr/const and `__constant__` and
  `__device__` variables, helpers (inline, noinline, `__host__ __device__`, in a namespace, nested or
  anonymous, templates), structs with functions or call operators, operator overloads, enums, typedefs and
  aliases, `#if` alternatives, lambdas and `#pragma unroll` loops in the kernel, and rarely a
  push_macro/pop_macro pair (which the grader must refuse);
- code the kernel does not use (NOISE): host functions, templates, structs and variables, other kernels,
  unused device helpers and macros, a CUDA_CHECK macro with line splices, `#if 0` groups holding a wrong
  biasGeluFused, comments and strings (raw strings too) holding code and directives, `using namespace std`,
  includes in the middle, allowed pragmas;
- and sometimes: runs of chunks inside an `#if` group nvcc takes, a comment or a line splice in the kernel's
  head, CR LF line ends throughout.

A program is judged by nvcc_oracle.judge: same, different, nvrtc-rejects (both disagreements), refused (the
grader refuses with a message: counted by message), nvcc-rejects (the generator made a program nvcc does not
build: counted, a few kept as examples), not-a-program. Each disagreement is shrunk (chunks, then lines,
removed while the verdict stays the same) and written with its program's seed. The output file (JSON) holds
the counts, the refusal messages, the examples and the disagreements. Exit status: 0 when none was found, 1
when some were, 2 when the oracle is unavailable or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nvcc_oracle  # noqa: E402

from grader.source.includes import PROGRAM_INCLUDES  # noqa: E402

SIGNATURE = "const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ out, size_t cols"
HEADERS = sorted(PROGRAM_INCLUDES)
MAX_SHRINK_TRIES = 120


def f(rng: random.Random) -> str:
    """A float literal, short."""
    return f"{rng.uniform(0.05, 2.0):.3f}f"


@dataclass
class Feature:
    """Device code the kernel uses: `before` (chunks that precede the kernel), `use` (statements of the kernel's
    body on `v`), `in_main` (a `#define` placed in main's body instead, for a kernel after main), `after`
    (chunks after the kernel), `headers` it needs, `bounds` (the kernel's `__launch_bounds__` argument)."""

    before: list[str]
    use: str
    in_main: str = ""
    after: list[str] = field(default_factory=list)
    headers: tuple[str, ...] = ()
    bounds: str = ""


def macro_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    name = f"SC{k}"
    use = f"    v = v * {name} + 0.1f;\n"
    after = [f"#undef {name}\n#define {name} {f(rng)}\nstatic float hostScale{k}() {{ return {name}; }}\n"] \
        if rng.random() < 0.4 else []
    kind = rng.randrange(4)
    if kind == 0 and after_main:
        return Feature([], use, in_main=f"#define {name} {f(rng)}\n", after=after)
    if kind == 1:
        mode = rng.randint(0, 3)
        return Feature([f"#define MODE{k} {mode}\n#if MODE{k} > 1\n#define {name} {f(rng)}\n#else\n#define {name} "
                        f"{f(rng)}\n#endif\n"], use, after=after)
    if kind == 2:
        return Feature([f"#define SQ{k}(a) ((a) * (a) * {f(rng)})\n#define {name} SQ{k}({f(rng)})\n"], use, after=after)
    return Feature([f"#define {name} {f(rng)}\n"], use, after=after)


def variable_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    kind = rng.randrange(5)
    if kind == 0:
        return Feature([f"constexpr float kC{k} = {f(rng)};\n"], f"    v += kC{k};\n")
    if kind == 1:
        return Feature([f"static const float kS{k} = {f(rng)};\n"], f"    v -= kS{k};\n")
    if kind == 2:
        values = ", ".join(f(rng) for _ in range(4))
        return Feature([f"__constant__ float cT{k}[4] = {{{values}}};\n"], f"    v += cT{k}[i & 3];\n")
    if kind == 3:
        return Feature([f"__device__ float g{k} = {f(rng)};\n"], f"    v += g{k};\n")
    return Feature([f"enum E{k} {{ EA{k} = 1, EB{k} = {rng.randint(2, 9)} }};\n"], f"    v *= (float)EB{k} * 0.25f;\n")


def helper_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    quals = rng.choice(["__device__", "__device__ __forceinline__", "__device__ __noinline__", "__host__ __device__",
                        "static __device__ inline", "inline __host__ __device__"])
    body = f"(float a) {{ return a * {f(rng)} + {f(rng)}; }}\n"
    kind = rng.randrange(6)
    if kind == 0:
        return Feature([f"namespace ns{k} {{\n{quals} float h{body}}}  // namespace ns{k}\n"],
                       f"    v = ns{k}::h(v);\n")
    if kind == 1:
        return Feature([f"namespace outer{k}::inner {{\n__device__ float h{body}}}\n"],
                       f"    v = outer{k}::inner::h(v);\n")
    if kind == 2:
        return Feature([f"namespace {{\n__device__ float anon{k}{body}}}\n"], f"    v = anon{k}(v);\n")
    if kind == 3:
        return Feature([f"template <typename T>\n__device__ T t{k}(T a) {{ return a * T({f(rng)}); }}\n"],
                       f"    v = t{k}{rng.choice(['<float>', ''])}(v);\n")
    if kind == 4:
        return Feature([f"template <int N>\n__device__ float p{k}(float a) {{\n    float r = a;\n#pragma unroll\n"
                        f"    for (int j = 0; j < N; ++j) r = r * 0.5f + a;\n    return r;\n}}\n"],
                       f"    v = p{k}<{rng.randint(1, 4)}>(v);\n")
    return Feature([f"{quals} float h{k}{body}"], f"    v = h{k}(v);\n")


def type_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    kind = rng.randrange(5)
    if kind == 0:
        return Feature([f"struct P{k} {{ float a, b; }};\n__device__ float ap{k}(P{k} p, float v) "
                        f"{{ return p.a * v + p.b; }}\n"], f"    v = ap{k}(P{k}{{{f(rng)}, {f(rng)}}}, v);\n")
    if kind == 1:
        return Feature([f"struct Q{k} {{\n    float s;\n    __device__ float operator()(float a) const "
                        f"{{ return a * s; }}\n}};\n"], f"    v = Q{k}{{{f(rng)}}}(v);\n")
    if kind == 2:
        return Feature([f"struct V{k} {{ float a; }};\n__device__ V{k} operator+(V{k} p, V{k} q) "
                        f"{{ return V{k}{{p.a + q.a}}; }}\n"],
                       f"    {{ V{k} s = V{k}{{v}} + V{k}{{{f(rng)}}}; v = s.a; }}\n")
    if kind == 3:
        alias = rng.choice([f"typedef float real{k};\n", f"using real{k} = float;\n"])
        return Feature([alias], f"    {{ real{k} t = v; v = t * {f(rng)}; }}\n")
    return Feature([f"enum class M{k} : int {{ Low = 1, High = {rng.randint(2, 5)} }};\n"],
                   f"    v *= static_cast<float>(M{k}::High) * 0.5f;\n")


def branch_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    cond = rng.choice(["1", "0", "defined(__CUDACC__)", "__CUDA_ARCH__ >= 700", "defined(NOT_DEFINED_ANYWHERE)",
                       "NOT_DEFINED_ANYWHERE > 2", "!defined(NDEBUG)", "__cplusplus >= 201703L"])
    kind = rng.randrange(4)
    if kind == 0:
        return Feature([f"#if {cond}\n__device__ float b{k}(float a) {{ return a + {f(rng)}; }}\n#else\n"
                        f"__device__ float b{k}(float a) {{ return a - {f(rng)}; }}\n#endif\n"], f"    v = b{k}(v);\n")
    if kind == 1:
        return Feature([f"#define TMP{k} {f(rng)}\n__device__ float u{k}(float a) {{ return a * TMP{k}; }}\n"
                        f"#undef TMP{k}\n"], f"    v = u{k}(v);\n",
                       after=[f"#define TMP{k} {f(rng)}\nstatic float hostTmp{k} = TMP{k};\n"] if rng.random() < .5
                       else [])
    if kind == 2:
        return Feature([], f"    v = [](float a) {{ return a * {f(rng)}; }}(v);\n")
    if rng.random() < 0.15:  # the grader must refuse this one (grader.source.pragmas)
        return Feature([f"#define PM{k} {f(rng)}\n#pragma push_macro(\"PM{k}\")\n#undef PM{k}\n#define PM{k} "
                        f"{f(rng)}\n#pragma pop_macro(\"PM{k}\")\n"], f"    v *= PM{k};\n")
    return Feature([], f"    {{\n        float acc = 0.0f;\n#pragma unroll\n        for (int j = 0; j < "
                       f"{rng.randint(2, 8)}; ++j) acc += v * {f(rng)};\n        v += acc;\n    }}\n")


def macro_chain_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    name = f"MC{k}"
    use = f"    v = v * {name} - 0.2f;\n"
    kind = rng.randrange(6)
    if kind == 0:  # a macro the kernel's macro names, among host code
        return Feature([f"#define BASE{k} {f(rng)}\nstatic float hostBase{k} = BASE{k};\n"
                        f"#define {name} (BASE{k} * 0.5f)\n"], use)
    if kind == 1:  # defined, used by the host, undefined and defined again before the kernel
        return Feature([f"#define {name} {f(rng)}\nstatic float hostFirst{k}() {{ return {name}; }}\n#undef {name}\n"
                        f"#define {name} {f(rng)}\n"], use)
    if kind == 2:  # defined inside a host function before the kernel
        return Feature([f"static void setup{k}() {{\n#define {name} {f(rng)}\n"
                        f"    printf(\"%f\\n\", (double){name});\n}}\n"], use)
    if kind == 3 and after_main:  # defined, undefined and defined again in main's body
        return Feature([], use, in_main=f"#define {name} {f(rng)}\n    printf(\"%f\\n\", (double){name});\n"
                                        f"#undef {name}\n#define {name} {f(rng)}\n")
    if kind == 4 and after_main:  # a flag set in main and tested by an #if before the kernel
        return Feature([f"#if FLAG{k}\n#define {name} {f(rng)}\n#else\n#define {name} {f(rng)}\n#endif\n"], use,
                       in_main=f"#define FLAG{k} {rng.randint(0, 1)}\n")
    return Feature([f"#define BLOCK{k} 256\n#define {name} 1.0f\n"], use, bounds=f"BLOCK{k}")


def late_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    kind = rng.randrange(4)
    if kind == 0:  # declared before the kernel, defined after it
        return Feature([f"__device__ float late{k}(float a);\n"], f"    v = late{k}(v);\n",
                       after=[f"__device__ float late{k}(float a) {{ return a * {f(rng)}; }}\n"])
    if kind == 1:  # a member function defined out of its struct
        return Feature([f"struct S{k} {{\n    float m;\n    __device__ float scale(float a) const;\n}};\n"
                        f"__device__ float S{k}::scale(float a) const {{ return a * m; }}\n"],
                       f"    v = S{k}{{{f(rng)}}}.scale(v);\n")
    if kind == 2:  # a namespace opened twice, a helper calling another
        return Feature([f"namespace re{k} {{ __device__ float first(float a); }}\n",
                        f"namespace re{k} {{\n__device__ float first(float a) {{ return a + {f(rng)}; }}\n"
                        f"__device__ float second(float a) {{ return first(a) * {f(rng)}; }}\n}}\n"],
                       f"    v = re{k}::second(v);\n")
    return Feature([f"extern \"C\" {{\n__device__ float ec{k}(float a) {{ return a - {f(rng)}; }}\n}}\n"],
                   f"    v = ec{k}(v);\n")


def misc_feature(rng: random.Random, k: int, after_main: bool) -> Feature:
    kind = rng.randrange(5)
    if kind == 0:
        return Feature([f"struct Cfg{k} {{ static constexpr float s = {f(rng)}; }};\n"], f"    v *= Cfg{k}::s;\n")
    if kind == 1:
        return Feature([f"template <typename T> struct Tr{k};\ntemplate <> struct Tr{k}<float> {{\n"
                        f"    __device__ static float apply(float a) {{ return a * {f(rng)}; }}\n}};\n"],
                       f"    v = Tr{k}<float>::apply(v);\n")
    if kind == 2:
        return Feature([], f"    if (i == {rng.randint(0, 3)}) "
                           "printf(\"line %d of %s: %f\\n\", __LINE__, __FILE__, v);\n")
    if kind == 3:
        return Feature([], "    assert(v == v);\n", headers=("cassert",))
    return Feature([f"#define TID{k} threadIdx.x\n"], f"    v += (float)(TID{k} & 1u);\n")


FEATURES = (macro_feature, variable_feature, helper_feature, type_feature, branch_feature, macro_chain_feature,
            late_feature, misc_feature)


def noise(rng: random.Random, k: int) -> tuple[str, tuple[str, ...]]:
    """A chunk the kernel does not use, and the headers it needs."""
    choices = [
        (f"static double hostSum{k}(const std::vector<float>& a) {{\n    double s = 0;\n    for (float e : a) "
         f"s += e;\n    return s;\n}}\n", ("vector",)),
        (f"static int gHostCount{k} = {rng.randint(0, 99)};\nfloat hostScale{k} = {f(rng)};\n", ()),
        (f"struct Timer{k} {{\n    cudaEvent_t a, b;\n    Timer{k}() {{ cudaEventCreate(&a); cudaEventCreate(&b); }}\n"
         f"    ~Timer{k}() {{ cudaEventDestroy(a); cudaEventDestroy(b); }}\n    float ms() const;\n}};\n", ()),
        (f"template <typename T>\nT hostMax{k}(T a, T b) {{ return a > b ? a : b; }}\n", ()),
        (f"__global__ void copy{k}(const float* in, float* o, size_t n) {{\n    size_t i = blockIdx.x * "
         f"(size_t)blockDim.x + threadIdx.x;\n    if (i < n) o[i] = in[i] * {f(rng)};\n}}\n", ()),
        (f"__device__ float unused{k}(float a) {{ return a * {f(rng)}; }}\n#define UNUSED{k}(a) ((a) + {k})\n", ()),
        ("#define CUDA_CHECK(call) \\\n    do { \\\n        cudaError_t e_ = (call); \\\n"
         "        if (e_ != cudaSuccess) "
         "{ \\\n            fprintf(stderr, \"%s\\n\", cudaGetErrorString(e_)); \\\n            exit(1); \\\n"
         f"        }} \\\n    }} while (0)\nstatic void sync{k}() {{ CUDA_CHECK(cudaDeviceSynchronize()); }}\n"
         "#undef CUDA_CHECK\n", ("cstdio", "cstdlib")),
        ("#if 0\n__global__ void biasGeluFused(float* wrong) { wrong[0] = 1.0f; }\n#define SC0 99.0f\n#endif\n", ()),
        ("// __global__ void biasGeluFused(float* p) { p[0] = 0; }\n/* #define SC1 99.0f\n__device__ float h1(float a)"
         " { return 0; } */\n", ()),
        (f"static const char* kDoc{k} = \"__global__ void biasGeluFused() {{ }} #define SC2 5 /* x */\";\n", ()),
        (f"static const char* kRaw{k} = R\"doc(\n#define SC3 7.0f\n__global__ void biasGeluFused() {{}}\n"
         ")doc\";\n", ()),
        (f"namespace hostutil{k} {{\ninline int ceilDiv(int a, int b) {{ return (a + b - 1) / b; }}\n}}\n", ()),
        ("using namespace std;\n", ("vector",)),
        (f"typedef struct {{ int a; }} HostPair{k};\nextern \"C\" int hostC{k}(int a) {{ return a + 1; }}\n", ()),
        ('static_assert(sizeof(float) == 4, "float is 4 bytes");\n', ()),
        (f"#include <{rng.choice(HEADERS)}>\n", ()),
        (rng.choice(["#pragma once\n", "#pragma GCC diagnostic ignored \"-Wunused-function\"\n",
                     "#pragma message(\"building\")\n", "#pragma nv_diag_suppress 177\n"]), ()),
        (f"static void printAll{k}(const float* p, int n) {{\n    for (int j = 0; j < n; ++j) "
         f"printf(\"%d %f\\n\", j, p[j]);\n}}\n", ("cstdio",)),
    ]
    return rng.choice(choices)


def kernel_text(uses: list[str], extern_c: bool, bounds: str) -> str:
    head = ('extern "C" ' if extern_c else "") + "__global__ void "
    head += f"__launch_bounds__({bounds}) " if bounds else ""
    return (f"{head}biasGeluFused({SIGNATURE}) {{\n    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
            "    if (i >= cols) return;\n    float v = x[i] + bias[i % cols];\n" + "".join(uses)
            + "    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));\n}\n")


def main_text(defines: list[str]) -> str:
    return ("int main() {\n" + "".join(defines) + "    const size_t cols = 1024;\n    float *dx, *db, *dout;\n"
            "    cudaMalloc(&dx, cols * sizeof(float));\n    cudaMalloc(&db, cols * sizeof(float));\n"
            "    cudaMalloc(&dout, cols * sizeof(float));\n"
            "    biasGeluFused<<<(cols + 255) / 256, 256>>>(dx, db, dout, cols);\n    cudaDeviceSynchronize();\n"
            "    printf(\"done\\n\");\n    return 0;\n}\n")


def make_program(rng: random.Random) -> list[str]:
    """A random whole program as chunks (see the module's docstring); "".join(chunks) is the file."""
    after_main, extern_c, bounds = rng.random() < 0.4, rng.random() < 0.15, rng.random() < 0.2
    features = [rng.choice(FEATURES)(rng, k, after_main) for k in range(rng.randint(0, 6))]
    noises = [noise(rng, 100 + k) for k in range(rng.randint(0, 8))]
    headers = {"cstdio"} | {h for _, need in noises for h in need} | {h for x in features for h in x.headers}
    headers |= set(rng.sample(HEADERS, rng.randint(0, 4)))
    top = ["// fuzzed whole program\n"] + [f"#include <{h}>\n" for h in rng.sample(sorted(headers), len(headers))]
    slots: list[list[str]] = [[], [], [], []]  # before kernel/main, between, after both, very end
    for feat in features:
        slots[rng.randrange(2) if after_main else 0].extend(feat.before)
        slots[2].extend(feat.after)
    for text, _ in noises:
        slot = rng.choice(slots)
        slot.insert(rng.randint(0, len(slot)), text)
    for slot in slots:
        group(rng, slot)
    bounds = next((x.bounds for x in features if x.bounds), "256" if bounds else "")
    kernel = disguise(rng, kernel_text([feat.use for feat in features], extern_c, bounds))
    if not after_main:
        chunks = top + slots[0] + [kernel] + slots[1] + [main_text([])] + slots[2] + slots[3]
    else:
        declaration = ('extern "C" ' if extern_c else "") + f"__global__ void biasGeluFused({SIGNATURE});\n"
        main = main_text([feat.in_main for feat in features if feat.in_main])
        chunks = top + [declaration] + slots[0] + [main] + slots[1] + [kernel] + slots[2] + slots[3]
    return [c.replace("\n", "\r\n") for c in chunks] if rng.random() < 0.1 else chunks


def group(rng: random.Random, slot: list[str]) -> None:
    """Sometimes put a run of a slot's chunks (host and device code alike) inside an `#if` group that nvcc
    takes (`#if 1`, `#ifdef __CUDACC__`, the `#else` of an `#if 0`, ...)."""
    if not slot or rng.random() > 0.3:
        return
    a = rng.randint(0, len(slot) - 1)
    b = rng.randint(a + 1, len(slot))
    opening = rng.choice(["#if 1\n", "#ifdef __CUDACC__\n", "#if defined(__CUDACC__) && __cplusplus >= 201103L\n",
                          "#if 0\n__global__ void biasGeluFused(int wrong) {}\n#else\n", "#ifndef NOT_DEFINED\n"])
    slot.insert(b, "#endif\n")
    slot.insert(a, opening)


def disguise(rng: random.Random, kernel: str) -> str:
    """The kernel's text with, sometimes, a comment inside its head or a line splice in its parameter list."""
    if rng.random() < 0.2:
        kernel = kernel.replace("__global__ ", "__global__ /* the kernel */ ", 1)
    if rng.random() < 0.2:
        kernel = kernel.replace("__restrict__ bias, ", "__restrict__ bias, \\\n    ", 1)
    return kernel


def _same_kind(tool, verdict: str):
    """A test for the shrinker: does a candidate text still get `verdict`?"""
    return lambda text: nvcc_oracle.judge(tool, text, "fuzz.cu").verdict == verdict


def shrink(chunks: list[str], keeps, tries: int = MAX_SHRINK_TRIES) -> str:
    """Remove chunks, then lines, one at a time while `keeps(text)` holds (at most `tries` candidates)."""
    for split in (False, True):
        if split:
            chunks = "".join(chunks).splitlines(keepends=True)
        k = 0
        while k < len(chunks) and tries > 0:
            candidate = chunks[:k] + chunks[k + 1:]
            tries -= 1
            if keeps("".join(candidate)):
                chunks = candidate
            else:
                k += 1
    return "".join(chunks)


@dataclass
class Report:
    """The run's counts and findings (written as JSON)."""

    seed: int
    programs: int = 0
    verdicts: Counter = field(default_factory=Counter)
    refusals: Counter = field(default_factory=Counter)
    nvcc_rejects: list[dict] = field(default_factory=list)
    disagreements: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def refusal_kind(message: str) -> str:
    """A refusal's message without its file and line and with names generalized, to count alike ones."""
    text = re.sub(r"^[^:]*:\d+: ", "", message)
    return re.sub(r"\b(?:[A-Za-z]+)\d+\b", "NAME", text)[:140]


_LOCK = threading.Lock()


def run_one(tool, seed: int, k: int, report: Report, shrink_budget: int) -> None:
    """Make program `seed`:`k`, judge it and count it in `report` (shrinking a disagreement first)."""
    chunks = make_program(random.Random(f"{seed}:{k}"))
    text = "".join(chunks)
    outcome = nvcc_oracle.judge(tool, text, "fuzz.cu")
    small = again = None
    if outcome.disagrees:
        small = shrink(chunks, _same_kind(tool, outcome.verdict), shrink_budget)
        again = nvcc_oracle.judge(tool, small, "fuzz.cu")
    with _LOCK:
        _count(report, f"{seed}:{k}", text, outcome, small, again)


def _count(report: Report, program: str, text: str, outcome, small: str | None, again) -> None:
    report.programs += 1
    report.verdicts[outcome.verdict] += 1
    if outcome.verdict == "refused":
        report.refusals[refusal_kind(outcome.detail)] += 1
    elif outcome.verdict == "nvcc-rejects" and len(report.nvcc_rejects) < 5:
        report.nvcc_rejects.append({"program": program, "log": outcome.detail[-1500:]})
    elif outcome.disagrees:
        report.disagreements.append({"program": program, "verdict": outcome.verdict, "detail": outcome.detail,
                                     "text": text, "minimized": small, "minimized_detail": again.detail})
        print(f"program {program}: {outcome.verdict}; minimized to {len(small)} characters", file=sys.stderr,
              flush=True)


def main(argv: list[str] | None = None) -> int:
    """Fuzz for --minutes from --seed, write the report to --out (JSON), print a summary; 1 when a disagreement
    was found, 0 when none, 2 for an unavailable oracle or bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to run (default 5)")
    parser.add_argument("--seed", type=int, default=1, help="the seed; program K is made from 'SEED:K'")
    parser.add_argument("--out", default="results/fuzz_programs.json", help="where to write the JSON report")
    parser.add_argument("--jobs", type=int, default=1, help="programs judged at once (default 1)")
    parser.add_argument("--shrink-tries", type=int, default=MAX_SHRINK_TRIES, help="judgements per shrink")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.jobs < 1:
        parser.error("--minutes must be positive and --jobs at least 1")
    try:
        tool = nvcc_oracle.find_toolchain()
    except nvcc_oracle.Unavailable as err:
        print(f"nvcc oracle unavailable: {err}", file=sys.stderr)
        return 2
    report = Report(args.seed)
    start = time.monotonic()
    deadline = start + args.minutes * 60
    counter = iter(range(1 << 62))

    def worker() -> None:
        while time.monotonic() < deadline:
            run_one(tool, args.seed, next(counter), report, args.shrink_tries)

    with ThreadPoolExecutor(args.jobs) as pool:
        for future in [pool.submit(worker) for _ in range(args.jobs)]:
            future.result()
    report.seconds = round(time.monotonic() - start, 1)
    summary = {"seed": report.seed, "programs": report.programs, "seconds": report.seconds,
               "verdicts": dict(report.verdicts), "disagreements": len(report.disagreements)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**summary, "refusals": dict(report.refusals.most_common()),
                               "nvcc_rejects": report.nvcc_rejects, "found": report.disagreements},
                              indent=1, ensure_ascii=True) + "\n")
    print(json.dumps(summary))
    for d in report.disagreements:
        print(f"program {d['program']}: {d['verdict']}:\n{d['minimized']}\n{d['minimized_detail']}")
    return 1 if report.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
