"""Stage 1, source: a submission read and turned into the text NVRTC compiles, before anything is compiled or run. The
file is read safely (read); the one tokenizer of C source (lexer) feeds the include policy and the directives nvcc and
NVRTC read differently (includes, pragmas); the grader's own text goes before the file (prelude, with host_macros.json);
a whole program is cut down to its kernel and the device code it uses (program and its parts); the `// grade:` block,
the student's claims and the parameter list as written are read here too (contract, claims, signature). No GPU, no NVRTC
compile."""
