#pragma once
// Many devices (issue #16): data parallelism with ZeRO, on a cluster. The per-rank step is the
// single-device analysis of the model at the per-rank batch (the same op, kernel and memory models);
// on top of it, gradients are reduced across the data-parallel ranks in buckets that start as soon
// as backward has produced them (PyTorch DDP's bucketed all-reduce overlapped with backward, Li et
// al., "PyTorch Distributed", VLDB 2020; Megatron-Core's distributed optimizer likewise), on a
// communication stream beside the compute stream, and ZeRO shards what each rank keeps
// (Rajbhandari et al., "ZeRO", SC20). Tensor parallelism: the graph is already one rank's share
// (Graph::tensor_parallel, Megatron's splits); its all-reduces run on the compute stream's critical
// path, as Megatron-LM issues them, inside a node. Pipeline parallelism: analyze_pipeline below;
// sim/search.hpp searches the configurations. Sequence parallelism: the graph's own split
// (TensorParallel::all_gather / reduce_scatter). Context parallelism: ring attention's key/value
// send/recv steps, overlapped with attention (ParallelOptions::cp_comm), or the keys' and values'
// all-gathers; expert parallelism: the tokens' all-to-alls (both blocking, Graph's own splits).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/graph.hpp"
#include "sim/memory.hpp"
#include "sim/analysis.hpp"
#include "sim/cluster.hpp"
#include "sim/collectives.hpp"

