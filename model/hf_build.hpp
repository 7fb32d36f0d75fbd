#pragma once
// Internals of the Hugging Face config loader (model/hf_config.hpp): reading config keys with
// file + JSON path in every message, accumulating a roofline-model/1 document, and the pieces the
// model builders share. hf_decoders.cpp builds gpt2, opt and the llama family (llama, mistral, qwen2,
// mixtral, qwen2_moe); hf_encoders.cpp bert, roberta and vit; hf_seq2seq.cpp switch_transformers, t5
// and bart.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/doc_builder.hpp"
#include "model/hf_config.hpp"
#include "model/json_check.hpp"
#include "model/moe_routing.hpp"

namespace roofline::hf {

using nlohmann::json;

// Reads the keys of one config object; every message names the file and the JSON path.
class ConfigReader {
public:
    ConfigReader(const json& cfg, std::string origin, std::string prefix)
        : cfg_(cfg), origin_(std::move(origin)), prefix_(std::move(prefix)) {}

    [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
        json_fail(origin_, key.empty() ? prefix_ : prefix_ + "/" + key, msg);
    }
    const std::string& origin() const { return origin_; }
    // Present and not null: transformers writes null for "use the default" (head_dim, n_inner).
    bool has(const std::string& key) const {
        auto it = cfg_.find(key);
        return it != cfg_.end() && !it->is_null();
    }
    const json& get(const std::string& key) const {
        if (!cfg_.contains(key)) fail("", "missing key '" + key + "'" + context_);
        return cfg_.at(key);
    }
    void set_context(const std::string& model_type) { context_ = " (required for model_type '" + model_type + "')"; }

    std::int64_t positive(const std::string& key) const { return to_positive(key, get(key)); }
    std::int64_t positive_or(const std::string& key, std::int64_t dflt) const { return has(key) ? to_positive(key, cfg_.at(key)) : dflt; }
    std::int64_t non_negative_or(const std::string& key, std::int64_t dflt) const {
        if (!has(key)) return dflt;
        const json& v = cfg_.at(key);
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0) fail(key, "expected a non-negative integer, got " + v.dump());
        return v.get<std::int64_t>();
    }
    double probability_or(const std::string& key, double dflt) const {
        if (!has(key)) return dflt;
        const json& v = cfg_.at(key);
        if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1) {
            fail(key, "expected a probability in [0, 1), got " + v.dump());
        }
        return v.get<double>();
    }
    double positive_number_or(const std::string& key, double dflt) const {
        if (!has(key)) return dflt;
        const json& v = cfg_.at(key);
        if (!v.is_number() || !(v.get<double>() > 0)) fail(key, "expected a positive number, got " + v.dump());
        return v.get<double>();
    }
    bool bool_or(const std::string& key, bool dflt) const {
        if (!has(key)) return dflt;
        if (!cfg_.at(key).is_boolean()) fail(key, "expected true or false, got " + cfg_.at(key).dump());
        return cfg_.at(key).get<bool>();
    }
    std::string string_or(const std::string& key, const std::string& dflt) const {
        if (!has(key)) return dflt;
        if (!cfg_.at(key).is_string()) fail(key, "expected a string, got " + cfg_.at(key).dump());
        return cfg_.at(key).get<std::string>();
    }
    std::string string(const std::string& key) const {
        const json& v = get(key);
        if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
        return v.get<std::string>();
    }
    // The value n of `key` must divide `whole`, the value of `whole_key`.
    void require_divides(const std::string& key, std::int64_t n, const std::string& whole_key, std::int64_t whole) const {
        if (whole % n != 0) fail(key, key + " " + std::to_string(n) + " does not divide " + whole_key + " " + std::to_string(whole));
    }
    // A config key that would change the graph in a way this loader does not model.
    void reject_if(bool cond, const std::string& key, const std::string& why) const {
        if (cond) fail(key, "not supported: " + why);
    }

private:
    std::int64_t to_positive(const std::string& key, const json& v) const {
        if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) fail(key, "expected a positive integer, got " + v.dump());
        return v.get<std::int64_t>();
    }

    const json& cfg_;
    std::string origin_;
    std::string prefix_;
    std::string context_;
};

using roofline::DocBuilder;  // model/doc_builder.hpp

