#include "sim/collectives.hpp"

#include <algorithm>
#include <cmath>

#include "ops/error.hpp"

namespace roofline {

namespace {

constexpr double kUs = 1e-6;

// NCCL's latency model (github.com/NVIDIA/nccl, src/graph/tuning.cc at commit b6475625): a base
// latency per (algorithm, protocol) and a latency per step over each kind of hop, in us.
// Index: protocol LL, LL128, Simple.
constexpr double kRingBase[3] = {6.6, 14.0, 8.4};
constexpr double kTreeBase[3] = {6.8, 14.0, 0.0};
constexpr double kRingHop[3][3] = {/* NVLink */ {0.6, 1.9, 3.4}, /* PCIe */ {1.0, 2.5, 5.7}, /* network */ {2.7, 4.0, 14.0}};
constexpr double kTreeHop[3][3] = {/* NVLink */ {0.6, 1.25, 28.0}, /* PCIe */ {1.0, 1.9, 28.0}, /* network */ {5.0, 8.5, 28.0}};
constexpr double kNvlsHop = 23.0;  // NVLink SHARP all-reduce, one node (the same file)
// Rings across nodes pay at least the network's post overhead per step: 1 us on Intel hosts, 3x
// for the Simple protocol (the same file, getNetOverhead).
constexpr double kNetOverhead[3] = {1.0, 1.0, 3.0};
// ICI: 1 us per hop (ASTRA-sim's TPU-v3 validation, astra-sim.github.io/astra-sim-docs/validation/
// hardware/tpu-validation.html: "link latency is 1 us, as per the TPU research team").
constexpr double kIciHopUs = 1.0;

enum Hop { nvlink = 0, pci = 1, net = 2 };

Hop intra_hop(const Cluster& c) { return c.intra.fabric == Fabric::pcie ? pci : nvlink; }

// Bandwidth each protocol keeps of an algorithm's bus bandwidth (the same file, "model
// refinements"): ring LL 1/4 (all-reduce or across nodes) or 1/3, LL128 0.92 with two or more
// GPUs a node (0.7 with one); tree 0.92 of the ring's, then LL 1/3.8 and LL128 7/9 on one node or
// 120/128 across nodes.
double ring_protocol_share(CollectiveProtocol p, Collective coll, int nodes, int per_node) {
    if (p == CollectiveProtocol::ll) return (nodes > 1 || coll == Collective::all_reduce) ? 1.0 / 4 : 1.0 / 3;
    if (p == CollectiveProtocol::ll128) return per_node < 2 ? 0.7 : 0.92;
    return 1.0;
}
double tree_protocol_share(CollectiveProtocol p, int nodes) {
    const double base = 0.92;
    if (p == CollectiveProtocol::ll) return base / 3.8;
    if (p == CollectiveProtocol::ll128) return base * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
    return base;
}

struct Placement {
    int n = 1, per_node = 1, nodes = 1;
};

Placement place(const Cluster& c, CommGroup g) {
    if (g.ranks < 1) throw InputError("a collective needs at least one rank, got " + std::to_string(g.ranks));
    Placement p;
    p.n = g.ranks;
    const int node = c.gpus_per_node();
    p.per_node = g.per_node > 0 ? std::min(g.per_node, g.ranks) : std::min(node, g.ranks);
    if (p.per_node > node)
        throw InputError("a node of " + c.name + " holds " + std::to_string(node) + " devices, not " + std::to_string(p.per_node));
    p.nodes = (g.ranks + p.per_node - 1) / p.per_node;
    const long long most = c.max_devices();
    if (most > 0 && g.ranks > most)
        throw InputError(std::to_string(g.ranks) + " devices do not fit " + c.name + " (at most " + std::to_string(most) + ")");
    return p;
}

// Bus bandwidth of a ring over the placement: the node's NVLink/PCIe figure, and across nodes the
// NICs the ring's channels use (one per rail: as many as there are GPUs a node, up to the NICs):
// each channel's ring crosses the network once a node, so a node's NICs carry 1/channels of what
// each GPU's link carries. Two DGX A100 nodes: min(230, 8 x 24) = 192 GB/s, as measured
// (NVIDIA/nccl issue #1576, quoting a maintainer in #812).
double ring_bus(const Cluster& c, const Placement& p) {
    const double intra = c.intra.ring_busbw->value;
    if (p.nodes == 1) return intra;
    const int rails = std::min(p.per_node, static_cast<int>(c.inter->nics_per_node.value));
    return std::min(intra, rails * c.inter->nic_busbw.value);
}

// Network bandwidth per GPU when each GPU's traffic leaves the node on its rail's NIC.
double nic_per_gpu(const Cluster& c, const Placement& p) {
    const double nics = c.inter->nics_per_node.value;
    return c.inter->nic_busbw.value * std::min(1.0, nics / p.per_node);
}

CollectiveCost make(Collective coll, CollectiveAlgorithm a, CollectiveProtocol pr, double bytes, double lat_s, double algbw,
                    const Placement& p) {
    CollectiveCost k;
    k.collective = coll;
    k.algorithm = a;
    k.protocol = pr;
    k.bytes = bytes;
    k.latency_s = lat_s;
    k.time_s = lat_s + (algbw > 0 ? bytes / algbw : 0.0);
    k.ranks = p.n;
    k.nodes = p.nodes;
    k.busbw = k.time_s > 0 ? bytes * bus_factor(coll, p.n) / k.time_s : 0;
    return k;
}

// A ring collective (all-reduce, all-gather, reduce-scatter, broadcast) with protocol pr.
CollectiveCost ring(const Cluster& c, Collective coll, CollectiveProtocol pr, double bytes, const Placement& p, double bus) {
    const int q = static_cast<int>(pr);
    const Hop ih = intra_hop(c);
    double lat = kRingBase[q];
    if (coll == Collective::broadcast) {
        lat += kRingHop[p.nodes > 1 ? net : ih][q];
    } else {
        const bool ar = coll == Collective::all_reduce;
        const int steps = ar ? 2 * (p.n - 1) : p.n - 1;
        const int inter = ar ? (p.nodes > 1 ? 2 * p.nodes : 0) : p.nodes - 1;
        double intra_lat = kRingHop[ih][q];
        if (p.nodes > 1) intra_lat = std::max(intra_lat, kNetOverhead[q]);
        lat += std::max(0, steps - inter) * intra_lat + inter * kRingHop[net][q];
    }
    const double share = ring_protocol_share(pr, coll, p.nodes, p.per_node);
    const double algbw = bus * share / bus_factor(coll, p.n);
    return make(coll, CollectiveAlgorithm::ring, pr, bytes, lat * kUs, algbw, p);
}

void gpu_candidates(const Cluster& c, Collective coll, double bytes, const Placement& p, std::vector<CollectiveCost>& out) {
    const bool ll128 = c.intra.fabric != Fabric::pcie;  // NCCL enables LL128 on NVLink only
    std::vector<CollectiveProtocol> protocols = {CollectiveProtocol::ll, CollectiveProtocol::simple};
    if (ll128) protocols.insert(protocols.begin() + 1, CollectiveProtocol::ll128);
    if (coll == Collective::all_to_all || coll == Collective::send_recv) {
        // NCCL runs both as concurrent point-to-point transfers: one step of latency; the bytes that
        // stay in the node go over NVLink/PCIe, the rest over each GPU's NIC.
        const bool cross = p.nodes > 1;
        const double lat = kRingBase[2] + kRingHop[cross ? net : intra_hop(c)][2];
        double per_byte = 0;
        if (coll == Collective::send_recv) {
            per_byte = 1.0 / (cross ? c.inter->nic_busbw.value : c.intra.ring_busbw->value);
        } else {
            const double local = static_cast<double>(p.per_node - 1) / p.n, remote = static_cast<double>(p.n - p.per_node) / p.n;
            per_byte = std::max(local / c.intra.ring_busbw->value, cross ? remote / nic_per_gpu(c, p) : 0.0);
        }
        out.push_back(make(coll, CollectiveAlgorithm::direct, CollectiveProtocol::simple, bytes, lat * kUs, 1.0 / per_byte, p));
        return;
    }
    const double bus = ring_bus(c, p);
    for (CollectiveProtocol pr : protocols) out.push_back(ring(c, coll, pr, bytes, p, bus));
    if (coll != Collective::all_reduce) return;
    // Tree (double binary tree across nodes, a chain within each): all-reduce only.
    for (CollectiveProtocol pr : protocols) {
        const int q = static_cast<int>(pr);
        const double lat = kTreeBase[q] + 2 * ((p.per_node - 1) * kTreeHop[intra_hop(c)][q] + std::log2(p.nodes) * kTreeHop[net][q]);
        out.push_back(make(coll, CollectiveAlgorithm::tree, pr, bytes, lat * kUs, 0.5 * bus * tree_protocol_share(pr, p.nodes), p));
    }
    // NVLink SHARP on one node: the switch reduces; its measured bus bandwidth, nccl-tests' factor.
    if (c.intra.nvls_allreduce_busbw && p.nodes == 1 && p.n > 1) {
        const double algbw = c.intra.nvls_allreduce_busbw->value / bus_factor(coll, p.n);
        out.push_back(make(coll, CollectiveAlgorithm::nvls, CollectiveProtocol::simple, bytes, kNvlsHop * kUs, algbw, p));
    }
    // Hierarchical (reduce-scatter in the node, all-reduce of each GPU's part across nodes on its
    // rail, all-gather in the node), as Horovod and DeepSpeed run it: each stage the fastest ring.
    if (p.nodes > 1 && p.per_node > 1) {
        const Placement in{p.per_node, p.per_node, 1}, across{p.nodes, 1, p.nodes};
        auto best = [&](Collective cc, double b, const Placement& pl, double bw) {
            CollectiveCost k = ring(c, cc, protocols.front(), b, pl, bw);
            for (std::size_t i = 1; i < protocols.size(); ++i) {
                const CollectiveCost o = ring(c, cc, protocols[i], b, pl, bw);
                if (o.time_s < k.time_s) k = o;
            }
            return k;
        };
        const double intra_bus = c.intra.ring_busbw->value;
        const CollectiveCost rs = best(Collective::reduce_scatter, bytes, in, intra_bus);
        const CollectiveCost ar = best(Collective::all_reduce, bytes / p.per_node, across, nic_per_gpu(c, p));
        const CollectiveCost ag = best(Collective::all_gather, bytes, in, intra_bus);
        CollectiveCost h = make(coll, CollectiveAlgorithm::hierarchical, CollectiveProtocol::simple, bytes,
                                rs.latency_s + ar.latency_s + ag.latency_s, 0, p);
        h.time_s = rs.time_s + ar.time_s + ag.time_s;
        h.busbw = bytes * bus_factor(coll, p.n) / h.time_s;
        out.push_back(h);
    }
}

void torus_candidates(const Cluster& c, Collective coll, double bytes, const Placement& p, std::vector<CollectiveCost>& out) {
    const std::vector<int> dims = torus_shape(c, p.n);
    // A full torus (wrap-around links) from a 4x4x4 cube upward; smaller slices are meshes, where
    // a ring over a line uses each link both ways (half the bandwidth).
    const bool wrap = p.n >= 64;
    const double link = c.intra.link_bytes_per_s.value;
    int active = 0, hops = 0;
    double a2a_per_byte = 0;
    for (int k : dims) {
        if (k < 2) continue;
        ++active;
        hops += k - 1;
        // Uniform all-to-all with dimension-ordered routing: a ring of k carries each chip's data
        // k/4 hops on average in each of two directions (k/2 on a mesh line, one way per link);
        // the dimensions' links work at once, so the slowest dimension sets the rate. On a 16^3
        // v4 pod: 22.5 GB/s a chip, what its 24 TB/s bisection allows (cloud.google.com/tpu/docs/v4).
        a2a_per_byte = std::max(a2a_per_byte, (wrap ? k / 8.0 : k / 4.0) / link);
    }
    // Rings in every dimension at once, both directions on a torus: 2 x dims links a chip; never
    // above the pod's published all-reduce bandwidth per chip.
    const double bus = std::min(c.torus->allreduce_busbw.value, (wrap ? 2.0 : 1.0) * std::max(1, active) * link);
    double lat = 0, algbw = 0;
    switch (coll) {
        case Collective::all_reduce:
            lat = 2.0 * hops * kIciHopUs;
            algbw = bus / bus_factor(coll, p.n);
            break;
        case Collective::all_gather:
        case Collective::reduce_scatter:
            lat = hops * kIciHopUs;
            algbw = bus / bus_factor(coll, p.n);
            break;
        case Collective::broadcast:
            lat = hops * kIciHopUs;
            algbw = bus;
            break;
        case Collective::all_to_all:
            lat = hops * kIciHopUs;
            algbw = a2a_per_byte > 0 ? 1.0 / a2a_per_byte : 0;
            break;
        case Collective::send_recv:
            lat = kIciHopUs;
            algbw = link;
            break;
    }
    out.push_back(make(coll, CollectiveAlgorithm::torus, CollectiveProtocol::simple, bytes, lat * kUs, algbw, p));
}

}  // namespace

std::string_view collective_name(Collective c) {
    switch (c) {
        case Collective::all_reduce: return "all-reduce";
        case Collective::all_gather: return "all-gather";
        case Collective::reduce_scatter: return "reduce-scatter";
        case Collective::all_to_all: return "all-to-all";
        case Collective::broadcast: return "broadcast";
        case Collective::send_recv: return "send-recv";
    }
    return "?";
}

std::string_view algorithm_name(CollectiveAlgorithm a) {
    switch (a) {
        case CollectiveAlgorithm::ring: return "ring";
        case CollectiveAlgorithm::tree: return "tree";
        case CollectiveAlgorithm::nvls: return "nvls";
        case CollectiveAlgorithm::hierarchical: return "hierarchical";
        case CollectiveAlgorithm::direct: return "direct";
        case CollectiveAlgorithm::torus: return "torus";
    }
    return "?";
}

std::string_view protocol_name(CollectiveProtocol p) {
    switch (p) {
        case CollectiveProtocol::ll: return "LL";
        case CollectiveProtocol::ll128: return "LL128";
        case CollectiveProtocol::simple: return "Simple";
    }
    return "?";
}

double bus_factor(Collective c, int ranks) {
    const double n = ranks;
    switch (c) {
        case Collective::all_reduce: return ranks > 1 ? 2 * (n - 1) / n : 1;
        case Collective::all_gather:
        case Collective::reduce_scatter:
        case Collective::all_to_all: return ranks > 1 ? (n - 1) / n : 1;
        case Collective::broadcast:
        case Collective::send_recv: return 1;
    }
    return 1;
}

std::vector<int> torus_shape(const Cluster& c, int chips) {
    std::vector<int> limits = c.torus ? c.torus->max_dims : std::vector<int>{chips};
    std::sort(limits.rbegin(), limits.rend());
    while (limits.size() < 3) limits.push_back(1);
    std::vector<int> best;
    double best_score = 0;
    for (int a = 1; a <= limits[0] && a <= chips; ++a) {
        if (chips % a) continue;
        for (int b = 1; b <= limits[1] && b <= a; ++b) {
            if ((chips / a) % b) continue;
            const int rest = chips / a / b;
            if (rest > b || rest > limits[2]) continue;
            // As near a cube as possible: the fewest hops around the rings.
            const double score = a + b + rest;
            if (best.empty() || score < best_score) best = {a, b, rest}, best_score = score;
        }
    }
    if (best.empty()) throw InputError(std::to_string(chips) + " chips do not form a slice of " + c.name + "'s torus");
    while (best.size() > 1 && best.back() == 1) best.pop_back();
    return best;
}

std::vector<CollectiveCost> collective_candidates(const Cluster& c, Collective coll, double bytes, CommGroup group) {
    if (!(bytes >= 0) || !std::isfinite(bytes)) throw InputError("a collective moves a non-negative number of bytes");
    const Placement p = place(c, group);
    std::vector<CollectiveCost> out;
    if (p.n == 1 && coll != Collective::send_recv) {
        out.push_back(make(coll, CollectiveAlgorithm::direct, CollectiveProtocol::simple, bytes, 0, 0, p));
        return out;
    }
    if (c.torus)
        torus_candidates(c, coll, bytes, p, out);
    else
        gpu_candidates(c, coll, bytes, p, out);
    std::stable_sort(out.begin(), out.end(), [](const CollectiveCost& a, const CollectiveCost& b) { return a.time_s < b.time_s; });
    return out;
}

CollectiveCost collective_cost(const Cluster& c, Collective coll, double bytes, CommGroup group) {
    return collective_candidates(c, coll, bytes, group).front();
}

}  // namespace roofline
