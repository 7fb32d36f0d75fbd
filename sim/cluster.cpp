#include "sim/cluster.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/json_check.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/spec_reader.hpp"

namespace roofline {

namespace {

using nlohmann::json;

Fabric parse_fabric(const SpecReader& r, const std::string& s, const std::string& p) {
    if (s == "nvswitch") return Fabric::nvswitch;
    if (s == "nvlink-direct") return Fabric::nvlink_direct;
    if (s == "pcie") return Fabric::pcie;
    if (s == "ici-torus") return Fabric::ici_torus;
    r.fail(p, "unknown fabric '" + s + "' (expected nvswitch, nvlink-direct, pcie or ici-torus)");
}

// A measured bus bandwidth may not exceed what the links carry by more than a few percent, and
// is no measurement under a hundredth of it (a unit slip: GB/s written as bytes/s).
void check_below(const SpecReader& r, const SourcedValue& measured, double ceiling, const std::string& ceiling_path, const std::string& p,
                 double slack) {
    if (measured.value > slack * ceiling)
        r.fail(p + "/value", "exceeds " + ceiling_path + " (" + json(ceiling).dump() + ") x " + json(slack).dump() +
                                 ": a bus bandwidth above what the links carry means one of the two is wrong");
    if (measured.value < 0.01 * ceiling)
        r.fail(p + "/value", "is under a hundredth of " + ceiling_path + " (" + json(ceiling).dump() + "): check the unit (bytes/s)");
}

}  // namespace

Cluster parse_cluster(const json& doc, const std::string& origin) {
    if (!doc.is_object()) json_fail(origin, "", "expected a roofline-cluster/1 object");
    SpecReader r(doc, origin);
    r.only_keys(doc,
                {"format", "name", "display_name", "sources", "chip", "devices_per_node", "max_nodes", "intra_node", "inter_node", "torus"},
                "");
    if (r.string(doc, "format", "") != "roofline-cluster/1")
        r.fail("/format", "expected \"roofline-cluster/1\", got " + doc.at("format").dump());
    r.read_sources();
    Cluster c;
    c.origin = origin;
    c.sources = r.sources();
    c.name = r.string(doc, "name", "");
    c.display_name = r.string(doc, "display_name", "");
    c.chip = r.string(doc, "chip", "");
    try {
        c.hardware = builtin_hardware(c.chip);
    } catch (const InputError& e) {
        r.fail("/chip", e.what());
    }
    c.devices_per_node = r.sourced(doc, "devices_per_node", "", true);
    if (doc.contains("max_nodes")) c.max_nodes = r.sourced(doc, "max_nodes", "", true);

    const json& in = r.object(doc, "intra_node", "");
    const std::string ip = "/intra_node";
    r.only_keys(in, {"fabric", "name", "link_bytes_per_s", "ring_busbw", "nvls_allreduce_busbw"}, ip);
    c.intra.fabric = parse_fabric(r, r.string(in, "fabric", ip), ip + "/fabric");
    c.intra.name = r.string(in, "name", ip);
    c.intra.link_bytes_per_s = r.sourced(in, "link_bytes_per_s", ip);
    if (in.contains("ring_busbw")) {
        c.intra.ring_busbw = r.sourced(in, "ring_busbw", ip);
        check_below(r, *c.intra.ring_busbw, c.intra.link_bytes_per_s.value, ip + "/link_bytes_per_s", ip + "/ring_busbw", 1.05);
    }
    if (in.contains("nvls_allreduce_busbw")) {
        if (c.intra.fabric != Fabric::nvswitch) r.fail(ip + "/nvls_allreduce_busbw", "NVLink SHARP needs an NVSwitch fabric");
        c.intra.nvls_allreduce_busbw = r.sourced(in, "nvls_allreduce_busbw", ip);
        // In-switch reduction halves what each GPU sends: up to twice the links' rate as bus bandwidth.
        check_below(r, *c.intra.nvls_allreduce_busbw, c.intra.link_bytes_per_s.value, ip + "/link_bytes_per_s",
                    ip + "/nvls_allreduce_busbw", 2.0);
    }

    const bool tpu = c.intra.fabric == Fabric::ici_torus;
    if (tpu != (c.hardware.kind == HardwareKind::tpu))
        r.fail(ip + "/fabric", tpu ? "an ICI torus joins TPU chips, but /chip '" + c.chip + "' is a GPU"
                                   : "GPU nodes need an NVLink or PCIe fabric, but /chip '" + c.chip + "' is a TPU");
    if (!tpu && !c.intra.ring_busbw) r.fail(ip, "missing key 'ring_busbw' (the bus bandwidth nccl-tests measures on a node)");
    if (tpu) {
        if (doc.contains("inter_node")) r.fail("/inter_node", "a TPU pod's chips are joined by the torus (/torus), not a network");
        const json& t = r.object(doc, "torus", "");
        r.only_keys(t, {"max_dims", "allreduce_busbw"}, "/torus");
        const json& dims = r.member(t, "max_dims", "/torus");
        if (!dims.is_array() || dims.empty() || dims.size() > 3) r.fail("/torus/max_dims", "expected 1 to 3 dimensions, e.g. [16, 16, 16]");
        Torus torus;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (!dims[i].is_number_integer() || dims[i].get<int>() < 1)
                r.fail("/torus/max_dims/" + std::to_string(i), "expected a positive integer");
            torus.max_dims.push_back(dims[i].get<int>());
        }
        torus.allreduce_busbw = r.sourced(t, "allreduce_busbw", "/torus");
        c.torus = torus;
    } else {
        if (doc.contains("torus")) r.fail("/torus", "only TPU pods have an ICI torus");
        const json& n = r.object(doc, "inter_node", "");
        const std::string np = "/inter_node";
        r.only_keys(n, {"name", "nics_per_node", "nic_bits_per_s", "nic_busbw"}, np);
        InterNode inter;
        inter.name = r.string(n, "name", np);
        inter.nics_per_node = r.sourced(n, "nics_per_node", np, true);
        inter.nic_bits_per_s = r.sourced(n, "nic_bits_per_s", np);
        inter.nic_busbw = r.sourced(n, "nic_busbw", np);
        check_below(r, inter.nic_busbw, inter.nic_bits_per_s.value / 8, np + "/nic_bits_per_s / 8", np + "/nic_busbw", 1.05);
        c.inter = inter;
    }
    return c;
}

