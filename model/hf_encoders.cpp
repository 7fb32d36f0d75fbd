// Encoder models from Hugging Face configs: bert, roberta, deberta-v2 and vit (model/hf_build.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>

#include "model/hf_build.hpp"
#include "ops/error.hpp"

namespace roofline::hf {
namespace {

// One post-LN (bert) or pre-LN (vit) encoder layer with separate query/key/value projections,
// bidirectional attention and a GELU MLP; p is the layer's module prefix.
struct EncoderDims {
    std::int64_t d, heads, inter;
    double eps, hidden_drop, attn_drop;
    bool qkv_bias;
    bool causal = false;  // bert with is_decoder: causal self-attention
    std::string act;
    json seq;  // "seq", or the token count when fixed (vit)
    // Context parallelism (bert, roberta): the rank's keys and values gathered from the group (none: one rank).
    ContextParallelSplit* cp = nullptr;
};

std::string self_attention(DocBuilder& b, const std::string& p, const std::string& x, const EncoderDims& e) {
    const std::int64_t dh = e.d / e.heads;
    const auto gathered = [&](const std::string& n, const std::string& t) { return e.cp != nullptr ? e.cp->gather(n, t) : t; };
    const std::string q = to_heads(b, p + "query", b.linear(p + "query", x, e.d, e.d, e.qkv_bias), e.seq, e.heads, dh);
    const std::string k =
        gathered(p + "key_gather", to_heads(b, p + "key", b.linear(p + "key", x, e.d, e.d, e.qkv_bias), e.seq, e.heads, dh));
    const std::string v =
        gathered(p + "value_gather", to_heads(b, p + "value", b.linear(p + "value", x, e.d, e.d, e.qkv_bias), e.seq, e.heads, dh));
    return merge_heads(b, p + "context", attention(b, p, q, k, v, dh, e.causal, e.attn_drop), e.seq, e.d);
}

// BertLayer: x = LN(x + dropout(dense(attention(x)))); x = LN(x + dropout(dense(act(dense(x))))).
std::string bert_layer(DocBuilder& b, const ConfigReader& r, const std::string& p, std::string x, const EncoderDims& e) {
    std::string o = b.linear(p + "attention.output.dense", self_attention(b, p + "attention.self.", x, e), e.d, e.d, true);
    o = b.dropout(p + "attention.output.dropout", o, e.hidden_drop);
    x = b.layernorm(p + "attention.output.LayerNorm", b.node(p + "attention.output.residual", "add", {o, x}), e.d, e.eps);
    const std::string up = b.linear(p + "intermediate.dense", x, e.d, e.inter, true);
    std::string dn = b.linear(p + "output.dense", activation(b, r, "hidden_act", e.act, p + "intermediate.act", up), e.inter, e.d, true);
    dn = b.dropout(p + "output.dropout", dn, e.hidden_drop);
    return b.layernorm(p + "output.LayerNorm", b.node(p + "output.residual", "add", {dn, x}), e.d, e.eps);
}

// ViTLayer: x = x + dropout(dense(attention(LN(x)))); x = x + dropout(dense(act(dense(LN(x))))).
std::string vit_layer(DocBuilder& b, const ConfigReader& r, const std::string& p, std::string x, const EncoderDims& e) {
    const std::string a = b.layernorm(p + "layernorm_before", x, e.d, e.eps);
    std::string o = b.linear(p + "attention.output.dense", self_attention(b, p + "attention.attention.", a, e), e.d, e.d, true);
    o = b.dropout(p + "attention.output.dropout", o, e.hidden_drop);
    x = b.node(p + "attention.residual", "add", {o, x});
    const std::string m = b.layernorm(p + "layernorm_after", x, e.d, e.eps);
    const std::string up = b.linear(p + "intermediate.dense", m, e.d, e.inter, true);
    std::string dn = b.linear(p + "output.dense", activation(b, r, "hidden_act", e.act, p + "intermediate.act", up), e.inter, e.d, true);
    dn = b.dropout(p + "output.dropout", dn, e.hidden_drop);
    return b.node(p + "output.residual", "add", {dn, x});
}

// Pooler: tanh(dense(first token)).
std::string pooler(DocBuilder& b, const std::string& p, const std::string& first, std::int64_t d) {
    return b.node(p + "activation", "tanh", {b.linear(p + "dense", first, d, d, true)});
}

EncoderDims encoder_dims(const ConfigReader& r, double drop_default, bool qkv_bias) {
    EncoderDims e;
    e.d = r.positive("hidden_size");
    e.heads = r.positive("num_attention_heads");
    e.inter = r.positive("intermediate_size");
    r.require_divides("num_attention_heads", e.heads, "hidden_size", e.d);
    e.eps = r.positive_number_or("layer_norm_eps", 1e-12);
    e.hidden_drop = r.probability_or("hidden_dropout_prob", drop_default);
    e.attn_drop = r.probability_or("attention_probs_dropout_prob", drop_default);
    e.qkv_bias = qkv_bias;
    e.act = r.string_or("hidden_act", "gelu");
    e.seq = "seq";
    return e;
}

}  // namespace

// bert: transformers/models/bert/modeling_bert.py. Defaults from configuration_bert.py:
// type_vocab_size 2, hidden_act "gelu", hidden and attention dropout 0.1, layer_norm_eps 1e-12,
// position_embedding_type "absolute", classifier_dropout None (hidden_dropout_prob), is_decoder
// False (PretrainedConfig).
// BertModel has the pooler; BertForMaskedLM and BertLMHeadModel build BertModel without it
// (add_pooling_layer=False) plus cls.predictions (BertLMPredictionHead: dense, act, LayerNorm,
// decoder tied to the word embeddings, bias); BertForPreTraining keeps the pooler and adds
// cls.seq_relationship (next-sentence logits, 2) to cls.predictions, its loss the sum of both.
// Self-attention is causal exactly when the config says is_decoder: BertModel builds the causal
// mask from config.is_decoder, whatever the head, and BertLMHeadModel without it (no is_decoder
// key, as the NeuSight bert_large config) only logs a warning and attends bidirectionally, so
// that is what is built. The LM heads' loss is cross_entropy over every position (BertLMHeadModel
// shifts labels by one: one position fewer, not modelled, as for gpt2).
// The attention mask of padded batches is not modelled (every token attends to every token).
//
// roberta: transformers/models/roberta/modeling_roberta.py, BERT's encoder under the prefix
// "roberta." with these differences. Defaults from configuration_roberta.py as BERT's, and
// pad_token_id 1. Positions are looked up at cumsum(input_ids != pad) + pad (integer ops not
// modelled: position_ids [batch, seq] holds the rows), so max_position_embeddings - pad_token_id - 1
// tokens fit: the default seq (512 for roberta-base's 514 rows). RobertaForMaskedLM and
// RobertaForCausalLM have lm_head (RobertaLMHead: dense, gelu (erf, whatever hidden_act says),
// layer_norm, decoder tied to the word embeddings, bias) and no pooler;
// RobertaForSequenceClassification has no pooler but classifier (RobertaClassificationHead: the
// first token, dropout, dense, tanh, dropout, out_proj); RobertaModel has the pooler.
//
// Context parallelism (--cp; model/doc_builder.hpp ContextParallelSplit), as the decoders': a rank
// holds seq / cp tokens of every sequence (two chunks, as Megatron-core cuts them; bidirectional
// attention needs no balancing but takes the same cut), and each layer's self-attention gathers
// the keys and values of the whole sequence. The document is rank 0's, which holds the first
// token: the pooler, the next-sentence and the classification heads run there.
json build_bert(const ConfigReader& r, const json& cfg, const std::string& model_type, const std::string& name) {
    const bool roberta = model_type == "roberta";
    const std::string cls = roberta ? "Roberta" : "Bert";
    const Head head =
        roberta
            ? read_architecture(r, cfg, "roberta",
                                {"RobertaForMaskedLM", "RobertaModel", "RobertaForSequenceClassification", "RobertaForCausalLM"},
                                "RobertaModel")
            : read_architecture(r, cfg, "bert",
                                {"BertForMaskedLM", "BertModel", "BertForSequenceClassification", "BertLMHeadModel", "BertForPreTraining"},
                                "BertModel");
    const std::int64_t vocab = r.positive("vocab_size"), layers = r.positive("num_hidden_layers");
    const std::int64_t positions = r.positive("max_position_embeddings"), types = r.positive_or("type_vocab_size", 2);
    const std::int64_t pad = roberta ? r.non_negative_or("pad_token_id", 1) : 0;
    if (roberta && positions <= pad + 1) {
        r.fail("max_position_embeddings", "max_position_embeddings " + std::to_string(positions) +
                                              " leaves no position after pad_token_id " + std::to_string(pad) + " + 1");
    }
    EncoderDims e = encoder_dims(r, 0.1, true);
    const std::string pos_type = r.string_or("position_embedding_type", "absolute");
    r.reject_if(pos_type != "absolute", "position_embedding_type", "'" + pos_type + "' (only \"absolute\" is modelled)");
    e.causal = r.bool_or("is_decoder", false);
    r.reject_if(r.bool_or("add_cross_attention", false), "add_cross_attention", "cross-attention layers");
    const bool lm =
        head.architecture == cls + "ForMaskedLM" || head.architecture == "BertLMHeadModel" || head.architecture == "RobertaForCausalLM";
    const bool pretraining = head.architecture == "BertForPreTraining";
    const bool classify = head.architecture == cls + "ForSequenceClassification";
    const bool tied = r.bool_or("tie_word_embeddings", true);
    const std::int64_t labels = classify ? num_labels(r, cfg) : 0;
    const double classifier_drop = r.probability_or("classifier_dropout", e.hidden_drop);
    const std::string base = roberta ? "roberta." : "bert.";
    const Split split = read_split(r);
    const std::int64_t full_seq = split.seq > 0 ? split.seq : roberta ? positions - pad - 1 : positions;
    const std::int64_t seq = rank_tokens(split, full_seq);

    DocBuilder b;
    ContextParallelSplit cps(b, split.cp);
    e.cp = &cps;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(e.d) + ", " +
                   std::to_string(e.heads) + " heads, vocab " + std::to_string(vocab) +
                   (e.causal ? "; causal self-attention (is_decoder)" : "; bidirectional self-attention") +
                   "; no padding mask; dropout as in training",
               dtype_of(r), {{"batch", 1}, {"seq", seq}});
    b.input("input_ids", {"batch", "seq"}, "int64");
    b.input("token_type_ids", {"batch", "seq"}, "int64");
    b.input("position_ids", roberta ? json{"batch", "seq"} : json{"seq"}, "int64");
    const std::string pe = base + "embeddings.";
    const std::string words = b.param(pe + "word_embeddings.weight", {vocab, e.d});
    b.node(pe + "word_embeddings", "embedding", {words, "input_ids"});
    b.node(pe + "token_type_embeddings", "embedding", {b.param(pe + "token_type_embeddings.weight", {types, e.d}), "token_type_ids"});
    b.node(pe + "position_embeddings", "embedding", {b.param(pe + "position_embeddings.weight", {positions, e.d}), "position_ids"});
    b.node(pe + "add_token_type", "add", {pe + "word_embeddings", pe + "token_type_embeddings"});
    b.node(pe + "add_position", "add", {pe + "add_token_type", pe + "position_embeddings"});
    std::string x = b.dropout(pe + "dropout", b.layernorm(pe + "LayerNorm", pe + "add_position", e.d, e.eps), e.hidden_drop);
    for (std::int64_t l = 0; l < layers; ++l) x = bert_layer(b, r, base + "encoder.layer." + std::to_string(l) + ".", x, e);
    cps.write(full_seq);
    // The MLM head: BertLMPredictionHead (cls.predictions) or RobertaLMHead (lm_head).
    const auto predictions = [&]() {
        const std::string p = roberta ? "lm_head." : "cls.predictions.";
        const std::string t = roberta ? p : p + "transform.";
        const std::string h = b.linear(t + "dense", x, e.d, e.d, true);
        const std::string a =
            roberta ? b.node(t + "gelu", "gelu", {h}, {{"approximate", "erf"}}) : activation(b, r, "hidden_act", e.act, t + "act", h);
        const std::string n = b.layernorm(t + (roberta ? "layer_norm" : "LayerNorm"), a, e.d, e.eps);
        const std::string decoder = tied ? words : b.param(p + "decoder.weight", {vocab, e.d});
        b.node(p + "decoder", "matmul", {n, decoder}, {{"transpose_b", true}});
        return b.node(p + "logits", "add", {p + "decoder", b.param(p + "bias", {vocab})});
    };
    if (lm) {
        b.input("labels", {"batch", "seq"}, "int64");
        b.node("loss", "cross_entropy", {predictions(), "labels"});
        b.doc()["outputs"] = {"loss"};
        return b.take();
    }
    if (pretraining) {
        b.input("labels", {"batch", "seq"}, "int64");
        b.input("next_sentence_label", {"batch"}, "int64");
        const std::string mlm = b.node("masked_lm_loss", "cross_entropy", {predictions(), "labels"});
        const std::string pooled = pooler(b, "bert.pooler.", first_token(b, "bert.pooler.first_token", x, e.d), e.d);
        const std::string nsp = b.linear("cls.seq_relationship", pooled, e.d, 2, true);
        b.node("next_sentence_loss", "cross_entropy", {nsp, "next_sentence_label"});
        b.node("loss", "add", {mlm, "next_sentence_loss"});
        b.doc()["outputs"] = {"loss"};
        return b.take();
    }
    std::string logits;
    if (roberta && classify) {
        // RobertaClassificationHead on features[:, 0, :]
        const std::string first = first_token(b, "classifier.first_token", x, e.d);
        const std::string h = b.linear("classifier.dense", b.dropout("classifier.dropout_in", first, classifier_drop), e.d, e.d, true);
        const std::string t = b.node("classifier.tanh", "tanh", {h});
        logits = b.linear("classifier.out_proj", b.dropout("classifier.dropout", t, classifier_drop), e.d, labels, true);
    } else {
        const std::string pooled = pooler(b, base + "pooler.", first_token(b, base + "pooler.first_token", x, e.d), e.d);
        if (!head.has_head) {
            b.doc()["outputs"] = {x, pooled};
            return b.take();
        }
        logits = b.linear("classifier", b.dropout("dropout", pooled, classifier_drop), e.d, labels, true);
    }
    b.input("labels", {"batch"}, "int64");
    b.node("loss", "cross_entropy", {logits, "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take();
}

// deberta-v2 (DeBERTa v2 and v3): transformers/models/deberta_v2/modeling_deberta_v2.py (4.40).
// Defaults from configuration_deberta_v2.py: relative_attention False, max_relative_positions -1
// (max_position_embeddings), position_buckets -1, pos_att_type none, position_biased_input True,
// type_vocab_size 0, embedding_size hidden_size, share_att_key False, norm_rel_ebd "none",
// hidden_act "gelu", layer_norm_eps 1e-7, dropouts 0.1, pooler_hidden_size hidden_size,
// pooler_hidden_act "gelu", pooler_dropout 0.
// Embeddings: word (+ absolute positions when position_biased_input, + token types when
// type_vocab_size > 0), embed_proj when embedding_size differs, LayerNorm, dropout.
// Disentangled self-attention (He et al. 2021, "DeBERTa", eq. 2-4): scores = Q K^T / sqrt(dh x f)
// plus, with relative_attention, content-to-position c2p = Q Kr^T and position-to-content p2c = K
// Qr^T (f = 1 + one for each), where Kr and Qr project the encoder's 2 x span relative-position
// embeddings (LayerNorm-ed once when norm_rel_ebd has layer_norm, dropout in every layer) with
// key_proj / query_proj (share_att_key) or their own pos_key_proj / pos_query_proj. Each is a
// batched GEMM against the 2 x span positions, then torch.gather of the [seq, seq] entries at each
// pair's relative bucket: the gather is modelled as a copy of seq of the 2 x span columns (the
// same bytes; the integer bucket arithmetic is not modelled, as T5's) and p2c's transpose as a
// view. The padding mask (XSoftmax) is not modelled (every token attends to every token).
// DebertaV2ForMaskedLM: cls.predictions (transform dense hidden -> embedding_size, act, LayerNorm;
// decoder tied to the word embeddings, bias); DebertaV2Model has no pooler;
// DebertaV2ForSequenceClassification: ContextPooler (first token, dropout, dense, act), dropout,
// classifier. Not modelled: ConvLayer (conv_kernel_size > 0, DeBERTa-v2 xlarge and xxlarge).
json build_deberta(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "deberta-v2",
                                        {"DebertaV2ForMaskedLM", "DebertaV2Model", "DebertaV2ForSequenceClassification"}, "DebertaV2Model");
    const auto signed_or = [&](const std::string& key, std::int64_t dflt) {
        if (!r.has(key)) return dflt;
        const json& v = cfg.at(key);
        if (!v.is_number_integer()) r.fail(key, "expected an integer, got " + v.dump());
        return v.get<std::int64_t>();
    };
    const std::int64_t vocab = r.positive("vocab_size"), layers = r.positive("num_hidden_layers");
    const std::int64_t positions = r.positive("max_position_embeddings"), types = r.non_negative_or("type_vocab_size", 0);
    EncoderDims e = encoder_dims(r, 0.1, true);
    e.eps = r.positive_number_or("layer_norm_eps", 1e-7);
    const std::int64_t emb = r.positive_or("embedding_size", e.d), dh = e.d / e.heads;
    const bool biased_input = r.bool_or("position_biased_input", true);
    const bool relative = r.bool_or("relative_attention", false);
    std::int64_t span = signed_or("max_relative_positions", -1);
    if (span < 1) span = positions;
    if (signed_or("position_buckets", -1) > 0) span = signed_or("position_buckets", -1);
    std::vector<std::string> pos_att;
    if (r.has("pos_att_type")) {
        const json& v = cfg.at("pos_att_type");
        std::string text;
        if (v.is_string()) {
            text = v.get<std::string>();
        } else if (v.is_array()) {
            for (const json& x : v) {
                if (!x.is_string()) r.fail("pos_att_type", "expected \"c2p|p2c\" or a list of \"c2p\" and \"p2c\", got " + v.dump());
                text += (text.empty() ? "" : "|") + x.get<std::string>();
            }
        } else {
            r.fail("pos_att_type", "expected \"c2p|p2c\" or a list of \"c2p\" and \"p2c\", got " + v.dump());
        }
        for (std::size_t at = 0; at <= text.size();) {
            const std::size_t bar = std::min(text.find('|', at), text.size());
            std::string t = text.substr(at, bar - at);
            t.erase(0, t.find_first_not_of(' '));
            t.erase(t.find_last_not_of(' ') + 1);
            for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (t != "c2p" && t != "p2c" && t != "none" && !t.empty())
                r.fail("pos_att_type", "unknown attention type '" + t + "' (expected c2p, p2c)");
            if (t == "c2p" || t == "p2c") pos_att.push_back(t);
            at = bar + 1;
        }
    }
    const bool c2p = relative && std::find(pos_att.begin(), pos_att.end(), "c2p") != pos_att.end();
    const bool p2c = relative && std::find(pos_att.begin(), pos_att.end(), "p2c") != pos_att.end();
    const bool share = r.bool_or("share_att_key", false);
    const std::string norm_rel = r.string_or("norm_rel_ebd", "none");
    r.reject_if(r.has("conv_kernel_size") && signed_or("conv_kernel_size", 0) > 0, "conv_kernel_size",
                "the convolution after the first layer (ConvLayer of DeBERTa-v2 xlarge and xxlarge)");
    r.reject_if(r.has("attention_head_size") && signed_or("attention_head_size", dh) != dh, "attention_head_size",
                "a head size other than hidden_size / num_attention_heads");
    const bool lm = head.architecture == "DebertaV2ForMaskedLM";
    const bool classify = head.architecture == "DebertaV2ForSequenceClassification";
    const bool tied = r.bool_or("tie_word_embeddings", true);
    const std::int64_t labels = classify ? num_labels(r, cfg) : 0;

    DocBuilder b;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(e.d) + ", " +
                   std::to_string(e.heads) + " heads, vocab " + std::to_string(vocab) +
                   (relative ? "; disentangled attention over " + std::to_string(2 * span) + " relative positions" : "") +
                   "; no padding mask; dropout as in training",
               dtype_of(r), {{"batch", 1}, {"seq", positions}});
    b.input("input_ids", {"batch", "seq"}, "int64");
    if (types > 0) b.input("token_type_ids", {"batch", "seq"}, "int64");
    if (biased_input) b.input("position_ids", {"seq"}, "int64");
    const std::string pe = "deberta.embeddings.";
    const std::string words = b.param(pe + "word_embeddings.weight", {vocab, emb});
    std::string x = b.node(pe + "word_embeddings", "embedding", {words, "input_ids"});
    if (biased_input) {
        b.node(pe + "position_embeddings", "embedding", {b.param(pe + "position_embeddings.weight", {positions, emb}), "position_ids"});
        x = b.node(pe + "add_position", "add", {x, pe + "position_embeddings"});
    }
    if (types > 0) {
        b.node(pe + "token_type_embeddings", "embedding", {b.param(pe + "token_type_embeddings.weight", {types, emb}), "token_type_ids"});
        x = b.node(pe + "add_token_type", "add", {x, pe + "token_type_embeddings"});
    }
    if (emb != e.d) x = b.linear(pe + "embed_proj", x, emb, e.d, false);
    x = b.dropout(pe + "dropout", b.layernorm(pe + "LayerNorm", x, e.d, e.eps), e.hidden_drop);

