"""Stage 3, gpu: the one place that talks to the device: allocation, copies, launches and events (device), a kernel's
printf kept off the grader's output (capture), the clocks a kernel ran at (clocks), and the grader's own CUDA sources
(kernels: the copy floor, the input generator, the on-GPU check)."""
