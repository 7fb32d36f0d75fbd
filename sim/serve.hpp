#pragma once
// Serving an LLM under a stream of requests (roofline serve, issue #17): a discrete-event
// simulation of continuous batching with a paged KV cache, as vLLM schedules it, each iteration
// timed by the cost model of the batch it runs.
//
// Scheduler (vLLM's, docs.vllm.ai "Optimization and Tuning" and vllm/core/scheduler.py):
//   - requests wait in arrival order; the cache is `kv_blocks` blocks of `block_size` tokens, a
//     sequence holding ceil(tokens / block_size) of them;
//   - without chunked prefill (vLLM V0's default) an iteration is either a prefill of newly admitted
//     requests (admitted first come, first served while the running batch stays within `max_seqs`,
//     the prompts within `max_tokens` and the cache keeps a 1% watermark of free blocks) or, when
//     none can be admitted, one decode step of every running sequence;
//   - with chunked prefill (V1's scheduler) every iteration runs one decode token of each running
//     sequence, then fills the rest of a `max_tokens` budget with prompt chunks (unfinished
//     prefills first, then new requests);
//   - a decode token that finds no free block preempts the most recently admitted sequence by
//     recomputation: its blocks are freed and it waits again at the front of the queue, to prefill
//     its prompt and the tokens it had generated.
// A prefill yields the request's first token (TTFT = its end - arrival); each decode step one
// more (TPOT = (finish - first token) / (output - 1)).
//
// Iteration cost: the analyses (sim/analysis.hpp) of the model's prefill and decode graphs
// (model/inference.hpp) on a grid of shapes, split into parts that add up for a mixed batch:
//   t = body(N) + head(S) + decode_attention(B, mean attended context) + sum over prompt chunks of
//       [prefill_attention(k + n) - prefill_attention(k)],
// with N the tokens the iteration processes, S the sequences that sample a token, B the decoding
// sequences, and a chunk of n prompt tokens after k already cached. body is every kernel but
// attention and the LM head (linear layers, norms, rotary, cache writes, host issue; one step's
// schedule less those), interpolated log-log in N; head is the final norm and LM head, linear in
// S; decode attention bilinear in B and context (one layer's analysis times the layers); prefill
// attention log-log in the prompt length. Costs are memoised once per model, chip and options
// (ServeCosts), so a simulation only interpolates.
#include <cstdint>
#include <string>
#include <vector>

#include "model/inference.hpp"
#include "sim/analysis.hpp"
#include "sim/hardware.hpp"

namespace roofline {

struct Cluster;

// A length distribution for prompts or outputs: "N" (every request), "uniform:A:B" (integers,
// both ends), "normal:MEAN:STD" and "exp:MEAN" (rounded, at least 1). InputError naming `flag`.
struct LengthDist {
    enum class Kind { fixed, uniform, normal, exponential } kind = Kind::fixed;
    double a = 0, b = 0;
    std::string text;
    static LengthDist parse(const std::string& text, const std::string& flag);
    std::int64_t max_value() const;  // the largest value it can give (normal and exp: unbounded, -1)
};

struct ServeOptions {
    double rate = 1;      // requests per second (Poisson arrivals), > 0; infinity: all arrive at 0
    bool poisson = true;  // else evenly spaced at 1 / rate
    LengthDist prompt, output;
    std::int64_t requests = 1000;
    std::uint64_t seed = 0;
    std::int64_t max_seqs = 256;  // vLLM max_num_seqs
    std::int64_t max_tokens = 0;  // max_num_batched_tokens; 0: 2048 with chunked prefill, else max(2048, positions)
    bool chunked_prefill = false;
    std::int64_t block_size = 16;     // tokens per KV cache block (vLLM's default)
    std::int64_t kv_blocks = 0;       // 0: what the memory left by the weights and activations holds
    double memory_utilization = 0.9;  // vLLM gpu_memory_utilization: the share of device memory it plans with
    int tp = 1;
    const Cluster* cluster = nullptr;  // required for tp > 1
    std::optional<DType> dtype;
    Quantization quant;
    // Every iteration replayed from CUDA graphs (vLLM V1's piecewise graphs): kernels back to back,
    // without the host's per-launch interval.
    bool cuda_graphs = false;
    AnalysisOptions analysis;
};

// The memoised iteration costs of one model on one chip (see the header comment).
struct ServeCosts {
    DecoderArch arch;
    std::int64_t max_tokens = 0, max_seqs = 0;
    std::vector<double> body_n, body_s;       // tokens -> seconds
    std::vector<double> head_s, head_t;       // sampling sequences -> seconds
    std::vector<double> pre_p, pre_t;         // prompt tokens -> seconds of causal attention (all layers)
    std::vector<double> dec_b, dec_c, dec_t;  // batch x attended context -> seconds (row-major in b)
    double capacity_bytes = 0;                // one device's memory
    double weight_bytes = 0;                  // one rank's
    double activation_bytes = 0;              // the largest step's temporaries (max_tokens tokens)
    double kv_bytes_per_token = 0;            // one sequence, one rank
    DType kv_dtype = DType::bf16;
    std::int64_t analyses = 0;

    double body(double tokens) const;
    double head(double sequences) const;
    double prefill_attention(double tokens) const;
    double decode_attention(double batch, double context) const;
};

ServeCosts build_serve_costs(const DecoderArch& arch, const Hardware& hw, const ServeOptions& opt);

struct Percentiles {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct ServeSample {  // the state after an iteration, for the timeline
    double t = 0;
    std::int64_t running = 0, waiting = 0;
    double cache_used = 0;  // fraction of the blocks
};

struct ServeResult {
    std::int64_t requests = 0, iterations = 0, prefill_iterations = 0, preemptions = 0, clamped = 0;
    std::int64_t kv_blocks = 0, max_batch_by_cache = 0;  // sequences of the mean length the cache holds
    double makespan_s = 0;
    Percentiles ttft, tpot, e2e, queue;  // queue: arrival to first scheduled
    double request_throughput = 0;       // completed requests / makespan
    double output_throughput = 0;        // output tokens / makespan
    double total_throughput = 0;         // prompt and output tokens / makespan
    double mean_in_system = 0;           // time-average of requests arrived and not finished (Little's L)
    double mean_latency_s = 0;           // W: mean arrival-to-finish
    double mean_running = 0;             // time-average of the running batch
    double mean_decode_batch = 0;        // mean sequences of the decode steps
    std::int64_t peak_running = 0;
    double cache_utilization = 0, peak_cache_utilization = 0;  // time-average and peak of blocks in use
    double mean_prompt = 0, mean_output = 0;
    std::vector<ServeSample> timeline;  // at most ~500 samples, evenly spaced in iterations
};

// InputError for rate <= 0, a length beyond the model's positions, or a cache that cannot hold one
// request.
ServeResult simulate_serving(const ServeCosts& costs, const ServeOptions& opt);

// The highest Poisson rate whose `quantile` TTFT and TPOT stay within the targets (0: no target),
// by bisection over rates with the same seed. 0 when even the lowest rate misses.
struct RateSearch {
    double rate = 0;
    ServeResult at_rate;
    int simulations = 0;
};
RateSearch find_max_rate(const ServeCosts& costs, const ServeOptions& opt, double ttft_target_s, double tpot_target_s, double quantile);

}  // namespace roofline
