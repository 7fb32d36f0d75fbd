#pragma once
// Kernel timing and hardware counters through CUPTI 13 (Activity API for timing, Range Profiler
// for counters).
//  - KernelTracer: the Activity API. Every kernel's GPU start/end, launch configuration and the
//    caller's tag (an external-correlation id pushed around the launches).
//  - profile_kernels: the Range Profiler (AutoRange + KernelReplay: one range per kernel, CUPTI
//    replays each kernel for as many passes as the metrics need) and the Profiler Host API to
//    evaluate the counters. Where counters are not permitted it says why and returns nothing.
//  - count_passes / roofline_metrics: the Host API alone; works without a GPU or a driver.
// Linked against libcupti and libcudart only, never libcuda: driver functions come through
// cudaGetDriverEntryPointByVersion. This header includes no CUDA header.
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/error.hpp"  // InputError, DeviceUnavailable

namespace roofline {

// A CUPTI or CUDA call failed in a way that is not "counters are unavailable here".
class CuptiError : public std::runtime_error {
public:
    explicit CuptiError(const std::string& what) : std::runtime_error(what) {}
};

// ---------------------------------------------------------------- activity tracing

struct KernelRecord {
    std::string name;            // demangled where the name demangles, else as recorded
    std::uint64_t start_ns = 0;  // GPU timestamps (CUPTI clock, ns)
    std::uint64_t end_ns = 0;
    std::uint32_t correlation_id = 0;
    std::uint64_t tag = 0;  // innermost tag pushed around the launch; 0 when none
    std::uint32_t stream_id = 0;
    int grid[3] = {0, 0, 0};
    int block[3] = {0, 0, 0};
    int registers_per_thread = 0;
    int static_shared_bytes = 0;
    int dynamic_shared_bytes = 0;
    std::uint32_t device_id = 0;

    std::uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

// Records every kernel launched (from any thread) between start() and stop(). Only one tracer
// may be active in a process at a time (CUPTI's activity buffers are process-wide); start() of a
// second one throws. start()/stop() may be repeated on the same or another tracer. Tags: the
// kernels launched by this thread between push_tag(t) and the matching pop_tag() carry tag t
// (the innermost when nested). Not thread-safe itself: use one tracer from one thread.
class KernelTracer {
public:
    KernelTracer() = default;
    ~KernelTracer();  // disables tracing if still active (never throws)
    KernelTracer(const KernelTracer&) = delete;
    KernelTracer& operator=(const KernelTracer&) = delete;

    // Enables CONCURRENT_KERNEL, EXTERNAL_CORRELATION and the RUNTIME/DRIVER API records (CUPTI
    // emits external-correlation records alongside API records only). Throws CuptiError.
    void start();
    void push_tag(std::uint64_t tag);
    void pop_tag();
    // cudaDeviceSynchronize (current device), forced flush, disables tracing, and returns the
    // kernels sorted by start time. Tags still pushed are popped. Throws CuptiError if CUPTI
    // dropped records (the trace would be incomplete) or a call failed; tracing is disabled
    // either way.
    std::vector<KernelRecord> stop();
    bool active() const { return active_; }

private:
    bool active_ = false;
    int depth_ = 0;  // tags pushed and not yet popped
};

// ---------------------------------------------------------------- hardware counters

struct CounterRequest {
    std::vector<std::string> metrics;
};

// Runs `workload` (which launches N kernels on `device`, synchronously or not) under the Range
// Profiler with AutoRange + KernelReplay and returns one map metric -> value per kernel, in launch
// order. Kernels are serialised and each is replayed once per pass (CUPTI saves and restores the
// memory it writes), so the workload runs once and its results stay correct. When counters are
// unavailable (no permission: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; a device or configuration the
// profiler refuses: vGPU, MIG, WSL, ...; another profiler attached: MULTIPLE_SUBSCRIBERS) it
// returns an empty vector and sets *problem to a sentence saying why (the caller falls back to
// timing only); with problem == nullptr that case throws DeviceUnavailable instead. *problem is
// cleared on success. Throws DeviceUnavailable when `device` does not exist (no driver, no GPU),
// InputError for an empty or invalid metric list (naming the first invalid metric), CuptiError
// for other CUPTI failures, and whatever the workload throws. Everything
// CUPTI set up is torn down on every path. Restores the calling thread's current device.
// Take timings from a KernelTracer run of its own, not from this one (replays, serialisation),
// and do not call this while a KernelTracer is active.
std::vector<std::map<std::string, double>> profile_kernels(int device, const std::vector<std::string>& metrics,
                                                           const std::function<void()>& workload, std::string* problem);
inline std::vector<std::map<std::string, double>> profile_kernels(int device, const CounterRequest& request,
                                                                  const std::function<void()>& workload, std::string* problem) {
    return profile_kernels(device, request.metrics, workload, problem);
}

// ---------------------------------------------------------------- offline (no GPU needed)

// Passes the Range Profiler needs to collect `metrics` together on `chip` ("GH100", "GA100", ...),
// from the Host API with no counter-availability image. Throws InputError for an unknown chip, an
// empty list, or an invalid metric (naming the first one that is invalid on its own).
int count_passes(const std::string& chip, const std::vector<std::string>& metrics);

// The roofline metric set for "GH100" (H100/H200) and "GA100" (A100): duration,
// SM clock, DRAM/L2/L1/shared bytes, bank conflicts, FP32/FP64/FP16 instruction counts, tensor
// ops (names differ per chip), achieved occupancy and SIMT efficiency. InputError for other chips.
std::vector<std::string> roofline_metrics(const std::string& chip);

// The chip name CUPTI reports for a CUDA device ("GH100"). Throws DeviceUnavailable without a
// driver or that device, CuptiError when CUPTI fails.
std::string chip_name(int device);

// ---------------------------------------------------------------- derived quantities

struct KernelCounters {
    double dram_read_bytes = 0, dram_write_bytes = 0;
    double l2_bytes = 0, l1_bytes = 0, shared_bytes = 0;
    double fp32_flops = 0;          // 2*ffma + fadd + fmul (thread instructions, predicated on)
    double fp16_flops = 0;          // 4*hfma + 2*hadd + 2*hmul (packed half2, as Nsight Compute counts)
    double fp64_flops = 0;          // 2*dfma + dadd + dmul
    double tensor_ops = 0;          // sum of the sm__ops_path_tensor_* metrics present (uncalibrated)
    double achieved_occupancy = 0;  // fraction 0..1 (metric is a percentage)
    double simt_efficiency = 0;     // fraction 0..1: average active threads per warp instruction / 32
    double sm_clock_hz = 0;
};

// Missing count metrics contribute 0; a missing occupancy, SIMT ratio or clock gives NaN (unknown).
KernelCounters derive_counters(const std::map<std::string, double>& values);

}  // namespace roofline
