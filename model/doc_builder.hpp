#pragma once
// Accumulates a roofline-model/1 document node by node: what the built-in templates
// (model/templates.cpp) and the Hugging Face config builders (model/hf_*.cpp) expand to, so that
// every built-in model goes through the one loader a user's file does. The declarations are kept as
// records (model/model_doc.hpp), the JSON made only when the document is wanted as JSON.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/model_doc.hpp"

namespace roofline {

class DocBuilder {
public:
    using json = nlohmann::json;

    DocBuilder() = default;
    explicit DocBuilder(const std::string& name) { doc_.head["name"] = name; }

    // The document's keys other than inputs, parameters and nodes.
    json& doc() { return doc_.head; }
    // The finished document, moved out (the builder is done with it): as JSON, or as it was built.
    json take() { return std::move(doc_).to_json(); }
    ModelDoc take_model() { return std::move(doc_); }
    void input(const std::string& name, json shape, const char* dtype = nullptr) {
        doc_.inputs.push_back({name, std::move(shape), dtype ? json(dtype) : json()});
    }
    // Returns the parameter's name (to use it as an input in place).
    std::string param(const std::string& name, json shape, const char* dtype = nullptr) {
        doc_.parameters.push_back({name, std::move(shape), dtype ? json(dtype) : json()});
        return name;
    }
    // Returns the node's (first) output name: the node's name.
    std::string node(const std::string& name, const char* op, json inputs, json attrs = json::object()) {
        doc_.nodes.push_back({name, op, std::move(inputs), std::move(attrs)});
        return name;
    }
    // The y output of a dropout node ("<name>:0"), or x itself when p == 0 (dropout(0) is the identity).
    std::string dropout(const std::string& name, const std::string& x, double p) {
        if (p == 0.0) return x;
        node(name, "dropout", {x}, {{"p", p}});
        return name + ":0";
    }
    // linear(x, <name>.weight [out, in], <name>.bias [out] when bias): nn.Linear.
    std::string linear(const std::string& name, const std::string& x, std::int64_t in, std::int64_t out, bool bias) {
        json ins = {x, param(name + ".weight", {out, in})};
        if (bias) ins.push_back(param(name + ".bias", {out}));
        return node(name, "linear", std::move(ins));
    }
    std::string layernorm(const std::string& name, const std::string& x, std::int64_t d, double eps) {
        return node(name, "layernorm", {x, param(name + ".weight", {d}), param(name + ".bias", {d})}, {{"eps", eps}});
    }
    std::string rmsnorm(const std::string& name, const std::string& x, std::int64_t d, double eps) {
        return node(name, "rmsnorm", {x, param(name + ".weight", {d})}, {{"eps", eps}});
    }

private:
    ModelDoc doc_;
};

// One rank's share of Megatron-LM's tensor-parallel split of a transformer (Shoeybi et al. 2019,
// section 3), as the GPT template (model/templates.cpp) and the Hugging Face decoders
// (model/hf_decoders.cpp) build it: the blocks' column-parallel inputs and row-parallel outputs,
// and the document's tensor_parallel section (model/graph.hpp TensorParallel) naming the nodes
// whose outputs are all-reduced, all-gathered or reduce-scattered. With sequence parallelism
// (Korthikanti et al. 2022, section 4.2.2) the layernorms, dropouts and residuals between the
// blocks hold `shard` tokens of the sequence: a column-parallel block's input is all-gathered (g:
// a concat of the rank's shard standing for the gathered buffer) and a row-parallel block's output
// reduce-scattered (g-bar: the rank's shard of the sum, a split's first part) instead of Megatron's
// all-reduce. As in Megatron, the gathered inputs are not kept for the linears' backward:
// model/autodiff.cpp gathers them again there.
class TensorParallelSplit {
public:
    using json = nlohmann::json;

    TensorParallelSplit(DocBuilder& b, std::int64_t degree, bool sequence_parallel, std::int64_t shard)
        : b_(b), t_(degree), sp_(sequence_parallel && degree > 1), shard_(shard) {}

