// libFuzzer target: the roofline-cluster/1 loader (parse_cluster: its chip, fabric, network or
// torus, sourced rates below their line rates), then a collective on the whole cluster, on arbitrary
// bytes. Every input must end in a Cluster or an InputError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fuzz/fuzz_json.hpp"
#include "ops/error.hpp"
#include "sim/cluster.hpp"
#include "sim/collectives.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::optional<nlohmann::json> parsed = fuzz_json(data, size);
    if (!parsed) return 0;
    const nlohmann::json& doc = *parsed;
    try {
        const roofline::Cluster c = roofline::parse_cluster(doc, "fuzz.json");
        const long long most = c.max_devices();
        const int ranks = most > 0 && most < 4096 ? static_cast<int>(most) : 64;
        const roofline::CommGroup all{ranks, std::min(ranks, c.gpus_per_node())};
        for (const roofline::Collective k : {roofline::Collective::all_reduce, roofline::Collective::all_to_all})
            (void)roofline::collective_cost(c, k, 1 << 20, all);
    } catch (const roofline::InputError&) {}
    return 0;
}
