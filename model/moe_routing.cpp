#include "model/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "ops/error.hpp"
#include "ops/text.hpp"

namespace roofline {

using nlohmann::json;

namespace {
// Where a key inside layer l's load is: "expert_load/<l>" plus the key's own path below "expert_load".
RoutingWhere layer_where(const RoutingWhere& where, std::size_t l) {
    return [&where, at = "expert_load/" + std::to_string(l)](const std::string& key) {
        return where(at + key.substr(std::string("expert_load").size()));
    };
}
}  // namespace

void parse_expert_load(const json& v, ExpertRouting& r, const RoutingWhere& where) {
    const char* expected =
        "expected an array of one non-negative share per expert, \"uniform\", \"zipf:S\" (S >= 0), or an array of those, one per layer";
    r.shares.clear();
    r.zipf.reset();
    r.per_layer.clear();
    if (v.is_array() && !v.empty() && (v.front().is_array() || v.front().is_string())) {
        for (std::size_t l = 0; l < v.size(); ++l) {
            const std::string at = "expert_load/" + std::to_string(l);
            if (!v[l].is_array() && !v[l].is_string())
                throw InputError(where(at) + "expected layer " + std::to_string(l) +
                                 "'s load: an array of shares, \"uniform\" or \"zipf:S\", got " + v[l].dump());
            if (v[l].is_array() && !v[l].empty() && (v[l].front().is_array() || v[l].front().is_string()))
                throw InputError(where(at) + "expected layer " + std::to_string(l) + "'s load (one split of the experts), got " +
                                 v[l].dump());
            ExpertRouting layer;
            parse_expert_load(v[l], layer, layer_where(where, l));
            r.per_layer.push_back(std::move(layer));
        }
        r.text = "per layer (" + std::to_string(v.size()) + " loads)";
        return;
    }
    if (v.is_string()) {
        r.text = v.get<std::string>();
        if (r.text == "uniform") return;
        const std::optional<double> s = r.text.rfind("zipf:", 0) == 0 ? whole_number(r.text.substr(5)) : std::nullopt;
        if (!s || *s < 0) throw InputError(where("expert_load") + expected + ", got " + v.dump());
        r.zipf = *s;
        return;
    }
    if (!v.is_array() || v.empty()) throw InputError(where("expert_load") + expected + ", got " + v.dump());
    double sum = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number() || !(v[i].get<double>() >= 0) || !std::isfinite(v[i].get<double>()))
            throw InputError(where("expert_load/" + std::to_string(i)) + "expected a non-negative number, got " + v[i].dump());
        r.shares.push_back(v[i].get<double>());
        sum += r.shares.back();
    }
    if (!(sum > 0)) throw InputError(where("expert_load") + "the shares sum to 0: at least one expert must receive tokens");
    r.text = "given shares";
}

double parse_capacity_factor(const json& v, const RoutingWhere& where) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
        throw InputError(where("capacity_factor") + "expected a number > 0 (an expert's capacity over its uniform share), got " + v.dump());
    return v.get<double>();
}

ExpertRouting ExpertRouting::layer(std::int64_t l) const {
    if (per_layer.empty()) return *this;
    ExpertRouting r = per_layer.at(static_cast<std::size_t>(l));
    r.capacity_factor = capacity_factor;
    r.pad_to_capacity = pad_to_capacity;
    return r;
}

void check_expert_layers(const ExpertRouting& r, std::int64_t layers, const RoutingWhere& where) {
    if (!r.per_layer.empty() && static_cast<std::int64_t>(r.per_layer.size()) != layers)
        throw InputError(where("expert_load") + "expected one load per layer (" + std::to_string(layers) + "), got " +
                         std::to_string(r.per_layer.size()));
}

void resolve_expert_load(ExpertRouting& r, std::int64_t experts, const RoutingWhere& where) {
    for (std::size_t l = 0; l < r.per_layer.size(); ++l) {
        ExpertRouting& layer = r.per_layer[l];
        resolve_expert_load(layer, experts, layer_where(where, l));
        // A uniform layer among routed ones: one share each, so that every layer has its rows.
        if (layer.shares.empty()) layer.shares.assign(static_cast<std::size_t>(experts), 1.0);
    }
    if (r.zipf) {
        r.shares.clear();
        for (std::int64_t e = 0; e < experts; ++e) r.shares.push_back(std::pow(static_cast<double>(e + 1), -*r.zipf));
    }
    if (!r.shares.empty() && static_cast<std::int64_t>(r.shares.size()) != experts)
        throw InputError(where("expert_load") + "expected one share per expert (" + std::to_string(experts) + "), got " +
                         std::to_string(r.shares.size()));
}