namespace roofline {

// How context-parallel ranks exchange the keys and values attention reads (--cp-comm).
enum class CpComm {
    // Ring attention (Liu et al. 2023, "Ring Attention with Blockwise Transformers for Near-Infinite
    // Context"): each rank's key/value block passes around the ring of cp ranks in cp - 1 send/recv
    // steps, each overlapped with the attention of the block in hand; backward passes the blocks
    // again and returns the key/value gradients the same way (TransformerEngine's
    // AttnFuncWithCPAndKVP2P, what Megatron-LM's --cp-comm-type p2p runs). A rank keeps its own
    // key/value block for backward, not the whole sequence's (StageProfile::ring_memory).
    ring,
    // All-gathers of the keys and values before attention and reduce-scatters of their gradients
    // after it, not overlapped (Megatron-LM's --cp-comm-type all_gather, as Llama 3 was trained,
    // Dubey et al. 2024 section 3.3.2).
    all_gather,
    // DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509, section 3.1; Megatron-LM's
    // --cp-comm-type a2a, TransformerEngine's AttnFuncWithCPAndQKVOA2A): an all-to-all turns the
    // sequence-sharded queries, keys and values into head-sharded ones of the whole sequence, attention
    // runs on heads / cp heads, and an all-to-all turns its output back; backward the same four for
    // their gradients. Not overlapped with attention (section 3.1: the all-to-alls sit between the
    // projections and attention). Needs the heads (and key/value heads) a multiple of tp x cp.
    ulysses,
};
std::string_view cp_comm_name(CpComm c);

// Whether a rank of `cp` context-parallel ranks exchanging keys and values as `form` runs its
// attention as flash attention whatever --fuse says (FusionOptions::flash_always, which `analyze`,
// `plan` and `search` set from this): ring attention accumulates each query row's softmax block by
// block as the key/value blocks arrive, which needs the online softmax of a fused kernel
// (TransformerEngine's AttnFuncWithCPAndKVP2P; Megatron-core requires TransformerEngine's fused
// attention for context parallelism, its all-gather form included), so no rank ever holds a
// (seq / cp) x seq score matrix. Ulysses runs each rank's heads over the whole sequence with the
// rank's own attention kernel, fused or not: false. false without context parallelism (cp 1).
bool cp_runs_flash(int cp, CpComm form);

// How a causal sequence is cut for context parallelism: in 2 cp chunks, rank r holding chunks r and
// 2 cp - 1 - r (zigzag: Megatron-core's and TransformerEngine's load balancing, what the graph's
// ranks hold), or in cp contiguous blocks, rank r holding block r (the naive split).
enum class CpLayout { zigzag, contiguous };

// The attention work of each of rank `rank`'s cp ring steps (step j: its queries against the keys and
// values of rank (rank - j) mod cp, as TransformerEngine's loop orders them), in block pairs (one
// block pair: (seq / cp)^2 query-key pairs). Causal: a chunk pair counts 1 below the diagonal, 1/2
// on it (flash attention's skipped tiles, as TransformerEngine's step 0 runs a causal kernel on the
// diagonal pairs), 0 above. Zigzag: every step of every rank 1/2 (step 0: the two diagonal chunk
// pairs, halves, and one full one; an earlier rank's block: both query chunks against its first
// chunk; a later rank's: the second query chunk against both): each rank does half of its cp
// block pairs, exactly balanced. Contiguous: rank r 1/2 at step 0, 1 at the r steps of earlier
// ranks' blocks, 0 at the others (r + 1/2 in all: rank cp - 1 does 2 cp - 1 times rank 0's work).
// Not causal: 1 a step.
std::vector<double> ring_step_work(int cp, int rank, bool causal, CpLayout layout = CpLayout::zigzag);

// One context-parallel ring exchange (CpComm::ring) of one attention, forward or backward, on `group`:
// `kv_bytes` the keys and values of the whole sequence (both gathered tensors), `attention_s` the
// kernel time of the rank's attention in that direction. Forward: cp - 1 steps, each sending the
// block in hand (kv_bytes / cp) to the next rank while the attention of that block runs. Backward
// (TransformerEngine's loop): cp steps, the first sending a key/value block, the middle ones a
// key/value block and the key/value gradients accumulated so far (one message of both), the last
// the gradients alone: (cp - 1) blocks of each. Each step is a send/recv costed by sim/collectives
// (alpha-beta; across nodes when the group spans them), exposed by what it takes beyond the
// attention of its step: max(0, step - attention_s x work_j / sum(work)), work the steps' shares
// (`step_work`, one a step; empty: ring_step_work of the zigzag layout, equal steps).
struct RingExchange {
    int steps = 0;
    double bytes_sent = 0;  // by each rank
    double comm_s = 0;      // the steps' send/recv time
    double exposed_s = 0;   // what the compute stream waits for
};
RingExchange ring_exchange(const Cluster& cluster, CommGroup group, double kv_bytes, double attention_s, bool backward,
                           const std::vector<double>& step_work = {});

struct ParallelOptions {
    int dp = 1;    // data-parallel ranks
    int zero = 0;  // ZeRO stage 0..3: 1 shards optimizer state, 2 also gradients, 3 also parameters
    // Gradient bucket size: PyTorch DDP's bucket_cap_mb default, 25 MiB (torch.nn.parallel.
    // DistributedDataParallel documentation).
    double bucket_bytes = 25.0 * 1024 * 1024;
    // Samples per iteration across all data-parallel ranks (0: one micro-batch per rank). A multiple
    // of the graph's batch x dp: each rank runs global / (batch x dp) micro-batches, accumulating
    // gradients, before one reduction and one optimizer step.
    std::int64_t global_batch = 0;
    // Pipeline: virtual stages a device runs (interleaved 1F1B, Narayanan et al. SC21 section 2.2:
    // each device holds v chunks of its layers, chunk j on device j mod p): the bubble shrinks by v,
    // the activation sends grow by v. 1: plain 1F1B. Needs the micro-batches to be a multiple of the
    // stages (Megatron-LM's check) and each stage's layers a multiple of v.
    int interleave = 1;
    // Gradients held for the whole step, as Megatron-LM's DDP holds its contiguous main_grad buffer
    // (and DeepSpeed its contiguous gradients; ZeRO-2/3 shard it): the peak counts every gradient
    // from the first layer's forward on. false: PyTorch's zero_grad(set_to_none=True), a gradient
    // exists from the op that makes it to the optimizer step (still across gradient-accumulation
    // micro-batches).
    bool persistent_gradients = true;
    // Gradient buckets reduced as backward produces them, beside it (PyTorch DDP; Megatron-LM's
    // --overlap-grad-reduce). false: every reduction after the last backward, as the 2022
    // Megatron-LM runs of Korthikanti et al. did ("we do not use any overlapping of gradient
    // all-reduces with back-propagation", section 6.3).
    bool overlap_grad_reduce = true;
    // Context parallelism's key/value exchange. Ring by default: it is Megatron-LM's default
    // (--cp-comm-type p2p, TransformerEngine's ring attention), and at the long sequences context
    // parallelism is for, a block's attention (quadratic in its tokens) hides most of its send
    // (linear), as Liu et al. 2023 (section 3) argue.
    CpComm cp_comm = CpComm::ring;
};

struct CommOp {
    std::string what;  // "gradient bucket 3", "parameter all-gather", ...
    Collective collective = Collective::all_reduce;
    CollectiveCost cost;
    double ready_s = 0;  // when its data exists
    double start_s = 0;  // on the communication stream
    double end_s = 0;
};

struct ParallelAnalysis {
    ParallelOptions options;
    std::string cluster;
    int tp = 1;                         // from the graph
    int cp = 1;                         // context-parallel ranks, from the graph
    int ep = 1;                         // expert-parallel ranks (within the data-parallel ones), from the graph
    int pp = 1;                         // pipeline stages (analyze_pipeline)
    int interleave = 1;                 // virtual stages per device (interleaved 1F1B)
    int micro_batches = 1;              // per rank and iteration (gradient accumulation; the pipeline's micro-batches)
    double pass_s = 0;                  // one micro-batch's forward and backward on this rank, tensor-parallel all-reduces included
    double forward_s = 0;               // of it, the forward
    double optimizer_s = 0;             // the optimizer step on this rank (its ZeRO shard)
    double p2p_s = 0;                   // pipeline: activation and gradient transfers on the fill and drain's critical path
    double embedding_all_reduce_s = 0;  // pipeline: the tied embedding's gradients between the first and last stage
    double bubble_fraction = 0;         // pipeline: the share of the pipelined passes the slowest stage waits
    struct Stage {
        int stage = 0, layers = 0, in_flight = 1;
        double pass_s = 0, forward_s = 0, optimizer_s = 0, exposed_comm_s = 0;
        std::int64_t peak_bytes = 0;
    };
    std::vector<Stage> stages;  // pipeline: one per stage
    int devices = 1, nodes = 1;
    double tp_comm_s = 0;  // tensor-parallel all-reduces, forward and backward (blocking)
    int tp_collectives = 0;
    // Context parallelism: ring send/recv steps (CpComm::ring), key/value all-gathers and their
    // gradients' reduce-scatters or Ulysses' all-to-alls (both blocking), their time and what of it
    // the step waits for; cp_bytes what each rank sends of them (bytes x the collective's bus factor,
    // nccl-tests' (n - 1) / n for all-gather, reduce-scatter and all-to-all; the ring's messages).
    double cp_comm_s = 0, cp_exposed_s = 0, cp_bytes = 0;
    int cp_collectives = 0;
    double ep_comm_s = 0;  // expert-parallel all-to-alls, forward and backward (blocking)
    int ep_collectives = 0;
    CollectiveCost tp_example;               // one of them (the first)
    double compute_s = 0;                    // the per-rank step alone: the single-device schedule, its optimizer sharded by ZeRO
    double step_time_s = 0;                  // the iteration: compute, optimizer and the communication it waits for
    double comm_s = 0;                       // all communication, overlapped or not
    double exposed_comm_s = 0;               // what the step waits for: step_time_s - compute_s
    std::vector<CommOp> comms;               // in stream order
    CategoryBytes peak_bytes_by_category{};  // per rank, at its peak
    std::int64_t peak_bytes = 0;             // per rank
    double flops_per_rank = 0;               // what the step's graph executes on one rank
    double model_flops_per_rank = 0;         // the model's forward and backward alone (no recomputation, no optimizer)
    // Model FLOPs utilisation (Chowdhery et al. 2022, as Korthikanti et al. 2022 section 6.3 and
    // Megatron-LM report it): the forward and backward FLOPs of the model, without recomputation
    // or the optimizer, a second over the chip's peak for the compute dtype; hfu counts what runs
    // (recomputation included, the optimizer not).
    double mfu = 0, hfu = 0;
    double tokens_per_s = 0;  // batch x seq x dp / step (0 when the model has no batch or seq dimension)
};

// What the multi-device model needs of one rank's step (training or inference), taken from its
// graph and its single-device analysis: the compute stream's phases, the blocking collectives and
// when they are issued, when each gradient is ready, the memory timeline, the work. A profile does
// not refer to the graph, so a stage of many identical layers can be composed from two small
// probes (compose_layers), which is how `search` analyses a 96-layer stage in the time of three.
struct StageProfile {
    int tp = 1, cp = 1, ep = 1;             // the rank's splits (Graph::tensor_parallel, ...)
    int stages = 1, stage = 0, layers = 0;  // Graph::pipeline
    DType compute_dtype = DType::f32;
    std::int64_t batch = 0, seq = 0;  // the graph's batch and seq dimensions (0: none)
    std::int64_t hidden_bytes = 0;    // the [batch, seq, d_model] activation a later stage receives
    // The first forward attention core the analysis left outside a flash kernel ("": none): ring
    // and all-gather context parallelism need every one fused (cp_runs_flash).
    std::string unfused_attention;
    std::int64_t shared_embedding_bytes = 0;       // the tied embedding's copy a first or last stage holds (0: none)
    double forward_end_s = 0, backward_end_s = 0;  // on the single-device schedule
    double optimizer_s = 0;                        // the optimizer phase as scheduled
    bool has_optimizer = false;
    // The schedule, one op per node in execution order: what compose_layers replays for a stage of
    // more layers (each kernel starts when the previous one ended and the host has issued it), when
    // that gives the schedule back: one stream in program order.
    struct Op {
        double kernel_s = 0, issue_s = 0, end_s = 0;
        Phase phase = Phase::forward;
        int layer = -1;    // index among the stage's layers (Graph::pipeline.layer_prefix; -1: outside them)
        int view_of = -1;  // compose_layers: an op without a kernel ends when this earlier op did (-1: at 0)
    };
    std::vector<Op> ops;
    int streams = 1;            // of the schedule
    double schedule_end_s = 0;  // its step time
    // cp: the all-gather form of context parallelism (CpComm::all_gather); ulysses: its all-to-all
    // form (CpComm::ulysses), on the same ranks. Only the form ParallelOptions::cp_comm names runs.
    enum class Group { tp, cp, ep, ulysses };
    // A collective on the compute stream's critical path, issued when its tensor exists (the end of
    // op `op`: a node forward or the last op of its gradient backward), in the order
    // analyze_parallel documents.
    struct Blocking {
        double at_s = 0;
        Collective collective = Collective::all_reduce;
        double bytes = 0;
        Group group = Group::tp;
        int op = -1;
        // Compute it runs beside on another stream: only what it takes beyond this is exposed
        // (Megatron-LM overlaps sequence parallelism's backward all-gather with the input
        // gradient's GEMM and the reduce-scatter of that gradient with the weight gradient's).
        double hide_s = 0;
    };
    std::vector<Blocking> blocking;
    // Context parallelism's ring form (ParallelOptions::cp_comm, ring_exchange): one exchange an
    // attention (its keys and values) and direction, at the end of op `op` (forward: the later of
    // its gathers, or a recomputed copy of its attention; backward: the last op of its attention's
    // gradient). The Blocking entries of Group::cp are the all-gather form of the same.
    struct Ring {
        double at_s = 0;
        int op = -1;
        bool backward = false;
        double kv_bytes = 0;     // the keys and values of the whole sequence
        double attention_s = 0;  // the rank's attention (forward; backward: its gradient), the kernels' time
    };
    std::vector<Ring> rings;
    // Context parallelism's attentions: the query and key/value heads of the rank's attention (the
    // graph's, already split by tensor parallelism; 0: none), what Ulysses splits over the cp ranks.
    int cp_heads = 0, cp_kv_heads = 0;
    struct Gradient {
        double ready_s = 0;
        std::int64_t bytes = 0;
        bool expert = false;  // of an expert's weight: reduced over the ranks that hold that expert
        int op = -1;          // the op whose end makes it ready
    };
    std::vector<Gradient> gradients;  // the gradients data-parallel ranks reduce, in tensor order
    std::int64_t parameter_bytes = 0, largest_parameter = 0;
    // Memory: the liveness steps (each with the phase and layer of its node) and the gradient
    // bytes they accumulate. A composed profile holds the steps where its peak can be (compose_layers).
    struct MemoryAt {
        CategoryBytes bytes{};
        Phase phase = Phase::forward;
        int layer = -1;
    };
    std::vector<MemoryAt> memory;
    // Context parallelism (cp > 1): the same steps as `memory` (the all-gather form the graph is
    // built in) as ring attention and Ulysses hold them (empty without context parallelism), and
    // the activations they keep for backward (cp_saved_activation_bytes, the same for both). Both keep 1/cp of each whole-sequence key
    // or value tensor and of its gradients where the all-gather form keeps the whole, over the same
    // steps (ring: the rank's own block; Ulysses: heads / cp heads of the whole sequence); ring
    // attention also holds two blocks in flight while an attention runs (a double buffer: the block
    // in hand and the one arriving; Liu et al. 2023 section 3) and, while its gradient runs, two
    // blocks and two blocks of their gradients (TransformerEngine's backward buffers, each a
    // key/value block and its gradient).
    std::vector<MemoryAt> ring_memory, ulysses_memory;
    std::int64_t gradient_bytes = 0;
    std::int64_t saved_activation_bytes = 0, cp_saved_activation_bytes = 0;
    double flops = 0, optimizer_flops = 0;
    double recompute_flops = 0;  // of nodes run again in backward (recomputation)
    // Non-uniform expert routing (ExpertParallel::load_factor): the FLOPs the busiest rank's experts
    // run beyond the mean rank's, left out of the model FLOPs that MFU counts.
    double expert_excess_flops = 0;
};
StageProfile stage_profile(const Graph& step, const Analysis& single);

// A stage of `layers` identical layers from probes of the same stage built with one and two of
// them (Graph::pipeline.layer_prefix names the layers): the two-layer probe's schedule unrolled, its
// second layer's ops repeated for every added layer (forward in increasing, backward in decreasing
// order) and replayed, so that every time, collective and gradient is where the whole stage has it,
// host-bound stretches included; the work grows by the probes' difference a layer. Memory: a step
// outside the repeating layer grows by the probes' difference at that step per added layer; a step
// of the repeating layer at layer r is linear in r (the layers before it hold what the probe's second
// layer adds over its first, those after it what its first holds over the one-layer probe's), so the
// stage's peak is at r = 1 or r = L - 1, and those two are kept. Exact for the templates' identical
// layers up to rounding (tests/unit/compose_test.cpp checks it against whole stages). InputError
// when the probes are not of one and two layers, do not name their layers, cannot be replayed (more
// than one stream, fusion), or do not repeat layer by layer: build the whole stage then.
StageProfile compose_layers(const StageProfile& one, const StageProfile& two, int layers);

// The step graph (training or inference) of one rank, analysed on the cluster's chip, run data
// parallel. InputError when the ranks do not fit the cluster, dp < 1, zero outside 0..3, or ZeRO
// on a graph without optimizer (there is nothing to shard then but the parameters).
ParallelAnalysis analyze_parallel(const StageProfile& step, const Cluster& cluster, const ParallelOptions& opt);
ParallelAnalysis analyze_parallel(const Graph& step, const Analysis& single, const Cluster& cluster, const ParallelOptions& opt);

// Pipeline parallelism, 1F1B (Narayanan et al., SC21, section 2.2): every stage's step graph
// (Graph::pipeline), in order, each analysed on the cluster's chip. With m micro-batches a rank
// (ParallelOptions::global_batch), the pipeline is the 1F1B order simulated from every stage's
// forward and backward times and one activation send a hop (pipeline_timeline; equal stages:
// (m + p - 1) passes, the bubble (p - 1) / m of the ideal; interleaved: the analytic form with v
// virtual stages, ParallelOptions::interleave); each stage then reduces its gradients across
// the data-parallel ranks (overlapping its last backward) and updates. Memory: stage s holds the
// activations of min(p - s, m) micro-batches in flight. InputError for stages out of order.
ParallelAnalysis analyze_pipeline(const std::vector<const StageProfile*>& stages, const Cluster& cluster, const ParallelOptions& opt);

}  // namespace roofline
