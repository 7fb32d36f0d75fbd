#pragma once
// L2 of the cost model: the graph schedule. Kernels are list-scheduled on streams in program order
// (each starts when its producers have finished and a stream is free), which gives the step time;
// the critical path is the longest dependency chain, the step time with unlimited streams.
// Streams overlap fully here: kernels on different streams are assumed not to slow each other down
// (optimistic when both would fill the GPU; the default of one stream is what frameworks issue).
#include <cstdint>
#include <string>
#include <vector>

#include "model/graph.hpp"

namespace roofline {

struct ScheduleOptions {
    int streams = 1;
    // The host issues kernels one after another, one per this many seconds (the spec's launch
    // overhead, set by analyze for GPU specs): the k-th kernel cannot start before k launches have
    // been issued. Long kernels hide the issue time (the host runs ahead); runs of tiny kernels
    // are launch-bound. 0: kernels are issued for free.
    double launch_overhead_s = 0;
    // Per node: the host time to dispatch it (the eager runtime's per-op cost; views too). When
    // set, it replaces launch_overhead_s: the host dispatches the nodes in program order, each
    // taking its time, and a kernel cannot start before its node has been dispatched. The host
    // runs ahead of the GPU, so the step is the GPU's time or the host's, with queueing.
    const std::vector<double>* host_s = nullptr;
    // Per node: the fused kernel (sim/fusion.hpp) it belongs to, -1 for none. The nodes of a group
    // run as one kernel: it starts when every input from outside the group is ready, and all its
    // nodes end together. Null: every node is its own kernel.
    const std::vector<int>* group_of = nullptr;
};

struct ScheduledOp {
    NodeId node = kNoNode;
    int stream = 0;
    double start_s = 0;
    double end_s = 0;
    double kernel_s = 0;  // the node's own duration (0 for views and for fused nodes other than the group's kernel)
    double issue_s = 0;   // when the host has issued it (dispatched, for the eager runtime): it cannot start before
};

struct Schedule {
    std::vector<ScheduledOp> ops;  // in program order
    double step_time_s = 0;        // makespan
    double busy_s = 0;             // sum of op durations
    double critical_path_s = 0;
    std::vector<NodeId> critical_path;  // first to last
    int streams = 1;
};

// Units of execution in a topological order of the graph with each fused group (group_of[n] >= 0)
// contracted to one unit (Kahn's algorithm, ties broken by program order): unit u is
// flat[offsets[u] .. offsets[u + 1]). Null group_of: one node per unit, in program order. Throws
// InputError when the groups would make the contracted graph cyclic.
void contracted_order(const Graph& g, const std::vector<int>* group_of, std::vector<NodeId>& flat, std::vector<std::size_t>& offsets);

// durations[n] is node n's time; ops of zero duration (views) take no stream time.
Schedule schedule_graph(const Graph& g, const std::vector<double>& durations, const ScheduleOptions& opt = {});

// Chrome trace JSON (the Trace Event Format Perfetto and chrome://tracing open): one complete event
// ("ph": "X") per op with a duration, on thread = stream, times in microseconds.
// A pipeline's forward or backward pass of one micro-batch on one stage's ranks.
struct PipelineBlock {
    int stage = 0, micro_batch = 0;
    bool backward = false;
    double start_s = 0, end_s = 0;
};
// One rank's 1F1B order (Narayanan et al. SC21, 2.2.1) on every stage, simulated from each stage's
// forward and backward times: stage s runs min(p - s - 1, m) forwards, then alternates a forward
// and a backward, then drains its backwards; a forward waits for the previous stage's, a backward
// for the next stage's, each plus one activation send.
std::vector<PipelineBlock> pipeline_timeline(const std::vector<double>& forward_s, const std::vector<double>& backward_s, int micro_batches,
                                             double send_s);
// How many of m micro-batches a drawn timeline of p stages shows: all, unless the blocks would
// pass about 3,000 (then the first ones, at least two rounds of the stages).
int drawn_micro_batches(int stages, int micro_batches);

// Chrome trace: the schedule's kernels one lane per stream (pid 1); with a pipeline, one lane per
// stage's ranks of its 1F1B timeline (pid 2).
std::string chrome_trace_json(const Graph& g, const Schedule& s, const std::vector<PipelineBlock>* pipeline = nullptr);

}  // namespace roofline
