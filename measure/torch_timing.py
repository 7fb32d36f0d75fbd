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


def time_steps(step, model, runs=12, best=5):
    """A whole training or inference step, the protocol of the end-to-end rows: one untimed step,
    then `runs` steps each between two CUDA events, the model's gradients cleared after each; the
    mean of the `best` fastest in milliseconds, and the number of timed runs."""
    step()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
        model.zero_grad(set_to_none=True)
    fastest = sorted(times)[:best]
    return sum(fastest) / len(fastest), len(times)


def fp32_eager():
    """PyTorch's fp32 without TF32, cudnn.benchmark off (the protocol of the public NeuSight rows and
    of this project's eager measurements); the CUDA device and its name."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    return torch.device("cuda"), torch.cuda.get_device_name(0)


def kernels_of(fn):
    """The names of the GPU kernels (and memsets/copies) one call of fn runs, in order."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def kernel_times(fn, reps=10):
    """The kernels one call of fn runs, in order, each with its median duration over `reps` traced
    calls in microseconds: [(name, us), ...]. A call whose kernel sequence differs between
    repetitions (an algorithm chosen at run time) gives the first call's names and None for
    the durations."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    ev = sorted((e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                key=lambda e: e.time_range.start)
    if not ev or len(ev) % reps:
        return [(e.name, None) for e in ev]
    n = len(ev) // reps
    calls = [ev[i * n:(i + 1) * n] for i in range(reps)]
    if any([e.name for e in c] != [e.name for e in calls[0]] for c in calls):
        return [(e.name, None) for e in calls[0]]
    out = []
    for i in range(n):
        d = sorted(c[i].time_range.end - c[i].time_range.start for c in calls)
        out.append((calls[0][i].name, d[len(d) // 2]))
    return out


def log_uniform(rng, lo, hi):
    """An integer drawn log-uniformly from [lo, hi] with random.Random rng."""
    import math
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
