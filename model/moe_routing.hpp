#pragma once
// How a mixture of experts routes its tokens when routing is not uniform or experts have a
// capacity (issue #16): the load given (uniform, Zipf or one share per expert), what each expert
// then runs of a sequence, the busiest expert-parallel rank, and the dispatch and combine as ops.
// One implementation for the GPT template (model/templates.cpp expand_gpt) and the Hugging Face
// mixture-of-experts decoders (model/hf_build.cpp top_k_experts: mixtral, qwen2_moe).
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/doc_builder.hpp"

namespace roofline {

// The routing asked for: config "expert_load", "capacity_factor" and "pad_to_capacity" (the GPT
// template) or --expert-load, --capacity-factor and --pad-to-capacity.
struct ExpertRouting {
    // The share of the token copies each expert receives (relative, one per expert once
    // resolve_expert_load has run); empty: uniform.
    std::vector<double> shares;
    std::optional<double> zipf;  // "zipf:S": S, expanded into shares once the experts are known
    std::string text;            // the load as given, for the description; empty: none given
    // Expert capacity (GShard, Lepikhin et al. 2020; Switch Transformer, Fedus et al. 2021, eq. 3;
    // Megatron-core's moe_expert_capacity_factor): each expert takes at most
    // ceil(capacity_factor x tokens x top_k / experts) token copies of a sequence, the rest are
    // dropped (they skip the MLP; the residual carries them). Unset: dropless.
    std::optional<double> capacity_factor;
    // With a capacity: every expert runs a full [capacity, d] buffer, the unused rows zeros, as
    // GShard, Switch and DeepSpeed-MoE dispatch (fixed shapes; Megatron-core's
    // moe_pad_expert_input_to_capacity); the all-to-alls carry the whole buffer.
    bool pad_to_capacity = false;
    // One load per layer (config "expert_load" as an array of loads, each an array of shares,
    // "uniform" or "zipf:S"; --expert-load L0;L1;...): routers differ from layer to layer, and a
    // layer's experts run what its own load sends them (resolved, "uniform" is one share each).
    // Empty: every layer routes by `shares`.
    std::vector<ExpertRouting> per_layer;