    std::int64_t degree() const { return t_; }
    bool sequence_parallel() const { return sp_; }
    // The input of a column-parallel block: all-gathered by node `name` under sequence parallelism.
    std::string column_input(const std::string& name, const std::string& x) {
        if (!sp_) return x;
        gathers_.push_back(b_.node(name, "concat", json(std::vector<std::string>(static_cast<std::size_t>(t_), x)), {{"axis", 1}}));
        return name;
    }
    // The partial sums a row-parallel block (or the vocabulary-parallel embedding) leaves in x:
    // reduce-scattered by node `name` under sequence parallelism, else x all-reduced.
    std::string row_output(const std::string& name, const std::string& x) {
        if (sp_) return reduce_scatter(name, x);
        all_reduce(x);
        return x;
    }
    // The partial sums of two row-parallel blocks that read the same input and both add to the
    // residual (a parallel attention and MLP block: GPT-J, GPT-NeoX's gpt_j_residual, PaLM,
    // Falcon, Phi): added on each rank by node `sum` (attention's first, so that the backward
    // all-reduce's overlap finds attention's column-parallel linear, the last whose input gradient
    // backward computes) and reduced once, by node `name` under sequence parallelism, as GPT-NeoX
    // reduces `mlp_output + attention_output` ("we can avoid doing the allreduce in the attn / mlp
    // outputs ... we can do a single allreduce after we add mlp / attn outputs") and as Chowdhery
    // et al. 2022 (PaLM, section 2, "Parallel Layers") fuse them. One all-reduce of b x s x h
    // forward instead of two of the same size.
    std::string row_outputs(const std::string& sum, const std::string& name, const std::string& attention, const std::string& mlp) {
        return row_output(name, b_.node(sum, "add", {attention, mlp}));
    }
    void all_reduce(const std::string& node) {
        if (t_ > 1) all_reduce_.push_back(node);
    }
    // A column-parallel block's input whose backward all-reduce (Megatron's f operator) has no
    // forward all-reduce to pair with in all_reduce: the second layernorm of a parallel block
    // with two (Falcon's new_decoder_architecture ln_mlp), whose input gradient is reduced apart
    // from the first's. Not under sequence parallelism, where column_input's all-gather carries it.
    void gradient_all_reduce(const std::string& node) {
        if (t_ > 1 && !sp_) gradient_all_reduce_.push_back(node);
    }
    std::string reduce_scatter(const std::string& name, const std::string& x) { return reduce_scatter(name, x, shard_); }
    // The same along axis 1 of a tensor whose rank share there is `shard` rows (the MoE layer's
    // dispatched token copies under expert parallelism, model/templates.cpp).
    std::string reduce_scatter(const std::string& name, const std::string& x, std::int64_t shard) {
        scatters_.push_back(
            b_.node(name, "split", {x}, {{"axis", 1}, {"sizes", std::vector<std::int64_t>(static_cast<std::size_t>(t_), shard)}}));
        return name + ":0";
    }
    // A cross-entropy over the rank's share of the vocabulary (Megatron's vocab-parallel loss).
    void vocab_parallel_loss(const std::string& node) {
        if (t_ > 1) loss_.push_back(node);
    }
    // The document's tensor_parallel section (none for one rank).
    void write() const {
        if (t_ == 1) return;
        json& s = b_.doc()["tensor_parallel"] = {{"degree", t_}, {"all_reduce", all_reduce_}};
        if (!loss_.empty()) s["vocab_parallel_loss"] = loss_;
        if (!gradient_all_reduce_.empty()) s["gradient_all_reduce"] = gradient_all_reduce_;
        if (sp_) {
            s["sequence_parallel"] = true;
            s["all_gather"] = gathers_;
            s["reduce_scatter"] = scatters_;
        }
    }

private:
    DocBuilder& b_;
    std::int64_t t_;
    bool sp_;
    std::int64_t shard_;
    std::vector<std::string> all_reduce_, gradient_all_reduce_, gathers_, scatters_, loss_;
};

// One rank's share of context parallelism (Megatron-core's context parallelism in the all-gather
// form Llama 3 was trained with, Dubey et al. 2024, section 3.3.2), as the GPT template
// (model/templates.cpp) and the Hugging Face llama family (model/hf_decoders.cpp) build it: a rank
// holds seq / degree tokens of every sequence (two chunks, i and 2 degree - 1 - i, balancing causal
// attention's work), and attention all-gathers the keys and values of the whole sequence from the
// group. Collects the document's context_parallel section (model/graph.hpp ContextParallel).
class ContextParallelSplit {
public:
    using json = nlohmann::json;

    ContextParallelSplit(DocBuilder& b, std::int64_t degree) : b_(b), c_(degree) {}