std::vector<std::int64_t> expert_rows(const std::vector<double>& shares, std::int64_t tokens, std::int64_t k) {
    const std::size_t n = shares.size();
    const double total = static_cast<double>(tokens * k), cap = static_cast<double>(tokens);
    std::vector<double> target(n, 0.0);
    std::vector<bool> capped(n, false);
    for (bool again = true; again;) {
        again = false;
        double weight = 0, left = total;
        for (std::size_t e = 0; e < n; ++e) (capped[e] ? left -= cap : weight += shares[e]);
        const bool even = !(weight > 0);  // the experts with a share are all full: the rest share evenly
        std::size_t open = 0;
        for (std::size_t e = 0; e < n; ++e) open += capped[e] ? 0 : 1;
        for (std::size_t e = 0; e < n; ++e) {
            if (capped[e]) continue;
            target[e] = left * (even ? 1.0 / static_cast<double>(open) : shares[e] / weight);
            if (target[e] > cap) {
                capped[e] = true;
                target[e] = cap;
                again = true;
            }
        }
    }
    std::vector<std::int64_t> rows(n);
    std::int64_t sum = 0;
    for (std::size_t e = 0; e < n; ++e) sum += rows[e] = static_cast<std::int64_t>(std::floor(target[e] + 1e-9));
    std::vector<std::size_t> order(n);
    for (std::size_t e = 0; e < n; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return target[a] - static_cast<double>(rows[a]) > target[b] - static_cast<double>(rows[b]);
    });
    for (std::size_t i = 0; sum < tokens * k; i = (i + 1) % n)
        if (rows[order[i]] < tokens) ++rows[order[i]], ++sum;
    return rows;
}

Routing route_tokens(const ExpertRouting& spec, std::int64_t experts, std::int64_t tokens, std::int64_t k) {
    Routing r;
    if (experts == 0 || (spec.shares.empty() && !spec.capacity_factor)) return r;
    const std::vector<double> uniform(static_cast<std::size_t>(experts), 1.0);
    r.rows = expert_rows(spec.shares.empty() ? uniform : spec.shares, tokens, k);
    if (!spec.capacity_factor) return r;
    r.capacity =
        static_cast<std::int64_t>(std::ceil(*spec.capacity_factor * static_cast<double>(tokens * k) / static_cast<double>(experts) - 1e-9));
    for (std::int64_t& n : r.rows) {
        r.dropped += std::max<std::int64_t>(0, n - r.capacity);
        n = spec.pad_to_capacity ? r.capacity : std::min(n, r.capacity);
    }
    // Uniform, dropless and unpadded after all: the regrouped form.
    if (spec.shares.empty() && r.dropped == 0 && !spec.pad_to_capacity && tokens * k % experts == 0) r.rows.clear();
    return r;
}

std::string times_text(double ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", ratio);
    return buf;
}

std::string routing_text(const ExpertRouting& spec, const Routing& r, std::int64_t experts, std::int64_t tokens, std::int64_t k) {
    const std::int64_t copies = tokens * k;  // a sequence's token copies
    std::string text = spec.shares.empty() ? "uniform routing" : "routing " + spec.text;
    if (spec.capacity_factor) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * static_cast<double>(r.dropped) / static_cast<double>(copies));
        char cf[32];
        std::snprintf(cf, sizeof cf, "%g", *spec.capacity_factor);
        text += ", capacity factor " + std::string(cf) + " (" + std::to_string(r.capacity) + " copies an expert a sequence" +
                (spec.pad_to_capacity ? ", padded" : "") + "): " + pct + " of token copies dropped";
        if (spec.pad_to_capacity) return text;
    }
    if (spec.shares.empty()) return text;
    const std::int64_t most = *std::max_element(r.rows.begin(), r.rows.end());
    return text + ": the busiest expert runs " + times_text(static_cast<double>(most * experts) / static_cast<double>(copies)) +
           " the mean";
}

std::vector<Routing> route_layers(const ExpertRouting& spec, std::int64_t l0, std::int64_t l1, std::int64_t experts, std::int64_t tokens,
                                  std::int64_t k) {
    std::vector<Routing> routes;
    for (std::int64_t l = l0; l < l1; ++l) routes.push_back(route_tokens(spec.layer(l), experts, tokens, k));
    return routes;
}

std::string layers_routing_text(const ExpertRouting& spec, std::int64_t l0, const std::vector<Routing>& routes, std::int64_t experts,
                                std::int64_t tokens, std::int64_t k) {
    if (spec.per_layer.empty() || routes.empty())
        return routing_text(spec, routes.empty() ? Routing{} : routes.front(), experts, tokens, k);
    std::size_t worst = 0;
    std::int64_t most = 0;
    for (std::size_t l = 0; l < routes.size(); ++l) {
        const std::int64_t m = routes[l].rows.empty() ? 0 : *std::max_element(routes[l].rows.begin(), routes[l].rows.end());
        if (m > most) most = m, worst = l;
    }
    const auto l = l0 + static_cast<std::int64_t>(worst);
    return "routing " + spec.text + "; the busiest, layer " + std::to_string(l) + ": " +
           routing_text(spec.layer(l), routes[worst], experts, tokens, k);
}