// transformers' ACT2FN names (activations.py) -> an op; `key` names the config key in messages.
std::string activation(DocBuilder& b, const ConfigReader& r, const std::string& key, const std::string& act, const std::string& name,
                       const std::string& x);
// [batch, seq, heads * dh] -> [batch, heads, seq, dh]: view + transpose(1, 2), both views.
std::string to_heads(DocBuilder& b, const std::string& name, const std::string& x, const json& seq, std::int64_t heads, std::int64_t dh);
// [batch, heads, seq, dh] -> [batch, seq, heads * dh]: transpose(1, 2).contiguous() copies, then a view.
std::string merge_heads(DocBuilder& b, const std::string& name, const std::string& x, const json& seq, std::int64_t width);
// x * cos + rotate_half(x) * sin over the last axis (HF's apply_rotary_pos_emb, one node per eager kernel);
// inputs rope.cos and rope.sin [seq, dh] broadcast over batch and heads.
std::string rotary(DocBuilder& b, const std::string& name, const std::string& x, std::int64_t dh);
// [batch, kv_heads, seq, dh] -> [batch, kv_heads * n_rep, seq, dh]: each KV head broadcast to the n_rep
// query heads of its group (views; x itself when n_rep is 1).
std::string repeat_kv(DocBuilder& b, const std::string& name, const std::string& x, const json& seq, std::int64_t kv_heads,
                      std::int64_t n_rep, std::int64_t dh);
// softmax(q k^T / sqrt(dh) [+ causal mask]) [dropout] v over [batch, heads, seq, dh].
std::string attention(DocBuilder& b, const std::string& p, const std::string& q, const std::string& k, const std::string& v,
                      std::int64_t dh, bool causal, double p_drop);
// The module names of a gated MLP's three projections.
struct GatedMlpNames {
    const char* gate = "gate_proj";
    const char* up = "up_proj";
    const char* down = "down_proj";
};
// down(act(gate(x)) * up(x)) with `p` the module prefix: LlamaMLP, Qwen2MoeMLP, and Mixtral's
// experts (w1, w3, w2). act is the activation's name, read from config key act_key.
std::string gated_mlp(DocBuilder& b, const ConfigReader& r, const std::string& p, const std::string& x, std::int64_t d, std::int64_t inter,
                      const std::string& act_key, const std::string& act, bool bias, const GatedMlpNames& names = {});

// A top-k mixture of gated-MLP experts (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock's routed part).
struct TopKExperts {
    std::int64_t experts = 0, k = 0, inter = 0;
    bool normalize = false;  // routing weights divided by their sum (Mixtral; Qwen2-MoE's norm_topk_prob)
    bool jitter = false;     // router input times the training-time noise input `router_jitter`
    std::string act_key = "hidden_act", act;
    GatedMlpNames names;
    // Expert parallelism (--ep): the rank holds experts / degree of them (none: one rank).
    ExpertParallelSplit* ep = nullptr;
    // Sequence parallelism with expert parallelism (Megatron-core's alltoall token dispatcher): x is
    // the rank's sequence shard of `shard` tokens, whose copies the rank dispatches; the copies it
    // receives are all-gathered over these tensor-parallel ranks for the experts and their partial
    // outputs reduce-scattered back before the combining all-to-all (none: x is the whole sequence).
    TensorParallelSplit* sp = nullptr;
    std::int64_t shard = 0;
    // Routing other than uniform and dropless (--expert-load, --capacity-factor; model/moe_routing.hpp):
    // what each expert runs of a sequence of `seq` tokens (empty rows: uniform), and with --ep the
    // busiest rank, the one the document is.
    Routing routing;
    BusiestRank busiest;
    std::int64_t seq = 0;
};
// The routed experts of x [batch, seq, d] -> [batch, seq, d]; `p` the block prefix ("...mlp."): the
// router p + "gate" and the experts p + "experts.<e>.". How the tokens are routed is modelled in
// hf_build.cpp; m.routing's rows, when given, as the GPT template's (model/moe_routing.hpp routed_experts).
std::string top_k_experts(DocBuilder& b, const ConfigReader& r, const std::string& p, const std::string& x, std::int64_t d,
                          const TopKExperts& m);