    std::int64_t degree() const { return c_; }
    // Why a sequence of `seq` tokens cannot be split over `degree` ranks (empty: it can): Megatron-core
    // cuts it into 2 x degree chunks, two a rank.
    static std::string seq_error(std::int64_t seq, std::int64_t degree) {
        if (degree == 1 || seq % (2 * degree) == 0) return "";
        return "--cp " + std::to_string(degree) + ": the sequence length " + std::to_string(seq) +
               " must be a multiple of 2 x cp = " + std::to_string(2 * degree) + " (two chunks a rank)";
    }
    // Keys or values x [batch, heads, seq / degree, head_dim] gathered from the group by node
    // `name`: a concat of the rank's shard along the sequence standing for the gathered buffer (x
    // itself for one rank). An attention gathers its keys, then its values: sim/parallel.cpp pairs
    // them as one ring exchange.
    std::string gather(const std::string& name, const std::string& x) {
        if (c_ == 1) return x;
        gathers_.push_back(b_.node(name, "concat", json(std::vector<std::string>(static_cast<std::size_t>(c_), x)), {{"axis", 2}}));
        return name;
    }
    // The length of the keys and values attention reads: the whole sequence's `seq` tokens once
    // gathered, the dims' "seq" for one rank.
    json kv_seq(std::int64_t seq) const { return c_ > 1 ? json(seq) : json("seq"); }
    // The document's context_parallel section and the description's note of the rank's tokens of
    // the `seq` a sequence has (nothing for one rank).
    void write(std::int64_t seq) const {
        if (c_ == 1) return;
        b_.doc()["context_parallel"] = {{"degree", c_}, {"all_gather", gathers_}};
        b_.doc()["description"] = b_.doc()["description"].get<std::string>() + "; rank of " + std::to_string(c_) +
                                  "-way context parallelism (" + std::to_string(seq / c_) + " of " + std::to_string(seq) + " tokens)";
    }

private:
    DocBuilder& b_;
    std::int64_t c_;
    std::vector<std::string> gathers_;
};

// One rank's share of expert parallelism (GShard, Lepikhin et al. 2020, section 2.2; Megatron-core's
// MoEAlltoAllTokenDispatcher), as the GPT template (model/templates.cpp) and the Hugging Face
// mixture-of-experts decoders (model/hf_build.cpp top_k_experts) build it: a rank holds experts /
// degree of the experts; an all-to-all sends each token copy to its expert's rank and one brings
// the outputs back. Collects the document's expert_parallel section (model/graph.hpp
// ExpertParallel): the all-to-all nodes and the experts' parameters (their gradients are reduced
// only among the data-parallel ranks holding the same experts).
class ExpertParallelSplit {
public:
    using json = nlohmann::json;

    ExpertParallelSplit(DocBuilder& b, std::int64_t degree) : b_(b), e_(degree) {}

    std::int64_t degree() const { return e_; }
    // Node `node`'s output is the buffer an all-to-all exchanges (recorded only with degree > 1).
    std::string all_to_all(const std::string& node) {
        if (e_ > 1) all_to_all_.push_back(node);
        return node;
    }
    // Under uniform routing every rank sends as many token copies as it receives: the all-to-all is
    // a copy of x (an identity permutation over its `rank` axes, materialised) named `name`.
    std::string exchange(const std::string& name, const std::string& x, std::size_t rank) {
        std::vector<std::int64_t> perm(rank);
        for (std::size_t i = 0; i < rank; ++i) perm[i] = static_cast<std::int64_t>(i);
        return all_to_all(b_.node(name, "permute", {x}, {{"perm", perm}, {"copy", true}}));
    }
    // An expert's parameter (recorded only with degree > 1).
    std::string expert_param(const std::string& name) {
        if (e_ > 1) params_.push_back(name);
        return name;
    }
    // The document's expert_parallel section (none for one rank), with the busiest rank's load
    // factor when routing is not uniform (model/graph.hpp ExpertParallel).
    void write(std::optional<double> load_factor = std::nullopt) const {
        if (e_ == 1) return;
        b_.doc()["expert_parallel"] = {{"degree", e_}, {"all_to_all", all_to_all_}, {"parameters", params_}};
        if (load_factor) b_.doc()["expert_parallel"]["load_factor"] = *load_factor;
    }

private:
    DocBuilder& b_;
    std::int64_t e_;
    std::vector<std::string> all_to_all_, params_;
};

}  // namespace roofline