BusiestRank busiest_rank(const std::vector<std::int64_t>& rows, std::int64_t ep) {
    BusiestRank best;
    const auto local = static_cast<std::int64_t>(rows.size()) / std::max<std::int64_t>(1, ep);
    for (std::int64_t r = 0; !rows.empty() && r < ep; ++r) {
        std::int64_t sum = 0;
        for (std::int64_t e = r * local; e < (r + 1) * local; ++e) sum += rows[static_cast<std::size_t>(e)];
        if (sum > best.rows) best.rows = sum, best.first_local = r * local;
    }
    return best;
}

double load_factor(const BusiestRank& busiest, std::int64_t ep, std::int64_t copies) {
    return std::max(1.0, static_cast<double>(busiest.rows * ep) / static_cast<double>(copies));
}

double load_factor(const std::vector<Routing>& routes, std::int64_t ep, std::int64_t copies) {
    std::int64_t busiest = 0;
    for (const Routing& r : routes) busiest += r.rows.empty() ? copies / std::max<std::int64_t>(1, ep) : busiest_rank(r.rows, ep).rows;
    return std::max(1.0, static_cast<double>(busiest * ep) /
                             static_cast<double>(copies * static_cast<std::int64_t>(std::max<std::size_t>(1, routes.size()))));
}

std::string busiest_text(const BusiestRank& busiest, std::int64_t local, std::int64_t ep, std::int64_t copies) {
    return "; the busiest rank: experts " + std::to_string(busiest.first_local) + "-" + std::to_string(busiest.first_local + local - 1) +
           ", " + times_text(static_cast<double>(busiest.rows * ep) / static_cast<double>(copies)) + " the mean copies";
}

namespace {
bool any_routed(const std::vector<Routing>& routes) {
    return std::any_of(routes.begin(), routes.end(), [](const Routing& r) { return !r.rows.empty(); });
}
}  // namespace

std::optional<double> routed_load_factor(const std::vector<Routing>& routes, std::int64_t ep, std::int64_t copies) {
    return any_routed(routes) ? std::optional<double>(load_factor(routes, ep, copies)) : std::nullopt;
}

std::string expert_rank_text(const std::vector<Routing>& routes, std::int64_t local, std::int64_t ep, std::int64_t copies) {
    if (!any_routed(routes)) return "";
    const bool same = std::all_of(routes.begin(), routes.end(), [&](const Routing& r) { return r.rows == routes.front().rows; });
    if (same) return busiest_text(busiest_rank(routes.front().rows, ep), local, ep, copies);
    return "; each layer's busiest rank: " + times_text(load_factor(routes, ep, copies)) + " the mean copies over these layers";
}

std::string routed_experts(DocBuilder& b, ExpertParallelSplit& eps, std::int64_t experts, const std::string& stream_in,
                           const RoutedExperts& r) {
    const std::int64_t ep = eps.degree(), local = experts / ep, T = r.copies;
    const std::vector<std::int64_t>& rows = r.routing->rows;
    auto fit_rows = [&](const std::string& node, const std::string& in, std::int64_t have, std::int64_t want) {
        if (have == want) return in;
        if (have > want) return b.node(node, "slice", {in}, {{"starts", {0}}, {"ends", {want}}, {"axes", {1}}});
        return b.node(node, "pad", {in}, {{"pads", {0, 0, 0, 0, want - have, 0}}});
    };
    std::int64_t span = ep > 1 ? r.busiest.rows : 0;  // rows the dispatch reads of the stream
    if (ep == 1)
        for (const std::int64_t n : rows) span += n;
    std::string stream = fit_rows(r.prefix + "buffer", stream_in, T, std::max(T, span));
    std::int64_t offset = 0;
    if (ep > 1) {
        const std::string part =
            b.node(r.prefix + "to_rank", "slice", {stream}, {{"starts", {0}}, {"ends", {r.busiest.rows}}, {"axes", {1}}});
        stream = eps.all_to_all(
            b.node(r.prefix + "dispatch", "concat", json(std::vector<std::string>(static_cast<std::size_t>(ep), part)), {{"axis", 1}}));
    }
    json outs = json::array();
    for (std::int64_t j = 0; j < local; ++j) {
        const std::int64_t e = (ep > 1 ? r.busiest.first_local : 0) + j, n = ep * rows[static_cast<std::size_t>(e)];
        const std::string ex = r.expert_prefix(j);
        if (n == 0) {  // no tokens routed: its weights are held, nothing runs
            r.expert(j, ex, "");
            continue;
        }
        const std::string tokens = b.node(ex + "tokens", "slice", {stream}, {{"starts", {offset}}, {"ends", {offset + n}}, {"axes", {1}}});
        offset += n;
        outs.push_back(r.expert(j, ex, tokens));
    }
    std::string back = b.node(r.prefix + "outputs", "concat", outs, {{"axis", 1}});
    eps.all_to_all(back);  // the busiest rank sends back all it ran
    return fit_rows(r.prefix + "combine", back, offset, T);
}

}  // namespace roofline