// The checkpoint's dtype as a roofline dtype name.
std::string dtype_of(const ConfigReader& r);
// HF's num_labels (len(id2label), "num_labels", or 2).
std::int64_t num_labels(const ConfigReader& r, const json& cfg);

struct Head {
    std::string architecture;
    bool has_head = true;  // false for the bare *Model classes: no loss, inference only
};

// The first entry of "architectures", checked against `supported`; supported.front() without one.
Head read_architecture(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::vector<std::string>& supported,
                       const std::string& bare);
// name, description, dims and dtype policy of the document.
void set_header(DocBuilder& b, const std::string& name, const std::string& description, const std::string& dtype, json dims);
// hidden_states[:, 0] of [batch, seq, d] as a row gather (input cls_index holds rows b * seq).
std::string first_token(DocBuilder& b, const std::string& name, const std::string& x, std::int64_t d);

// The causal LM head and loss on x [batch, seq, d] -> outputs: lm_head (a matmul with the input
// embedding `tied` when not empty, else a linear d -> vocab with a bias when `bias`), then
// cross_entropy against input labels [batch, seq]. Without a head (a bare *Model) the output is x.
void causal_lm_head(DocBuilder& b, const Head& head, const std::string& x, const std::string& tied, std::int64_t d, std::int64_t vocab,
                    bool bias = false);

// One rank's share of a Megatron-LM split of a decoder, as the GPT template's tp / sp / pp / stage
// (model/templates.cpp): what --tp, --sp and --pp ask of a Hugging Face config. model_json.cpp's
// add_parallel_config passes it to the builder as the config object kHfSplitKey (hf_config.hpp), a
// key no transformers config has.
struct Split {
    std::int64_t tp = 1;
    bool sp = false;
    std::int64_t seq = 0;            // with sp: the sequence length (the dims' seq; 0: the model's default)
    std::int64_t pp = 1, stage = 0;  // pipeline stage `stage` (0-based) of pp
    std::int64_t ep = 1;             // expert-parallel ranks (mixtral, qwen2_moe)
    std::int64_t cp = 1;             // context-parallel ranks (`seq` then set: the whole sequence)
    // --expert-load, --capacity-factor, --pad-to-capacity (mixtral, qwen2_moe; `seq` then set).
    ExpertRouting routing;
};
// The config's split (one rank when it has none).
Split read_split(const ConfigReader& r);
// Pipeline stage split.stage of split.pp (Megatron-LM, Narayanan et al. SC21), as the GPT
// template's: an equal share of the layers (pp must divide the config key `key`'s `layers`); the
// first stage also embeds, the last also holds the final norm, the LM head (its own copy of a
// tied embedding) and the loss; a stage after the first receives the [batch, seq, d] activations
// as input "hidden", one before the last ends in a stand-in loss (the mean of its output) so that
// autodiff builds its backward.
struct Stage {
    std::int64_t l0 = 0, l1 = 0, layers = 0;  // the stage's layers [l0, l1), `layers` of them
    bool first = true, last = true;
};
Stage pipeline_stage(const ConfigReader& r, const Split& s, const std::string& key, std::int64_t layers);
// The document's name: `name`, or "name (stage i of p)".
std::string stage_name(const std::string& name, const Split& s);
// A stage after the first: the input "hidden" [batch, seq, d] ([batch, shard, d] under sequence
// parallelism, shard > 0), returned.
std::string stage_input(DocBuilder& b, std::int64_t shard, std::int64_t d);
// A stage before the last ends in the stand-in loss of x; with pp > 1 the document's pipeline
// section, with `tied`, the tied embedding's table on the first stage (the last holds its copy,
// lm_head.weight; empty: untied or no head).
void end_stage(DocBuilder& b, const Split& s, const Stage& st, const std::string& x, const std::string& tied);

// The end of a split decoder (gpt2, opt, falcon, phi, the llama family): on the last stage the LM
// head over head_input() (the final norm's output, all-gathered under --sp) and the loss, the
// head tied to the embedding `tied` (empty: untied) on a single stage, else its own rows, both
// vocabulary-parallel; then end_stage and the tensor_parallel section. Returns the document.
json finish_decoder(DocBuilder& b, TensorParallelSplit& tps, const Split& split, const Stage& stage, const Head& head,
                    const std::function<std::string()>& head_input, const std::string& x, const std::string& tied, std::int64_t d,
                    std::int64_t vocab_rank, bool bias = false);

