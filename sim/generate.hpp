#pragma once
// Generation of a batch of sequences (roofline generate, issue #17): one prefill step for the
// prompt, then one decode step per further output token, each costed by analysing its graph
// (model/inference.hpp). Definitions as vLLM's benchmarks use them:
//   TTFT  time to first token: the prefill step (it produces the first output token);
//   TPOT  time per output token after the first: the decode steps' mean, (e2e - TTFT) / (T - 1);
//   e2e   TTFT + every decode step; tokens/s = batch x T / e2e.
// Decode step k (k = 1 .. T-1) feeds output token k with P + k - 1 tokens cached. Its time grows
// with the context only through attention; with more than `max_analysed` steps, the contexts
// analysed are evenly spaced (both ends included) and the steps between them interpolated
// linearly, which the result says.
#include <cstdint>
#include <vector>

#include "model/inference.hpp"
#include "sim/analysis.hpp"
#include "sim/hardware.hpp"

namespace roofline {

struct Cluster;

// One inference step's time: its schedule on one chip or, with a cluster, the tensor-parallel
// rank's step with its blocking all-reduces (sim/parallel.hpp).
double inference_step_time(const Graph& g, const Analysis& a, const Cluster* cluster);

struct GenerateOptions {
    std::int64_t prompt = 0;  // prompt tokens per sequence
    std::int64_t output = 0;  // output tokens per sequence (>= 1)
    std::int64_t batch = 1;   // sequences generated together
    int tp = 1;
    const Cluster* cluster = nullptr;  // the ranks' cluster: required for tp > 1
    std::optional<DType> dtype;        // compute and weight dtype (default: the model's; fp8: W8A8)
    Quantization quant;
    // Decode steps replayed from CUDA graphs (vLLM's default): the GPU runs their kernels back to
    // back, without the host's per-launch interval (GpuModelOptions::host_issue off).
    bool cuda_graphs = false;
    AnalysisOptions analysis;
    std::int64_t max_analysed = 64;  // decode contexts analysed at most
};

struct TokenStep {
    std::int64_t index = 0;     // output token: 0 is the prefill's
    std::int64_t context = 0;   // tokens cached before the step (decode); the prompt for token 0
    double time_s = 0;          // the step's time (all sequences of the batch)
    double kv_cache_bytes = 0;  // the cache of the batch after the step
    bool analysed = false;      // costed by its own analysis (else interpolated)
};

struct GenerateResult {
    DecoderArch arch;
    DType dtype = DType::bf16;     // the 16-bit (or 32-bit) compute dtype
    DType kv_dtype = DType::bf16;  // the KV cache's
    Quantization quant;
    std::vector<TokenStep> steps;  // T entries
    double ttft_s = 0, tpot_s = 0, e2e_s = 0, tokens_per_s = 0;
    double first_decode_s = 0, last_decode_s = 0;
    std::int64_t analysed = 0;  // steps with their own analysis (prefill included)
    Work prefill_work, first_decode_work, last_decode_work;
    double weight_bytes = 0;        // one rank's
    double kv_bytes_per_token = 0;  // one sequence, one rank
    double kv_final_bytes = 0;      // the batch's cache after the last token
    double peak_bytes = 0;          // the largest step's peak (weights, cache, temporaries)
    double capacity_bytes = 0;
    std::int64_t max_batch = 0;  // the largest batch whose weights, cache and temporaries fit
};

// InputError for an output of 0 tokens, a prompt plus output beyond the model's positions, a cache
// that cannot hold one sequence, or tp > 1 without a cluster.
GenerateResult simulate_generation(const DecoderArch& arch, const Hardware& hw, const GenerateOptions& opt);

}  // namespace roofline
