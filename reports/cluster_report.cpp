#include "reports/cluster_report.hpp"

#include <fmt/format.h>

#include "reports/units.hpp"
#include "sim/collectives.hpp"

namespace roofline {

namespace {

using nlohmann::ordered_json;

std::string sourced_line(const std::string& label, const std::string& value, const SourcedValue& s) {
    return fmt::format("  {:<24} {:<14} [{}]{}\n", label, value, s.source, s.note.empty() ? "" : " " + s.note);
}

ordered_json sourced_json(const SourcedValue& s) {
    ordered_json j = {{"value", s.value}, {"source", s.source}};
    if (!s.note.empty()) j["note"] = s.note;
    return j;
}

// The groups a reader asks about: one node, two nodes, and the largest power-of-two count of
// nodes up to 128 (or the whole pod slice on a TPU).
std::vector<int> example_groups(const Cluster& c) {
    const int node = c.gpus_per_node();
    const long long most = c.max_devices();
    std::vector<int> g;
    if (c.torus) {
        for (int n : {4, 64, 256, 4096})
            if (most == 0 || n <= most) g.push_back(n);
        return g;
    }
    g = {node, 2 * node};
    int big = 128 * node;
    while (most > 0 && big > most) big /= 2;
    if (big > 2 * node) g.push_back(big);
    return g;
}

const Collective kShown[] = {Collective::all_reduce, Collective::all_gather, Collective::all_to_all};
const double kSizes[] = {1e3, 1e6, 64e6, 1e9};

}  // namespace

std::string render_cluster(const Cluster& c) {
    std::string out = fmt::format("{} — {}\n", c.name, c.display_name);
    out += fmt::format("  {:<24} {}  ({})\n", "chip", c.chip, c.hardware.display_name);
    out += sourced_line(c.torus ? "chips per host" : "GPUs per node", fmt::format("{}", c.gpus_per_node()), c.devices_per_node);
    if (c.max_nodes) out += sourced_line("nodes (at most)", fmt::format("{}", static_cast<long long>(c.max_nodes->value)), *c.max_nodes);
    out += fmt::format("  {:<24} {} ({})\n", "fabric", c.intra.name, fabric_name(c.intra.fabric));
    out += sourced_line(c.torus ? "  link, per direction" : "  link per GPU, per dir", human_si(c.intra.link_bytes_per_s.value, "B/s"),
                        c.intra.link_bytes_per_s);
    if (c.intra.ring_busbw) out += sourced_line("  ring busbw (measured)", human_si(c.intra.ring_busbw->value, "B/s"), *c.intra.ring_busbw);
    if (c.intra.nvls_allreduce_busbw)
        out += sourced_line("  NVLS all-reduce busbw", human_si(c.intra.nvls_allreduce_busbw->value, "B/s"), *c.intra.nvls_allreduce_busbw);
    if (c.inter) {
        out += fmt::format("  {:<24} {}\n", "network", c.inter->name);
        out += sourced_line("  NICs per node", fmt::format("{}", static_cast<int>(c.inter->nics_per_node.value)), c.inter->nics_per_node);
        out += sourced_line("  NIC line rate", human_si(c.inter->nic_bits_per_s.value, "b/s"), c.inter->nic_bits_per_s);
        out += sourced_line("  NIC busbw (measured)", human_si(c.inter->nic_busbw.value, "B/s"), c.inter->nic_busbw);
    }
    if (c.torus) {
        std::string dims;
        for (int d : c.torus->max_dims) dims += (dims.empty() ? "" : "x") + std::to_string(d);
        out += fmt::format("  {:<24} {}\n", "largest slice", dims);
        out += sourced_line("  all-reduce busbw", human_si(c.torus->allreduce_busbw.value, "B/s"), c.torus->allreduce_busbw);
    }
    out += "\nCollectives: time, bus bandwidth and the algorithm/protocol NCCL would pick (the torus on TPU pods)\n";
    out += fmt::format("  {:<15} {:>7}", "collective", c.torus ? "chips" : "GPUs");
    for (double s : kSizes) out += fmt::format("  {:>30}", human_bytes(s));
    out += "\n";
    for (Collective coll : kShown) {
        for (int n : example_groups(c)) {
            out += fmt::format("  {:<15} {:>7}", collective_name(coll), n);
            for (double s : kSizes) {
                const CollectiveCost k = collective_cost(c, coll, s, CommGroup{n, 0});
                const std::string how = k.algorithm == CollectiveAlgorithm::direct || k.algorithm == CollectiveAlgorithm::torus
                                            ? std::string(algorithm_name(k.algorithm))
                                            : fmt::format("{}/{}", algorithm_name(k.algorithm), protocol_name(k.protocol));
                out += fmt::format("  {:>9} {:>10} {:<9}", human_time(k.time_s), human_si(k.busbw, "B/s"), how);
            }
            out += "\n";
        }
    }
    out += "\nSources:\n";
    for (const auto& [k, v] : c.sources) out += fmt::format("  [{}] {}\n", k, v);
    return out;
}

std::string render_cluster_list() {
    std::string out;
    for (const std::string& name : builtin_cluster_names()) {
        const Cluster c = builtin_cluster(name);
        const std::string net =
            c.inter ? fmt::format("{} x {}", static_cast<int>(c.inter->nics_per_node.value), human_si(c.inter->nic_bits_per_s.value, "b/s"))
                    : std::string("ICI torus");
        const long long most = c.max_devices();
        out += fmt::format("{:<15} {:<32} {:>2} x {:<15} {:<10} {:>14}  {}\n", c.name, c.display_name.substr(0, 32), c.gpus_per_node(),
                           c.chip, fabric_name(c.intra.fabric), net, most > 0 ? fmt::format("up to {} devices", most) : "");
    }
    return out;
}

ordered_json cluster_json(const Cluster& c) {
    ordered_json j;
    j["name"] = c.name;
    j["display_name"] = c.display_name;
    j["chip"] = c.chip;
    j["devices_per_node"] = sourced_json(c.devices_per_node);
    if (c.max_nodes) j["max_nodes"] = sourced_json(*c.max_nodes);
    ordered_json in = {
        {"fabric", fabric_name(c.intra.fabric)}, {"name", c.intra.name}, {"link_bytes_per_s", sourced_json(c.intra.link_bytes_per_s)}};
    if (c.intra.ring_busbw) in["ring_busbw"] = sourced_json(*c.intra.ring_busbw);
    if (c.intra.nvls_allreduce_busbw) in["nvls_allreduce_busbw"] = sourced_json(*c.intra.nvls_allreduce_busbw);
    j["intra_node"] = in;
    if (c.inter)
        j["inter_node"] = {{"name", c.inter->name},
                           {"nics_per_node", sourced_json(c.inter->nics_per_node)},
                           {"nic_bits_per_s", sourced_json(c.inter->nic_bits_per_s)},
                           {"nic_busbw", sourced_json(c.inter->nic_busbw)}};
    if (c.torus) j["torus"] = {{"max_dims", c.torus->max_dims}, {"allreduce_busbw", sourced_json(c.torus->allreduce_busbw)}};
    ordered_json colls = ordered_json::array();
    for (Collective coll : kShown)
        for (int n : example_groups(c))
            for (double s : kSizes) {
                const CollectiveCost k = collective_cost(c, coll, s, CommGroup{n, 0});
                colls.push_back({{"collective", collective_name(coll)},
                                 {"devices", n},
                                 {"nodes", k.nodes},
                                 {"bytes", s},
                                 {"time_s", k.time_s},
                                 {"busbw", k.busbw},
                                 {"algorithm", algorithm_name(k.algorithm)},
                                 {"protocol", protocol_name(k.protocol)}});
            }
    j["collectives"] = colls;
    ordered_json src = ordered_json::object();
    for (const auto& [k, v] : c.sources) src[k] = v;
    j["sources"] = src;
    return j;
}

}  // namespace roofline