// The tokens of a sequence of `full_seq` one rank holds under the split's context parallelism
// (--cp; model/doc_builder.hpp ContextParallelSplit): full_seq / cp. InputError naming the flag when
// the sequence does not split into 2 x cp chunks, or, with --sp, when --tp does not divide the
// rank's tokens.
std::int64_t rank_tokens(const Split& s, std::int64_t full_seq);

// One rank of a dense decoder's tensor-, sequence-, context- and pipeline-parallel split (gpt2,
// opt, falcon, phi): the config's split, checked: tp divides the `heads` of config key
// `heads_key`, the sequence (the split's, or `default_seq`) splits over cp ranks (rank_tokens) and,
// with --sp, over tp; pp the layers.
struct DenseSplit {
    Split split;
    std::int64_t tp = 1, seq = 0, heads = 0, vocab = 0;  // the rank's tokens, heads and vocabulary rows
    std::int64_t full_seq = 0;                           // the whole sequence (seq x cp)
    bool sp = false;                                     // sequence parallelism (tp > 1)
    Stage stage;
};
DenseSplit dense_split(const ConfigReader& r, std::int64_t default_seq, const std::string& heads_key, std::int64_t heads,
                       std::int64_t vocab, const std::string& layers_key, std::int64_t layers);

// The routing options' messages (model/moe_routing.hpp) name their flags: --expert-load, --capacity-factor.
RoutingWhere routing_flags();
// `count` (the config key `key`: heads, an MLP's width, ...) split over --tp ranks; fails naming
// --tp and the key when tp does not divide it.
std::int64_t tp_share(const ConfigReader& r, const std::string& key, std::int64_t count, std::int64_t tp, const std::string& what);
// Key/value heads a tensor-parallel rank holds: kv_heads / tp when tp divides them; one when tp is
// a multiple of them, replicated so that each rank holds the head its query heads share (vLLM's
// QKVParallelLinear; model/inference.cpp). The caller checks that one of the two holds.
inline std::int64_t rank_kv_heads(std::int64_t kv_heads, std::int64_t tp) { return kv_heads >= tp ? kv_heads / tp : 1; }
// The rows of a vocabulary-parallel embedding or LM head: the checkpoint's vocabulary split over
// tp ranks, rounded up (model/inference.cpp does the same; Megatron-LM pads the vocabulary to a
// multiple of 128 x tp when it trains from its own tokenizer, the GPT template's convention).
inline std::int64_t rank_vocab(std::int64_t vocab, std::int64_t tp) { return (vocab + tp - 1) / tp; }

// The model builders: a config (model_type already read, passed on) -> a roofline-model/1 document.
json build_gpt2(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name);
json build_llama(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name);
json build_bert(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name);  // bert, roberta
json build_vit(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name);
json build_deberta(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name);  // deberta-v2
json build_opt(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name);
json build_falcon(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name);
json build_phi(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name);
json build_switch_transformers(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name);  // and t5
json build_bart(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name);

// One inference step of an encoder-decoder (switch_transformers, t5, bart) as transformers'
// generate() runs it with use_cache (model/inference.hpp): a prefill (the encoder over `source`
// tokens, every decoder layer's cross-attention K and V computed and cached, the decoder's first
// token) or a decode step (one decoder token attending to `context` cached tokens and itself, and
// to the cached cross-attention K and V of `source` encoder tokens).
struct Seq2SeqStep {
    bool decode = false;
    std::int64_t batch = 1;
    std::int64_t source = 0;   // encoder tokens per sequence (prefill: 0 for the model's default length)
    std::int64_t context = 0;  // decode: decoder tokens already cached
    int tp = 1;                // tensor-parallel ranks: one rank's share (heads, FFN, vocabulary)
    std::string kv_cache;      // a quantized cache's dtype ("": the model's)
    std::string dtype;         // the compute dtype ("": the checkpoint's)
};
// InputError naming the flag for a step the model cannot run (beyond BART's positions, a tp that
// does not divide the heads, ...).
json build_seq2seq_step(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name,
                        const Seq2SeqStep& step);

}  // namespace roofline::hf
