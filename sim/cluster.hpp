#pragma once
// Clusters (issue #16): nodes of one chip joined by an intra-node fabric, and an inter-node
// network, or a TPU pod's ICI torus, as data: one roofline-cluster/1 JSON file per system, every
// figure sourced (docs/hardware-format.md, "Clusters"). The bandwidths collectives reach are
// published nccl-tests measurements, kept apart from the links' line rates.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/hardware.hpp"

namespace roofline {

enum class Fabric { nvswitch, nvlink_direct, pcie, ici_torus };

struct IntraNode {
    Fabric fabric = Fabric::nvswitch;
    std::string name;                             // e.g. "NVLink 3 via 6 NVSwitch (2nd gen)"
    Sourced<unit::bytes_per_s> link_bytes_per_s;  // per GPU per direction, line rate
    std::optional<Sourced<unit::bytes_per_s>>
        ring_busbw;  // GPU nodes: nccl-tests bus bandwidth of ring collectives on a full node (large messages)
    std::optional<Sourced<unit::bytes_per_s>> nvls_allreduce_busbw;  // NVLink SHARP (NVSwitch gen 3) all-reduce, where the switch has it
};

struct InterNode {
    std::string name;                          // e.g. "8x ConnectX-6 HDR InfiniBand, rail-optimised"
    Sourced<unit::count> nics_per_node;        // one per GPU on a rail-optimised node
    Sourced<unit::bits_per_s> nic_bits_per_s;  // line rate of one NIC
    Sourced<unit::bytes_per_s> nic_busbw;      // bus bandwidth one NIC reaches in nccl-tests
};

struct Torus {
    std::vector<int> max_dims;                   // the largest slice, e.g. 16x16x16
    Sourced<unit::bytes_per_s> allreduce_busbw;  // per chip, as published for the pod
};

struct Cluster {
    std::string name;          // e.g. "dgx-a100": what --cluster takes
    std::string display_name;  // e.g. "NVIDIA DGX A100"
    std::string origin;        // the file it came from
    std::map<std::string, std::string> sources;
    std::string chip;                               // a built-in hardware spec name
    Hardware hardware;                              // that spec, loaded
    Sourced<unit::count> devices_per_node;          // GPUs per node (TPU pods: chips per host)
    std::optional<Sourced<unit::count>> max_nodes;  // nodes in the largest system of this kind (absent: no limit)
    IntraNode intra;
    std::optional<InterNode> inter;  // GPU clusters
    std::optional<Torus> torus;      // TPU pods

    int gpus_per_node() const { return static_cast<int>(devices_per_node.value); }
    // The most devices a job can use (0: no limit).
    long long max_devices() const;
};

std::string_view fabric_name(Fabric f);

// Validates and converts a parsed roofline-cluster/1 document; errors name origin and JSON path.
Cluster parse_cluster(const nlohmann::json& doc, const std::string& origin);
Cluster load_cluster_file(const std::string& path);
std::vector<std::string> builtin_cluster_names();
Cluster builtin_cluster(const std::string& name);
// A built-in name or a file path (a path has a '/' or ends in .json).
Cluster resolve_cluster(const std::string& arg);
bool is_cluster_name(const std::string& arg);
// A JSON file whose "format" is "roofline-cluster/1" (false for anything unreadable).
bool is_cluster_file(const std::string& path);

}  // namespace roofline
