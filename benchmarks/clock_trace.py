"""The GPU's clocks while a command runs: NVML's SM and memory clocks, clock event reasons, power and
temperature, sampled every few milliseconds from this process (which creates no CUDA context).

    python benchmarks/clock_trace.py [--device 0] [--every-ms 10] [--out trace.json] -- COMMAND ...

Prints the card's clock limits (maximum, application target and default, the enforced power limit), then
per second of the command's run the SM and memory clocks seen (min-max), the reasons seen and the power
(W); writes every sample with --out. For deciding which clocks a grading is timed at and what moves them
(grader.gpu.clocks). Exit 3 without NVML (no NVIDIA driver).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import defaultdict


def main(argv: list[str] | None = None) -> int:
    """The script's entry point (module docstring); returns its exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--every-ms", type=float, default=10.0)
    ap.add_argument("--out")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        from cuda.bindings import nvml

        nvml.init_v2()
        h = nvml.device_get_handle_by_index_v2(args.device)
    except Exception as err:  # noqa: BLE001 - no driver, no NVML
        print(f"clock_trace: no NVML ({type(err).__name__}: {err}); no figure printed", file=sys.stderr)
        return 3
    # nvml.h's values: the enums' member names differ between cuda-bindings releases (ClockType.SM in 13.5,
    # ClockType.CLOCK_SM in 13.3), their values do not
    sm_clock, mem_clock, current, app_target, app_default, boost_max = 1, 2, 0, 1, 2, 3

    def ask(fn, *a):
        try:
            return fn(h, *a)
        except Exception as err:  # noqa: BLE001 - a query this card does not answer
            return f"n/a ({type(err).__name__})"

    limits = {
        "sm_max_mhz": ask(nvml.device_get_max_clock_info, sm_clock),
        "mem_max_mhz": ask(nvml.device_get_max_clock_info, mem_clock),
        "sm_app_target_mhz": ask(nvml.device_get_clock, sm_clock, app_target),
        "sm_app_default_mhz": ask(nvml.device_get_clock, sm_clock, app_default),
        "mem_app_target_mhz": ask(nvml.device_get_clock, mem_clock, app_target),
        "sm_boost_max_mhz": ask(nvml.device_get_clock, sm_clock, boost_max),
        "power_limit_w": (lambda v: v / 1000 if isinstance(v, int) else v)(ask(nvml.device_get_enforced_power_limit)),
        "supported_reasons": ask(nvml.device_get_supported_clocks_event_reasons),
    }
    print("limits:", json.dumps(limits))
    reasons = {int(m.value): m.name for m in nvml.ClocksEventReasons if int(m.value)}
    samples, stop = [], threading.Event()

    def sample() -> None:
        t0 = time.perf_counter()
        while not stop.is_set():
            bits = ask(nvml.device_get_current_clocks_event_reasons)
            samples.append({"t": time.perf_counter() - t0, "sm": ask(nvml.device_get_clock, sm_clock, current),
                            "mem": ask(nvml.device_get_clock, mem_clock, current),
                            "reasons": [n for b, n in reasons.items() if isinstance(bits, int) and bits & b],
                            "power_w": (lambda v: v / 1000 if isinstance(v, int) else v)(
                                ask(nvml.device_get_power_usage)),
                            "temp_c": ask(nvml.device_get_temperature_v, 0)})
            time.sleep(args.every_ms / 1000)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    code = subprocess.run(command).returncode if command else (time.sleep(1.0) or 0)
    stop.set()
    thread.join()
    by_second = defaultdict(list)
    for s in samples:
        by_second[int(s["t"])].append(s)
    for sec, group in sorted(by_second.items()):
        sm = [s["sm"] for s in group if isinstance(s["sm"], int)]
        mem = [s["mem"] for s in group if isinstance(s["mem"], int)]
        power = [s["power_w"] for s in group if isinstance(s["power_w"], (int, float))]
        seen = sorted({r for s in group for r in s["reasons"]})
        print(f"{sec:3d} s: SM {min(sm, default=0)}-{max(sm, default=0)} MHz, memory {min(mem, default=0)}-"
              f"{max(mem, default=0)} MHz, power up to {max(power, default=0):.0f} W, reasons {seen or '-'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"limits": limits, "command": command, "exit": code, "samples": samples}, f, default=str)
    return code


if __name__ == "__main__":
    sys.exit(main())
