#include "model/hf_config.hpp"

#include <filesystem>
#include <map>
#include <set>

#include "model/hf_build.hpp"
#include "model/templates.hpp"
#include "ops/error.hpp"

namespace roofline {

using hf::ConfigReader;
using nlohmann::json;

namespace {

// The document's name: "_name_or_path" when the config has one, else the folder of a
// ".../<model>/config.json", else the file's stem.
std::string model_name(const json& cfg, const std::string& origin) {
    auto it = cfg.find("_name_or_path");
    if (it != cfg.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
    const std::filesystem::path p(origin);
    if (p.filename() == "config.json" && p.has_parent_path() && !p.parent_path().filename().empty()) {
        return p.parent_path().filename().string();
    }
    return p.stem().string();
}

// Built-in presets: the architecture keys of published config.json files (the copies under
// tests/data/hf/ are checked against these by tests/unit/hf_config_test.cpp).
const std::map<std::string, json>& presets() {
    static const std::map<std::string, json> p = [] {
        std::map<std::string, json> m;
        // huggingface.co/meta-llama/Llama-2-7b-hf, config.json
        m["llama-2-7b"] = {{"architectures", {"LlamaForCausalLM"}},
                           {"model_type", "llama"},
                           {"hidden_size", 4096},
                           {"intermediate_size", 11008},
                           {"max_position_embeddings", 4096},
                           {"num_attention_heads", 32},
                           {"num_hidden_layers", 32},
                           {"num_key_value_heads", 32},
                           {"rms_norm_eps", 1e-5},
                           {"tie_word_embeddings", false},
                           {"torch_dtype", "float16"},
                           {"vocab_size", 32000}};
        // huggingface.co/meta-llama/Meta-Llama-3-8B, config.json
        m["llama-3-8b"] = {{"architectures", {"LlamaForCausalLM"}},
                           {"model_type", "llama"},
                           {"hidden_size", 4096},
                           {"intermediate_size", 14336},
                           {"max_position_embeddings", 8192},
                           {"num_attention_heads", 32},
                           {"num_hidden_layers", 32},
                           {"num_key_value_heads", 8},
                           {"rms_norm_eps", 1e-5},
                           {"tie_word_embeddings", false},
                           {"torch_dtype", "bfloat16"},
                           {"vocab_size", 128256}};
        // huggingface.co/mistralai/Mistral-7B-v0.1, config.json
        m["mistral-7b"] = {{"architectures", {"MistralForCausalLM"}},
                           {"model_type", "mistral"},
                           {"hidden_size", 4096},
                           {"intermediate_size", 14336},
                           {"max_position_embeddings", 32768},
                           {"num_attention_heads", 32},
                           {"num_hidden_layers", 32},
                           {"num_key_value_heads", 8},
                           {"rms_norm_eps", 1e-5},
                           {"sliding_window", 4096},
                           {"tie_word_embeddings", false},
                           {"torch_dtype", "bfloat16"},
                           {"vocab_size", 32000}};
        // huggingface.co/mistralai/Mixtral-8x7B-v0.1, config.json
        m["mixtral-8x7b"] = {{"architectures", {"MixtralForCausalLM"}},
                             {"model_type", "mixtral"},
                             {"hidden_size", 4096},
                             {"intermediate_size", 14336},
                             {"max_position_embeddings", 32768},
                             {"num_attention_heads", 32},
                             {"num_experts_per_tok", 2},
                             {"num_hidden_layers", 32},
                             {"num_key_value_heads", 8},
                             {"num_local_experts", 8},
                             {"rms_norm_eps", 1e-5},
                             {"tie_word_embeddings", false},
                             {"torch_dtype", "bfloat16"},
                             {"vocab_size", 32000}};
        // huggingface.co/Qwen/Qwen1.5-MoE-A2.7B-Chat, config.json (tests/data/hf/README.md)
        m["qwen1.5-moe-a2.7b"] = {{"architectures", {"Qwen2MoeForCausalLM"}},
                                  {"model_type", "qwen2_moe"},
                                  {"decoder_sparse_step", 1},
                                  {"hidden_size", 2048},
                                  {"intermediate_size", 5632},
                                  {"max_position_embeddings", 32768},
                                  {"moe_intermediate_size", 1408},
                                  {"num_attention_heads", 16},
                                  {"num_experts", 60},
                                  {"num_experts_per_tok", 4},
                                  {"num_hidden_layers", 24},
                                  {"num_key_value_heads", 16},
                                  {"shared_expert_intermediate_size", 5632},
                                  {"tie_word_embeddings", false},
                                  {"vocab_size", 151936}};
        // huggingface.co/Qwen/Qwen2.5-1.5B-Instruct, config.json
        m["qwen2.5-1.5b"] = {{"architectures", {"Qwen2ForCausalLM"}},
                             {"model_type", "qwen2"},
                             {"hidden_size", 1536},
                             {"intermediate_size", 8960},
                             {"max_position_embeddings", 32768},
                             {"num_attention_heads", 12},
                             {"num_hidden_layers", 28},
                             {"num_key_value_heads", 2},
                             {"rms_norm_eps", 1e-6},
                             {"tie_word_embeddings", true},
                             {"torch_dtype", "bfloat16"},
                             {"vocab_size", 151936}};
        // google/gemma-7b as transformers 4.40's GemmaConfig defaults (tests/data/hf/README.md)
        m["gemma-7b"] = {{"architectures", {"GemmaForCausalLM"}},
                         {"model_type", "gemma"},
                         {"head_dim", 256},
                         {"hidden_size", 3072},
                         {"intermediate_size", 24576},
                         {"max_position_embeddings", 8192},
                         {"num_attention_heads", 16},
                         {"num_hidden_layers", 28},
                         {"num_key_value_heads", 16},
                         {"rms_norm_eps", 1e-6},
                         {"tie_word_embeddings", true},
                         {"vocab_size", 256000}};
        // tiiuae/falcon-7b: transformers' FalconConfig defaults (tests/data/hf/README.md)
        m["falcon-7b"] = {{"architectures", {"FalconForCausalLM"}},
                          {"model_type", "falcon"},
                          {"alibi", false},
                          {"bias", false},
                          {"hidden_size", 4544},
                          {"layer_norm_epsilon", 1e-5},
                          {"multi_query", true},
                          {"new_decoder_architecture", false},
                          {"num_attention_heads", 71},
                          {"num_hidden_layers", 32},
                          {"parallel_attn", true},
                          {"torch_dtype", "bfloat16"},
                          {"vocab_size", 65024}};
        // huggingface.co/microsoft/phi-2, config.json
        m["phi-2"] = {{"architectures", {"PhiForCausalLM"}},
                      {"model_type", "phi"},
                      {"hidden_act", "gelu_new"},
                      {"hidden_size", 2560},
                      {"intermediate_size", 10240},
                      {"layer_norm_eps", 1e-5},
                      {"max_position_embeddings", 2048},
                      {"num_attention_heads", 32},
                      {"num_hidden_layers", 32},
                      {"num_key_value_heads", 32},
                      {"partial_rotary_factor", 0.4},
                      {"resid_pdrop", 0.1},
                      {"tie_word_embeddings", false},
                      {"torch_dtype", "float16"},
                      {"vocab_size", 51200}};
        // huggingface.co/bert-base-uncased, config.json
        m["bert-base-uncased"] = {{"architectures", {"BertForMaskedLM"}},
                                  {"model_type", "bert"},
                                  {"attention_probs_dropout_prob", 0.1},
                                  {"hidden_act", "gelu"},
                                  {"hidden_dropout_prob", 0.1},
                                  {"hidden_size", 768},
                                  {"intermediate_size", 3072},
                                  {"layer_norm_eps", 1e-12},
                                  {"max_position_embeddings", 512},
                                  {"num_attention_heads", 12},
                                  {"num_hidden_layers", 12},
                                  {"type_vocab_size", 2},
                                  {"vocab_size", 30522}};
        // facebook/bart-large: transformers' BartConfig defaults (tests/data/hf/README.md)
        m["bart-large"] = {{"architectures", {"BartForConditionalGeneration"}},
                           {"model_type", "bart"},
                           {"activation_function", "gelu"},
                           {"attention_dropout", 0.0},
                           {"d_model", 1024},
                           {"decoder_attention_heads", 16},
                           {"decoder_ffn_dim", 4096},
                           {"decoder_layers", 12},
                           {"dropout", 0.1},
                           {"encoder_attention_heads", 16},
                           {"encoder_ffn_dim", 4096},
                           {"encoder_layers", 12},
                           {"max_position_embeddings", 1024},
                           {"scale_embedding", false},
                           {"vocab_size", 50265}};
        // huggingface.co/google-t5/t5-small, config.json
        m["t5-small"] = {{"architectures", {"T5WithLMHeadModel"}},
                         {"model_type", "t5"},
                         {"d_ff", 2048},
                         {"d_kv", 64},
                         {"d_model", 512},
                         {"dropout_rate", 0.1},
                         {"is_encoder_decoder", true},
                         {"layer_norm_epsilon", 1e-6},
                         {"num_heads", 8},
                         {"num_layers", 6},
                         {"relative_attention_num_buckets", 32},
                         {"vocab_size", 32128}};
        // huggingface.co/microsoft/Phi-3-mini-4k-instruct, config.json
        m["phi-3-mini-4k"] = {{"architectures", {"Phi3ForCausalLM"}},
                              {"model_type", "phi3"},
                              {"hidden_act", "silu"},
                              {"hidden_size", 3072},
                              {"intermediate_size", 8192},
                              {"max_position_embeddings", 4096},
                              {"num_attention_heads", 32},
                              {"num_hidden_layers", 32},
                              {"num_key_value_heads", 32},
                              {"rms_norm_eps", 1e-5},
                              {"sliding_window", 2047},
                              {"tie_word_embeddings", false},
                              {"torch_dtype", "bfloat16"},
                              {"vocab_size", 32064}};
        // huggingface.co/FacebookAI/roberta-base, config.json
        m["roberta-base"] = {{"architectures", {"RobertaForMaskedLM"}},
                             {"model_type", "roberta"},
                             {"attention_probs_dropout_prob", 0.1},
                             {"hidden_act", "gelu"},
                             {"hidden_dropout_prob", 0.1},
                             {"hidden_size", 768},
                             {"intermediate_size", 3072},
                             {"layer_norm_eps", 1e-5},
                             {"max_position_embeddings", 514},
                             {"num_attention_heads", 12},
                             {"num_hidden_layers", 12},
                             {"pad_token_id", 1},
                             {"type_vocab_size", 1},
                             {"vocab_size", 50265}};
        // huggingface.co/microsoft/deberta-v3-base, config.json (its architectures key added: the
        // card's masked-LM pre-training head)
        m["deberta-v3-base"] = {{"architectures", {"DebertaV2ForMaskedLM"}},
                                {"model_type", "deberta-v2"},
                                {"attention_probs_dropout_prob", 0.1},
                                {"hidden_act", "gelu"},
                                {"hidden_dropout_prob", 0.1},
                                {"hidden_size", 768},
                                {"intermediate_size", 3072},
                                {"max_position_embeddings", 512},
                                {"relative_attention", true},
                                {"position_buckets", 256},
                                {"norm_rel_ebd", "layer_norm"},
                                {"share_att_key", true},
                                {"pos_att_type", "p2c|c2p"},
                                {"layer_norm_eps", 1e-7},
                                {"max_relative_positions", -1},
                                {"position_biased_input", false},
                                {"num_attention_heads", 12},
                                {"num_hidden_layers", 12},
                                {"type_vocab_size", 0},
                                {"vocab_size", 128100}};
        // huggingface.co/google/vit-base-patch16-224, config.json (id2label has the 1000 ImageNet classes)
        m["vit-b16"] = {{"architectures", {"ViTForImageClassification"}},
                        {"model_type", "vit"},
                        {"attention_probs_dropout_prob", 0.0},
                        {"hidden_act", "gelu"},
                        {"hidden_dropout_prob", 0.0},
                        {"hidden_size", 768},
                        {"image_size", 224},
                        {"intermediate_size", 3072},
                        {"layer_norm_eps", 1e-12},
                        {"num_attention_heads", 12},
                        {"num_channels", 3},
                        {"num_hidden_layers", 12},
                        {"num_labels", 1000},
                        {"patch_size", 16},
                        {"qkv_bias", true}};
        return m;
    }();
    return p;
}

}  // namespace

bool is_hf_config(const json& doc) {
    return doc.is_object() && !doc.contains("format") && (doc.contains("model_type") || doc.contains("architectures"));
}

json expand_hf_config(const json& cfg, const std::string& origin, const std::string& path_prefix) {
    if (!cfg.is_object()) json_fail(origin, path_prefix, "expected a JSON object, got " + std::string(cfg.type_name()));
    ConfigReader r(cfg, origin, path_prefix);
    const std::string model_type = r.string("model_type");
    r.set_context(model_type);
    const std::string name = model_name(cfg, origin);
    for (const char* key : {"num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers"}) {
        if (r.has(key) && r.positive(key) > kMaxLayers)
            r.fail(key, "at most " + std::to_string(kMaxLayers) + " layers, got " + std::to_string(r.positive(key)));
    }
    // model_type -> builder, in the order the error message lists them
    using Builder = json (*)(const ConfigReader&, const json& cfg, const std::string& model_type, const std::string& name);
    static const std::pair<const char*, Builder> builders[] = {
        {"gpt2", hf::build_gpt2},
        {"llama", hf::build_llama},
        {"mistral", hf::build_llama},
        {"qwen2", hf::build_llama},
        {"gemma", hf::build_llama},
        {"mixtral", hf::build_llama},
        {"qwen2_moe", hf::build_llama},
        {"phi3", hf::build_llama},
        {"falcon", hf::build_falcon},
        {"phi", hf::build_phi},
        {"bert", hf::build_bert},
        {"roberta", hf::build_bert},
        {"deberta-v2", hf::build_deberta},
        {"vit", hf::build_vit},
        {"opt", hf::build_opt},
        {"switch_transformers", hf::build_switch_transformers},
        {"t5", hf::build_switch_transformers},
        {"bart", hf::build_bart},
    };
    // The routing options reach the llama family's builder, which checks that the model has experts.
    if (r.has(kHfSplitKey) && cfg.at(kHfSplitKey).is_object()) {
        const json& s = cfg.at(kHfSplitKey);
        const char* flag = s.contains("expert_load")       ? "--expert-load"
                           : s.contains("capacity_factor") ? "--capacity-factor"
                           : s.contains("pad_to_capacity") ? "--pad-to-capacity"
                                                           : nullptr;
        Builder build = nullptr;
        for (const auto& [type, b] : builders)
            if (model_type == type) build = b;
        if (flag && build != hf::build_llama)
            throw InputError(std::string(flag) + ": " + origin + " (model_type '" + model_type +
                             "') has no experts it routes (a GPT template with \"experts\", mixtral and qwen2_moe take it)");
        // Context parallelism: the decoders and the bert-style encoders split the sequence
        // (model/doc_builder.hpp ContextParallelSplit); the others are not split by sequence.
        const std::int64_t cp = s.value("cp", std::int64_t{1});
        static const std::set<Builder> by_sequence = {hf::build_gpt2, hf::build_llama, hf::build_falcon, hf::build_phi,
                                                      hf::build_opt,  hf::build_bert,  hf::build_vit};
        if (cp > 1 && build != nullptr && by_sequence.count(build) == 0)
            throw InputError("--cp " + std::to_string(cp) + ": " + origin + " (model_type '" + model_type +
                             "') has no context-parallel split: gpt2, opt, falcon, phi, the llama family, bert, roberta and vit split "
                             "the sequence; an encoder-decoder (t5, switch_transformers, bart: cross-attention, relative position "
                             "bias) and deberta-v2 (relative-position attention) are not split by sequence");
    }
    std::string supported;
    for (const auto& [type, build] : builders) {
        if (model_type == type) return build(r, cfg, model_type, name);
        supported += (supported.empty() ? "" : ", ") + std::string(type);
    }
    r.fail("model_type", "unsupported model_type '" + model_type + "' (supported: " + supported + ")");
}

void add_hf_split(json& config, int tp, bool sp, const std::optional<std::int64_t>& seq, int pp, int stage, int ep, int cp,
                  const HfRouting& routing) {
    if (tp <= 1 && pp <= 1 && ep <= 1 && cp <= 1 && !routing.any()) return;
    json& s = config[kHfSplitKey] = {{"tp", tp}, {"sp", sp}};
    if (pp > 1) s["pp"] = pp, s["stage"] = stage;
    if (ep > 1) s["ep"] = ep;
    if (cp > 1) s["cp"] = cp;
    if (routing.expert_load) s["expert_load"] = *routing.expert_load;
    if (routing.capacity_factor) s["capacity_factor"] = *routing.capacity_factor;
    if (routing.pad_to_capacity) s["pad_to_capacity"] = true;
    // The sequence shard's length, a context-parallel rank's share, or the sequence routing is
    // counted over, is a number in the document: the builder sets the dims' seq.
    if (((tp > 1 && sp) || cp > 1 || routing.any()) && seq) s["seq"] = *seq;
}

bool is_hf_preset(const std::string& name) { return presets().count(name) != 0; }

std::vector<std::string> hf_preset_names() {
    std::vector<std::string> names;
    for (const auto& [name, cfg] : presets()) names.push_back(name);
    return names;
}

json hf_preset_config(const std::string& name, const json& overrides) {
    json cfg = presets().at(name);
    cfg["_name_or_path"] = name;
    for (const auto& [k, v] : overrides.items()) cfg[k] = v;
    return cfg;
}

json expand_hf_preset(const std::string& name, const json& overrides, const std::string& origin) {
    return expand_hf_config(hf_preset_config(name, overrides), origin, "/config");
}

}  // namespace roofline