    // Anything other than uniform dropless routing asked for.
    bool any() const { return !text.empty() || capacity_factor.has_value() || pad_to_capacity; }
    // Every layer routes uniformly (no shares, no per-layer loads).
    bool uniform() const { return shares.empty() && per_layer.empty(); }
    // Layer l's routing: its own load with this routing's capacity, or this routing itself.
    ExpertRouting layer(std::int64_t l) const;
};

// Where a bad value is: `where(key)` is the message's prefix for key "expert_load",
// "expert_load/<i>" (its i-th share) or "capacity_factor"; the error is InputError(prefix + what).
using RoutingWhere = std::function<std::string(const std::string& key)>;

// "expert_load" into r: an array of non-negative shares (not all zero), "uniform" or "zipf:S" (S >= 0),
// or an array of those, one per layer (ExpertRouting::per_layer).
void parse_expert_load(const nlohmann::json& v, ExpertRouting& r, const RoutingWhere& where);
// Per-layer loads: one per layer of the model's `layers` (InputError naming "expert_load" otherwise).
void check_expert_layers(const ExpertRouting& r, std::int64_t layers, const RoutingWhere& where);
// A capacity factor: a finite number > 0.
double parse_capacity_factor(const nlohmann::json& v, const RoutingWhere& where);
// Once the experts are known: zipf expanded into shares, and one share per expert required.
void resolve_expert_load(ExpertRouting& r, std::int64_t experts, const RoutingWhere& where);

// The token copies each expert runs per sequence of `tokens` tokens under the routing shares: the
// tokens x k copies split in proportion to the shares, no expert above `tokens` (a token's k copies
// go to k distinct experts: what a capped expert cannot take goes to the others in proportion),
// then rounded to integers by largest remainder (ties to the lower index).
std::vector<std::int64_t> expert_rows(const std::vector<double>& shares, std::int64_t tokens, std::int64_t k);

// What each expert runs of a sequence of `tokens` tokens: the routed copies (expert_rows; uniform
// shares when r.shares is empty), clipped to the capacity or, padded, raised to it. Empty rows:
// uniform and dropless (the builders' regrouped form).
struct Routing {
    std::vector<std::int64_t> rows;
    std::int64_t capacity = 0;  // 0: dropless
    std::int64_t dropped = 0;   // token copies over capacity
};
Routing route_tokens(const ExpertRouting& r, std::int64_t experts, std::int64_t tokens, std::int64_t k);

// "uniform routing", or the load given and what it makes of the busiest expert, and the capacity's drops.
std::string routing_text(const ExpertRouting& spec, const Routing& r, std::int64_t experts, std::int64_t tokens, std::int64_t k);
// Layers l0 .. l1 - 1 routed (route_tokens of each layer's routing), and their text: routing_text
// for one load; for per-layer loads the number of layers and the busiest expert of the busiest one.
std::vector<Routing> route_layers(const ExpertRouting& spec, std::int64_t l0, std::int64_t l1, std::int64_t experts, std::int64_t tokens,
                                  std::int64_t k);
std::string layers_routing_text(const ExpertRouting& spec, std::int64_t l0, const std::vector<Routing>& routes, std::int64_t experts,
                                std::int64_t tokens, std::int64_t k);
// "2.91x": a ratio with two decimals.
std::string times_text(double ratio);

// The busiest of `ep` expert-parallel ranks under the routed rows (each rank holding rows.size() /
// ep consecutive experts): the one with the most copies to run, whom every rank waits for at the
// combine's all-to-all. Its experts are [first_local, first_local + rows.size() / ep); every rank
// sends it the copies bound for them, `rows` of a sequence's.
struct BusiestRank {
    std::int64_t first_local = 0, rows = 0;
};
BusiestRank busiest_rank(const std::vector<std::int64_t>& rows, std::int64_t ep);
// What an expert-parallel rank's description adds about its load over the layers routed: nothing
// when all are uniform; busiest_text of the one load; for loads that differ by layer, each layer's
// busiest rank taken together (the document runs every layer's busiest rank's experts).
std::string expert_rank_text(const std::vector<Routing>& routes, std::int64_t local, std::int64_t ep, std::int64_t copies);
// The busiest rank's expert work over the mean rank's (model/graph.hpp ExpertParallel::load_factor).
double load_factor(const BusiestRank& busiest, std::int64_t ep, std::int64_t copies);
// Over several layers (each of `copies` token copies a sequence; a layer routed uniformly, its rows
// empty, runs the mean): the busiest ranks' summed rows over the mean's, the ratio of the expert work
// the document (every layer's busiest rank) runs to the mean rank's.
double load_factor(const std::vector<Routing>& routes, std::int64_t ep, std::int64_t copies);
// That load factor when some layer is routed by rows (the document's ExpertParallel::load_factor), else none.
std::optional<double> routed_load_factor(const std::vector<Routing>& routes, std::int64_t ep, std::int64_t copies);
// "; the busiest rank: experts 0-1, 2.91x the mean copies" for the description (`local` experts a rank).
std::string busiest_text(const BusiestRank& busiest, std::int64_t local, std::int64_t ep, std::int64_t copies);

// The routed experts of one layer as ops (non-uniform routing or a capacity), given `stream`, the
// k copies of each token of a sequence as [batch, copies, d] rows: expert e takes a contiguous block
// of rows[e] of them (a slice standing for the gather by routing index), its outputs concatenated
// in expert order; with ep > 1 the dispatch is a concat of the ep blocks the ranks send (the
// receive buffer) and the combine a slice of this rank's rows out of the outputs sent back. With
// a capacity the experts' rows need not add up to the copies: a padded dispatch buffer longer than
// the stream is the stream and zero rows (pad); outputs of dropped copies are zero rows in the
// combine (pad), of padding rows cut off (slice). Returns the [batch, copies, d] outputs in stream
// order (before the routing weights).
struct RoutedExperts {
    std::string prefix;       // the dispatch's and combine's nodes: prefix + "buffer", "to_rank", "dispatch", "outputs", "combine"
    std::int64_t copies = 0;  // a sequence's token copies: the stream's rows
    const Routing* routing = nullptr;
    BusiestRank busiest;  // with ep > 1
    // Local expert j's module prefix; its token rows are node prefix + "tokens".
    std::function<std::string(std::int64_t j)> expert_prefix;
    // Declares local expert j's parameters (through ExpertParallelSplit::expert_param) and, when
    // `tokens` is not empty, builds its MLP on them, returning the output ([batch, rows, d]).
    std::function<std::string(std::int64_t j, const std::string& prefix, const std::string& tokens)> expert;
};
std::string routed_experts(DocBuilder& b, ExpertParallelSplit& eps, std::int64_t experts, const std::string& stream,
                           const RoutedExperts& r);

}  // namespace roofline
