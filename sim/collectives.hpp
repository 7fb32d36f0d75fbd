#pragma once
// Collective communication on a cluster (issue #16): the time of one NCCL-style collective over a
// group of ranks, as NCCL would run it. Every (algorithm, protocol) pair that can run is costed as
// latency + bytes / algorithm bandwidth, and the fastest is what NCCL picks (its tuner,
// src/graph/tuning.cc, does the same with the same kind of table). Latencies are NCCL's own
// constants; bandwidths are the cluster's measured bus bandwidths (nccl-tests), converted to the
// algorithm bandwidth of each collective with nccl-tests' bus factors
// (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md). TPU pods: rings over each torus dimension.
#include <string_view>
#include <vector>

#include "sim/cluster.hpp"

namespace roofline {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
enum class CollectiveAlgorithm { ring, tree, nvls, hierarchical, direct, torus };
enum class CollectiveProtocol { ll, ll128, simple };

std::string_view collective_name(Collective c);
std::string_view algorithm_name(CollectiveAlgorithm a);
std::string_view protocol_name(CollectiveProtocol p);

// Who takes part: `ranks` devices placed `per_node` to a node (the job's ranks packed onto nodes,
// as launchers place them; a TP group of 8 on 8-GPU nodes is one node). per_node 0: as many as a
// node holds.
struct CommGroup {
    int ranks = 1;
    int per_node = 0;
};

struct CollectiveCost {
    Collective collective = Collective::all_reduce;
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
    CollectiveProtocol protocol = CollectiveProtocol::simple;
    double bytes = 0;      // as nccl-tests counts its size (see collective_cost)
    double time_s = 0;     // latency + transfer
    double latency_s = 0;  // the alpha term
    double busbw = 0;      // bus bandwidth the call reaches: bytes x bus factor / time (nccl-tests' busbw)
    int ranks = 1, nodes = 1;
};

// nccl-tests' bus factor: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
// broadcast and send/recv 1.
double bus_factor(Collective c, int ranks);

// The fastest way NCCL (GPU clusters) or the ICI torus (TPU pods) runs one collective of `bytes`:
// all-reduce and broadcast: the buffer; all-gather and reduce-scatter: the whole gathered buffer
// (each rank's part x ranks); all-to-all: each rank's send buffer (all its chunks); send/recv: the
// message. InputError for a group the cluster cannot hold or bytes < 0.
CollectiveCost collective_cost(const Cluster& c, Collective coll, double bytes, CommGroup group);

// Every (algorithm, protocol) that can run this call, fastest first (ties: the listed order).
std::vector<CollectiveCost> collective_candidates(const Cluster& c, Collective coll, double bytes, CommGroup group);

// The torus shape a TPU slice of n chips takes: up to three dimensions, each within the pod's,
// as near a cube as n allows (largest first).
std::vector<int> torus_shape(const Cluster& c, int chips);

}  // namespace roofline
