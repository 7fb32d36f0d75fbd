#pragma once
// The host side of an eager runtime as one machine measured it (a roofline-host/1 file, written by
// measure/host_probe.py): how long the host takes to dispatch a trivial op, a small convolution and
// a single call timed by CUDA events. The host is a property of the machine and the framework build,
// not of the GPU (docs/ACCURACY.md: the same PyTorch dispatches a trivial op in 19 us on one VM and
// 32 us on another), so it is its own input beside the hardware spec. The file holds what was
// measured; apply_eager_host() derives the model's terms from it with the model's own step counts.
#include <optional>
#include <string>

namespace roofline {

struct AnalysisOptions;

struct EagerHost {
    std::string name;         // e.g. "h200-vm-2026-11-26"
    std::string description;  // machine, framework build, date: what the figures describe
    std::string origin;       // the file it was read from
    // Host time of one out-of-place `x + y` on tiny CUDA tensors, back to back (the GPU idle
    // between them): the dispatch of an ATen op, its output allocation and its kernel launch.
    double add_call_s = 0;
    // The same for a small nn.Conv2d (cuDNN): its dispatcher steps and cuDNN's own host work.
    std::optional<double> conv_call_s;
    // Median of one `x + y` between two CUDA events: the dispatch and the end event's recording.
    std::optional<double> timed_add_s;
    // Host time of one torch.autograd.grad over a single multiply on tiny CUDA tensors, back to
    // back: the autograd engine's start (graph task, hand-off to the device's worker thread and
    // back) plus one gradient op's dispatch.
    std::optional<double> backward_call_s;
    // One torch.autograd.grad of a small nn.Conv2d (1x4x8x8 input) with respect to its input,
    // weight and bias, back to back: the backward call's start plus cuDNN's data- and
    // weight-gradient calls and the bias gradient, each with its dispatch and cuDNN's host work.
    std::optional<double> conv_backward_call_s;
};

// Reads and checks a roofline-host/1 file; InputError naming the file and JSON path otherwise.
EagerHost load_eager_host(const std::string& path);

// Sets the eager host terms of opt from the host's measurements: eager_op_host_s = add_call_s over
// the dispatcher steps the model counts for an add, eager_cudnn_host_s = conv_call_s less a
// convolution's steps and the bias add the probe's nn.Conv2d runs (add_call_s),
// eager_cudnn_backward_host_s = half of conv_backward_call_s less backward_call_s, less a
// convolution's steps, eager_timing_host_s = timed_add_s less the add's dispatch,
// eager_backward_call_host_s = backward_call_s less one op's dispatch (add_call_s). Terms the file
// gives no measurement for keep their values.
void apply_eager_host(const EagerHost& host, AnalysisOptions& opt);

}  // namespace roofline
