// Encoder models from Hugging Face configs: bert, roberta and vit (model/hf_build.hpp).
#include "model/hf_build.hpp"

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
};

std::string self_attention(DocBuilder& b, const std::string& p, const std::string& x, const EncoderDims& e) {
    const std::int64_t dh = e.d / e.heads;
    const std::string q = to_heads(b, p + "query", b.linear(p + "query", x, e.d, e.d, e.qkv_bias), e.seq, e.heads, dh);
    const std::string k = to_heads(b, p + "key", b.linear(p + "key", x, e.d, e.d, e.qkv_bias), e.seq, e.heads, dh);
    const std::string v = to_heads(b, p + "value", b.linear(p + "value", x, e.d, e.d, e.qkv_bias), e.seq, e.heads, dh);
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

    DocBuilder b;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(e.d) + ", " +
                   std::to_string(e.heads) + " heads, vocab " + std::to_string(vocab) +
                   (e.causal ? "; causal self-attention (is_decoder)" : "; bidirectional self-attention") +
                   "; no padding mask; dropout as in training",
               dtype_of(r), {{"batch", 1}, {"seq", roberta ? positions - pad - 1 : positions}});
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
        return b.doc();
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
        return b.doc();
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
            return b.doc();
        }
        logits = b.linear("classifier", b.dropout("dropout", pooled, classifier_drop), e.d, labels, true);
    }
    b.input("labels", {"batch"}, "int64");
    b.node("loss", "cross_entropy", {logits, "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.doc();
}

// vit: transformers/models/vit/modeling_vit.py. Defaults from configuration_vit.py: num_channels 3,
// qkv_bias True, hidden_act "gelu", hidden and attention dropout 0.0, layer_norm_eps 1e-12.
// ViTModel has the pooler; ViTForImageClassification builds ViTModel without it
// (add_pooling_layer=False) and classifies the final layernorm's class token.
json build_vit(const ConfigReader& r, const json& cfg, const std::string& /*model_type*/, const std::string& name) {
    const Head head = read_architecture(r, cfg, "vit", {"ViTForImageClassification", "ViTModel"}, "ViTModel");
    const std::int64_t layers = r.positive("num_hidden_layers"), image = r.positive("image_size"), patch = r.positive("patch_size");
    const std::int64_t channels = r.positive_or("num_channels", 3);
    if (patch > image) r.fail("patch_size", "patch_size " + std::to_string(patch) + " exceeds image_size " + std::to_string(image));
    EncoderDims e = encoder_dims(r, 0.0, r.bool_or("qkv_bias", true));
    const std::int64_t grid = image / patch, patches = grid * grid, tokens = patches + 1;
    e.seq = tokens;
    const std::int64_t labels = head.has_head ? num_labels(r, cfg) : 0;

    DocBuilder b;
    set_header(b, name,
               "Hugging Face " + head.architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(e.d) + ", " +
                   std::to_string(e.heads) + " heads, " + std::to_string(image) + "px images in " + std::to_string(patch) + "px patches (" +
                   std::to_string(tokens) + " tokens)",
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
    b.node(pe + "add_position", "add", {pe + "concat", b.param(pe + "position_embeddings", {1, tokens, e.d})});
    std::string x = b.dropout(pe + "dropout", pe + "add_position", e.hidden_drop);
    for (std::int64_t l = 0; l < layers; ++l) x = vit_layer(b, r, "vit.encoder.layer." + std::to_string(l) + ".", x, e);
    x = b.layernorm("vit.layernorm", x, e.d, e.eps);
    // sequence_output[:, 0, :]: the class token (a view).
    b.node("vit.first_token", "split", {x}, {{"axis", 1}, {"sizes", {1, patches}}});
    const std::string first = b.node("vit.class_token", "reshape", {"vit.first_token:0"}, {{"shape", {"batch", e.d}}});
    if (!head.has_head) {
        b.doc()["outputs"] = {x, pooler(b, "vit.pooler.", first, e.d)};
        return b.doc();
    }
    b.input("labels", {"batch"}, "int64");
    b.node("loss", "cross_entropy", {b.linear("classifier", first, e.d, labels, true), "labels"});
    b.doc()["outputs"] = {"loss"};
    return b.doc();
}

}  // namespace roofline::hf
