#pragma once
// `roofline calibrate`: microbenchmarks that measure what a hardware spec states (bandwidth of each
// memory level, vector and matrix peaks, launch overhead) on the GPU at hand. Plain C++ (no CUDA
// headers); the kernels live in calibrate.cu.
//
// Common method: every buffer is first filled by a hash-pattern kernel (never zeros: the result
// must not depend on compressed or zero-skipping hardware paths); each quantity is timed with
// cudaEvents around a batch of back-to-back launches after warm-up, the batch sized to last >= 1 ms
// (quick: 0.25 ms); the figure is the median over >= 10 (quick) / 20 (full) batches, and `spread`
// is (p90 - p10) / median over those batches.
//
// Quantities (CalibrationPoint::quantity) and how each is measured:
//   hbm_bytes_per_s        copy kernel, 16-byte loads/stores, 4 in flight per thread, over src and
//                          dst buffers of 8x the L2 size each; bytes = read + write; persistent grid
//                          (SMs x blocks/SM from cudaOccupancyMaxActiveBlocksPerMultiprocessor).
//                          The spec's device-memory figure.
//   hbm_read_bytes_per_s   the same buffer read only (16-byte loads, XOR-reduced into one word).
//   l2_bytes_per_s         reads (ld.global.cg: L2, not L1) of a buffer of 1/4 the L2 size, each block
//                          streaming through the whole buffer from its own start offset, many passes
//                          per launch; persistent grid.
//   smem_bytes_per_s       16-byte conflict-free shared-memory loads (ld.shared.v4, a warp reads 512
//                          contiguous bytes) in an unrolled loop, full occupancy on every SM;
//                          bytes = per-block traffic x blocks (= per-SM traffic x SMs).
//   vector_flop_per_s.f32  FFMA chains, 8 independent accumulators per thread, full occupancy;
//                          2 FLOP per FMA.
//   vector_flop_per_s.f16 / .bf16  packed HFMA2 on half2 / bfloat162, same kernel; 4 FLOP each.
//   vector_flop_per_s.f64  DFMA chains, same kernel; 2 FLOP per FMA.
//   matrix_flop_per_s.f16 / .bf16  cuBLASLt GEMM (TN, f32 accumulation, output of the input
//                          dtype) of 8192^3 (quick: 4096^3) on hash-random data in [-1, 1);
//                          2*M*N*K FLOP; the heuristic's first algorithm, 32 MiB workspace.
//   matrix_flop_per_s.tf32 the same with f32 data and CUBLAS_COMPUTE_32F_FAST_TF32.
//   matrix_flop_per_s.int8 the same with int8 data, int32 accumulation and output (OP/s); absent
//                          when cuBLASLt offers no algorithm.
//   launch_overhead_s      an empty kernel (1 block of 32 threads) launched N times back to back on
//                          one stream, cudaEvents around the N: elapsed / N. The spec's figure.
//   launch_latency_s       one empty-kernel launch + cudaStreamSynchronize, host steady_clock.
//   sm_clock_observed_hz   clock64() cycles over %globaltimer nanoseconds in block 0 of the FFMA
//                          kernel (the clock the SMs actually ran at under full load).
// gemm_efficiency: f16 and bf16 GEMMs of M=N=K in {256 .. 8192} (quick: up to 4096) and two skinny
// shapes (MxNxK = Sx Sx128 and 128xSxS), flop/s divided by the dtype's matrix_flop_per_s point.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace roofline {

struct CalibrationPoint {
    std::string quantity;  // see above, e.g. "hbm_bytes_per_s", "matrix_flop_per_s.bf16"
    double value = 0;
    std::string unit;    // "B/s", "FLOP/s", "OP/s", "s", "Hz"
    std::string method;  // one line: what was run
    double spread = 0;   // (p90 - p10) / median of the repetitions
};

struct GemmEfficiencyPoint {
    std::string dtype;  // "f16", "bf16"
    long long m = 0, n = 0, k = 0;
    double seconds = 0;     // median time of one GEMM
    double flop_per_s = 0;  // 2*m*n*k / seconds
    double efficiency = 0;  // flop_per_s / matrix_flop_per_s.<dtype>
};

struct Calibration {
    std::string device_name;
    int cc_major = 0, cc_minor = 0, sm_count = 0;
    long long memory_bytes = 0;
    long long l2_bytes = 0;
    int driver_version = 0, runtime_version = 0;  // cudaDriverGetVersion / cudaRuntimeGetVersion
    double sm_clock_hz = 0;                       // cudaDevAttrClockRate (the rated peak clock)
    std::string date_utc;                         // ISO 8601, e.g. "2026-11-23T10:15:00Z"
    std::vector<CalibrationPoint> points;
    std::vector<GemmEfficiencyPoint> gemm_efficiency;

    // The point named quantity, or nullptr.
    const CalibrationPoint* find(const std::string& quantity) const;
};

struct CalibrationOptions {
    bool quick = false;  // smaller GEMMs, shorter batches, fewer repetitions (tests)
};

// Runs every microbenchmark on device (cudaSetDevice). Throws roofline::cuda::CudaError naming the
// failed call; every device resource is released on every path.
Calibration run_calibration(int device, const CalibrationOptions& opt);

// {"schema": "roofline-calibration/1", "device": {...}, "date_utc", "points": [...],
//  "gemm_efficiency": [...]}
nlohmann::json calibration_to_json(const Calibration& c);

// Summary of repeated measurements (host-side, testable): percentiles by linear interpolation
// between order statistics; spread = (p90 - p10) / median (0 when the median is 0). Empty input
// gives all zeros.
struct RepStats {
    double median = 0, p10 = 0, p90 = 0, spread = 0;
};
RepStats rep_stats(std::vector<double> samples);

}  // namespace roofline