    // The relative-position embeddings, LayerNorm-ed once for every layer.
    std::string rel;
    if (relative) {
        rel = b.param("deberta.encoder.rel_embeddings.weight", {2 * span, e.d});
        if (norm_rel.find("layer_norm") != std::string::npos) rel = b.layernorm("deberta.encoder.LayerNorm", rel, e.d, e.eps);
    }
    const double factor = 1.0 + (c2p ? 1 : 0) + (p2c ? 1 : 0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh) * factor);
    // torch.gather of the seq x seq relative entries out of seq x 2 span: a copy of seq columns
    // (concatenated copies first when 2 span is shorter than the longest sequence).
    const auto gather = [&](const std::string& node, const std::string& in) {
        std::string src = in;
        const std::int64_t copies = (positions + 2 * span - 1) / (2 * span);
        if (copies > 1)
            src = b.node(node + ".cover", "concat", json(std::vector<std::string>(static_cast<std::size_t>(copies), in)), {{"axis", -1}});
        return b.node(node, "slice", {src}, {{"starts", {0}}, {"ends", {"seq"}}, {"axes", {-1}}});
    };
    // [2 span, d] positions through a projection -> [batch, heads, 2 span, dh] (HF's .repeat over the batch: a view here).
    const auto positions_to_heads = [&](const std::string& node, const std::string& proj, const std::string& r_in) {
        b.node(node, "linear", {r_in, proj + ".weight", proj + ".bias"});
        b.node(node + ".view", "reshape", {node}, {{"shape", {1, 2 * span, e.heads, dh}}});
        b.node(node + ".heads", "permute", {node + ".view"}, {{"perm", {0, 2, 1, 3}}});
        return b.node(node + ".repeat", "expand", {node + ".heads"}, {{"shape", {"batch", e.heads, 2 * span, dh}}});
    };
    for (std::int64_t l = 0; l < layers; ++l) {
        const std::string p = "deberta.encoder.layer." + std::to_string(l) + ".";
        const std::string a = p + "attention.self.";
        const std::string q = to_heads(b, a + "query", b.linear(a + "query_proj", x, e.d, e.d, true), "seq", e.heads, dh);
        const std::string k = to_heads(b, a + "key", b.linear(a + "key_proj", x, e.d, e.d, true), "seq", e.heads, dh);
        const std::string v = to_heads(b, a + "value", b.linear(a + "value_proj", x, e.d, e.d, true), "seq", e.heads, dh);
        // HF divides K^T by the scale before the product
        b.node(a + "key_scaled", "scale", {k}, {{"factor", scale}});
        std::string scores = b.node(a + "scores", "matmul", {q, a + "key_scaled"}, {{"transpose_b", true}});
        if (c2p || p2c) {
            const std::string r_l = b.dropout(a + "pos_dropout", rel, e.hidden_drop);
            std::string bias;
            if (c2p) {
                const std::string kr = positions_to_heads(a + "pos_key", share ? a + "key_proj" : a + "pos_key_proj", r_l);
                if (!share) b.param(a + "pos_key_proj.weight", {e.d, e.d}), b.param(a + "pos_key_proj.bias", {e.d});
                b.node(a + "c2p", "matmul", {q, kr}, {{"transpose_b", true}});
                bias = b.node(a + "c2p.scaled", "scale", {gather(a + "c2p.gather", a + "c2p")}, {{"factor", scale}});
            }
            if (p2c) {
                const std::string qr = positions_to_heads(a + "pos_query", share ? a + "query_proj" : a + "pos_query_proj", r_l);
                if (!share) b.param(a + "pos_query_proj.weight", {e.d, e.d}), b.param(a + "pos_query_proj.bias", {e.d});
                b.node(a + "p2c", "matmul", {k, qr}, {{"transpose_b", true}});
                b.node(a + "p2c.transpose", "permute", {gather(a + "p2c.gather", a + "p2c")}, {{"perm", {0, 1, 3, 2}}});
                const std::string t = b.node(a + "p2c.scaled", "scale", {a + "p2c.transpose"}, {{"factor", scale}});
                bias = bias.empty() ? t : b.node(a + "rel_att", "add", {bias, t});
            }
            scores = b.node(a + "add_rel_att", "add", {scores, bias});
        }
        std::string probs = b.node(a + "softmax", "softmax", {scores}, {{"axis", -1}});
        probs = b.dropout(a + "dropout", probs, e.attn_drop);
        const std::string ctx = merge_heads(b, a + "context", b.node(a + "context", "matmul", {probs, v}), "seq", e.d);
        std::string o = b.linear(p + "attention.output.dense", ctx, e.d, e.d, true);
        o = b.dropout(p + "attention.output.dropout", o, e.hidden_drop);
        x = b.layernorm(p + "attention.output.LayerNorm", b.node(p + "attention.output.residual", "add", {o, x}), e.d, e.eps);
        const std::string up = b.linear(p + "intermediate.dense", x, e.d, e.inter, true);
        std::string dn =
            b.linear(p + "output.dense", activation(b, r, "hidden_act", e.act, p + "intermediate.act", up), e.inter, e.d, true);
        dn = b.dropout(p + "output.dropout", dn, e.hidden_drop);
        x = b.layernorm(p + "output.LayerNorm", b.node(p + "output.residual", "add", {dn, x}), e.d, e.eps);
    }
    if (lm) {
        const std::string t = "cls.predictions.transform.";
        const std::string h = b.linear(t + "dense", x, e.d, emb, true);
        const std::string n = b.layernorm(t + "LayerNorm", activation(b, r, "hidden_act", e.act, t + "act", h), emb, e.eps);
        const std::string decoder = tied ? words : b.param("cls.predictions.decoder.weight", {vocab, emb});
        b.node("cls.predictions.decoder", "matmul", {n, decoder}, {{"transpose_b", true}});
        b.node("cls.predictions.logits", "add", {"cls.predictions.decoder", b.param("cls.predictions.bias", {vocab})});
        b.input("labels", {"batch", "seq"}, "int64");
        b.node("loss", "cross_entropy", {"cls.predictions.logits", "labels"});
        b.doc()["outputs"] = {"loss"};
        return b.take();
    }
    if (!classify) {
        b.doc()["outputs"] = {x};
        return b.take();
    }
    const std::int64_t pooled_d = r.positive_or("pooler_hidden_size", e.d);
    const std::string first =
        b.dropout("pooler.dropout", first_token(b, "pooler.first_token", x, e.d), r.probability_or("pooler_dropout", 0.0));
    const std::string pooled = activation(b, r, "pooler_hidden_act", r.string_or("pooler_hidden_act", "gelu"), "pooler.act",
                                          b.linear("pooler.dense", first, e.d, pooled_d, true));
    const double cls_drop = r.probability_or("cls_dropout", e.hidden_drop);
    const std::string logits = b.linear("classifier", b.dropout("dropout", pooled, cls_drop), pooled_d, labels, true);
    b.input("labels", {"batch"}, "int64");
    b.node("loss", "cross_entropy", {logits, "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take();
}

// vit: transformers/models/vit/modeling_vit.py. Defaults from configuration_vit.py: num_channels 3,
// qkv_bias True, hidden_act "gelu", hidden and attention dropout 0.0, layer_norm_eps 1e-12.
// ViTModel has the pooler; ViTForImageClassification builds ViTModel without it
// (add_pooling_layer=False) and classifies the final layernorm's class token.
//
// Context parallelism (--cp; model/doc_builder.hpp ContextParallelSplit), as bert's: the patch
// tokens and the class token are the sequence. Megatron-core and TransformerEngine cut it into
// 2 x cp chunks (two a rank), so its length must be a multiple of 2 x cp; a ViT's
// (image_size / patch_size)^2 + 1 tokens (197 for vit-b16 at 224px, a prime) rarely is, so the
// sequence is padded with zero tokens up to the next multiple (as a user pads it for
// TransformerEngine; the padding keys are masked out of attention, a mask flash attention applies
// without another kernel and the graph does not spell out), and they cost what real tokens do. A
// rank holds padded / cp tokens and every layer gathers the keys and values of all padded ones.
// Each rank embeds the whole image and keeps its tokens (the patch embedding is under 1% of the
// forward: one [patches, channels x patch^2] x [.., hidden] GEMM against 12 layers of 12 hidden^2
// a token for vit-b16); the document is rank 0's, which holds the class token the classifier and
// the pooler read. --seq, if given, must be the token count.
json build_vit(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "vit", {"ViTForImageClassification", "ViTModel"}, "ViTModel");
    const std::int64_t layers = r.positive("num_hidden_layers"), image = r.positive("image_size"), patch = r.positive("patch_size");
    const std::int64_t channels = r.positive_or("num_channels", 3);
    if (patch > image) r.fail("patch_size", "patch_size " + std::to_string(patch) + " exceeds image_size " + std::to_string(image));
    EncoderDims e = encoder_dims(r, 0.0, r.bool_or("qkv_bias", true));
    const std::int64_t grid = image / patch, patches = grid * grid, tokens = patches + 1;
    const std::int64_t labels = head.has_head ? num_labels(r, cfg) : 0;
    const Split split = read_split(r);
    if (split.cp > 1 && split.seq > 0 && split.seq != tokens)
        throw InputError("--seq " + std::to_string(split.seq) + ": a ViT's sequence is its " + std::to_string(tokens) +
                         " tokens ((image_size / patch_size)^2 patches and the class token)");
    const std::int64_t chunks = 2 * split.cp;
    const std::int64_t padded = split.cp > 1 ? (tokens + chunks - 1) / chunks * chunks : tokens;
    const std::int64_t rank_seq = padded / split.cp;
    e.seq = rank_seq;

    DocBuilder b;
    ContextParallelSplit cps(b, split.cp);
    if (split.cp > 1) e.cp = &cps;
    set_header(
        b, name,
        "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(e.d) + ", " +
            std::to_string(e.heads) + " heads, " + std::to_string(image) + "px images in " + std::to_string(patch) + "px patches (" +
            std::to_string(tokens) + " tokens" +
            (padded > tokens ? ", padded to " + std::to_string(padded) + " for " + std::to_string(split.cp) + "-way context parallelism"
                             : "") +
            ")",
        dtype_of(r), {{"batch", 1}});
    b.input("pixel_values", {"batch", channels, image, image});
    const std::string pe = "vit.embeddings.";
    const std::string proj = pe + "patch_embeddings.projection";
    b.node(proj, "conv2d", {"pixel_values", b.param(proj + ".weight", {e.d, channels, patch, patch}), b.param(proj + ".bias", {e.d})},
           {{"stride", {patch, patch}}});
    b.node(pe + "patch_embeddings.flatten", "reshape", {proj}, {{"shape", {"batch", e.d, patches}}});
    b.node(pe + "patch_embeddings.transpose", "permute", {pe + "patch_embeddings.flatten"}, {{"perm", {0, 2, 1}}});
    b.node(pe + "cls_tokens", "expand", {b.param(pe + "cls_token", {1, 1, e.d})}, {{"shape", {"batch", 1, e.d}}});
    b.node(pe + "concat", "concat", {pe + "cls_tokens", pe + "patch_embeddings.transpose"}, {{"axis", 1}});
    std::string x = b.node(pe + "add_position", "add", {pe + "concat", b.param(pe + "position_embeddings", {1, tokens, e.d})});
    if (split.cp > 1) {
        // The zero tokens padding the sequence to 2 x cp chunks, then the rank's share (rank 0's
        // chunks 0 and 2 cp - 1: token-wise ops and bidirectional attention do the same work for
        // any padded / cp tokens, so the graph takes the first, a view).
        if (padded > tokens) {
            b.input("cp_padding", {"batch", padded - tokens, e.d});
            x = b.node(pe + "cp_pad", "concat", {x, "cp_padding"}, {{"axis", 1}});
        }
        b.node(pe + "cp_share", "split", {x}, {{"axis", 1}, {"sizes", {rank_seq, padded - rank_seq}}});
        x = pe + "cp_share:0";
    }
    x = b.dropout(pe + "dropout", x, e.hidden_drop);
    for (std::int64_t l = 0; l < layers; ++l) x = vit_layer(b, r, "vit.encoder.layer." + std::to_string(l) + ".", x, e);
    cps.write(padded);
    x = b.layernorm("vit.layernorm", x, e.d, e.eps);
    // sequence_output[:, 0, :]: the class token (a view).
    b.node("vit.first_token", "split", {x}, {{"axis", 1}, {"sizes", {1, rank_seq - 1}}});
    const std::string first = b.node("vit.class_token", "reshape", {"vit.first_token:0"}, {{"shape", {"batch", e.d}}});
    if (!head.has_head) {
        b.doc()["outputs"] = {x, pooler(b, "vit.pooler.", first, e.d)};
        return b.take();
    }
    b.input("labels", {"batch"}, "int64");
    b.node("loss", "cross_entropy", {b.linear("classifier", first, e.d, labels, true), "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.take();
}

}  // namespace roofline::hf
