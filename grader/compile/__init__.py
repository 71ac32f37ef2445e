"""Stage 2, build: NVRTC, in a Landlock sandbox, compiles the prepared text to a cubin for one architecture (nvrtc,
sandbox); the installed CUDA pieces are checked first (toolkit); the kernel's parameter list is read from the cubin's
own metadata (cubin); the grader's own kernels are compiled once per NVRTC version and kept on disk (kernel_cache); and
the installed NVRTC is asked which macros it defines itself (predefined), which stage 1's whole-program reader needs: so
this package sits below source in the import order."""
