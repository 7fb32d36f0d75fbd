"""Timing one PyTorch call between two CUDA events, the protocol of this project's eager
measurements (tests/tools/torch_ops_bench.py, tests/tools/retime_rows.py, measure/host_probe.py)."""
import torch


def time_call(fn, reps=20, warm=3):
    """`warm` untimed calls, then `reps` calls each between two CUDA events; the middle time (the
    upper of the two middle ones for an even count), in milliseconds."""
    for _ in range(warm):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return t[len(t) // 2]