std::string_view fabric_name(Fabric f) {
    switch (f) {
        case Fabric::nvswitch: return "nvswitch";
        case Fabric::nvlink_direct: return "nvlink-direct";
        case Fabric::pcie: return "pcie";
        case Fabric::ici_torus: return "ici-torus";
    }
    return "?";
}

long long Cluster::max_devices() const {
    if (torus) {
        long long n = 1;
        for (int d : torus->max_dims) n *= d;
        return n;
    }
    return max_nodes ? static_cast<long long>(max_nodes->value) * gpus_per_node() : 0;
}

Cluster load_cluster_file(const std::string& path) { return parse_cluster(read_json_file(path), path); }

std::vector<std::string> builtin_cluster_names() { return builtin_names(builtin_cluster_files()); }

bool is_cluster_name(const std::string& arg) {
    for (const auto& f : builtin_cluster_files())
        if (f.name == arg) return true;
    return false;
}

bool is_cluster_file(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return false;
    try {
        const json doc = read_json_file(path);
        return doc.is_object() && doc.value("format", "") == "roofline-cluster/1";
    } catch (const std::exception&) {
        return false;
    }
}

Cluster builtin_cluster(const std::string& name) {
    return parse_cluster(builtin_json(builtin_cluster_files(), name, "clusters", "cluster"), "sim/clusters/" + name + ".json");
}

Cluster resolve_cluster(const std::string& arg) {
    const bool looks_like_path = arg.find('/') != std::string::npos || std::filesystem::path(arg).extension() == ".json";
    if (looks_like_path) return load_cluster_file(arg);
    return builtin_cluster(arg);
}

}  // namespace roofline
