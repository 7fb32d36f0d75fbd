#pragma once
// Hugging Face transformers `config.json` -> a "roofline-model/1" document, which then goes
// through the one model loader (model_json.cpp) like a template does. Supported model types and
// heads (the first entry of "architectures"; without it, the pre-training head):
//   gpt2     GPT2LMHeadModel (default), GPT2Model
//   llama    LlamaForCausalLM (default), LlamaModel      — llama-2, llama-3 (GQA), ...
//   mistral  MistralForCausalLM (default), MistralModel  — as llama; sliding window not modelled
//   qwen2    Qwen2ForCausalLM (default), Qwen2Model      — as llama, q/k/v biases
//   gemma    GemmaForCausalLM (default), GemmaModel      — as llama, head_dim, scaled embedding, GeGLU
//   mixtral  MixtralForCausalLM (default), MixtralModel  — as mistral, top-k mixture of experts
//   qwen2_moe  Qwen2MoeForCausalLM (default), Qwen2MoeModel — as qwen2, top-k experts + shared expert
//   bert     BertForMaskedLM (default), BertModel, BertForSequenceClassification, BertLMHeadModel,
//            BertForPreTraining
//   roberta  RobertaForMaskedLM (default), RobertaModel, RobertaForSequenceClassification, RobertaForCausalLM
//   vit      ViTForImageClassification (default), ViTModel
//   opt      OPTForCausalLM (default), OPTModel
//   switch_transformers  SwitchTransformersForConditionalGeneration (encoder-decoder, top-1 MoE)
//   t5       T5ForConditionalGeneration (default, T5WithLMHeadModel), T5Model — switch's graph, dense
//   bart     BartForConditionalGeneration (default), BartModel — post-LN encoder-decoder
// Nodes follow transformers' modeling_<type>.py forward passes op for op, and parameters carry
// the checkpoints' state-dict names, so the parameter count is the model's num_parameters().
// Keys a config.json leaves out take the defaults of transformers' configuration_<type>.py (a
// saved config omits values equal to its class defaults); the keys that size the model are
// required. Bad input is an InputError naming the file and the JSON path.
// Activations written in Python in transformers (gelu_new, gelu_fast, ...) become the elementwise
// ops eager PyTorch launches for them (hf_build.cpp).
// Files: hf_config.cpp (this interface, presets), hf_build.hpp/.cpp (config reader, document
// builder, shared pieces, the top-k experts), hf_decoders.cpp (gpt2, opt, the llama family),
// hf_encoders.cpp (bert, roberta, vit),
// hf_seq2seq.cpp (switch_transformers, t5, bart).
#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roofline {

// A JSON object is a Hugging Face config when it has "model_type" or "architectures" and no
// "format" (every roofline-model/1 document has "format").
bool is_hf_config(const nlohmann::json& doc);

// Expands a parsed config.json. origin names it in messages (the file path); path_prefix is put
// before every JSON path ("" for a config.json, "/config" for a template file's config).
nlohmann::json expand_hf_config(const nlohmann::json& config, const std::string& origin, const std::string& path_prefix = "");

// The config key through which roofline's --tp, --sp, --seq, --pp, --ep and --cp, and the routing options
// --expert-load, --capacity-factor and --pad-to-capacity, reach a builder that splits the model (one
// rank's share; model/hf_build.hpp Split): an object {"tp", "sp", "seq", "pp", "stage", "ep", "cp",
// "expert_load", "capacity_factor", "pad_to_capacity"}.
inline constexpr const char* kHfSplitKey = "_roofline_split";
// What the routing options ask of a mixture of experts (nothing given: uniform and dropless).
struct HfRouting {
    const nlohmann::json* expert_load = nullptr;  // --expert-load as a config value (shares, "uniform", "zipf:S")
    std::optional<double> capacity_factor;
    bool pad_to_capacity = false;
    bool any() const { return expert_load != nullptr || capacity_factor.has_value() || pad_to_capacity; }
};
// Adds the split that --tp, --sp, --pp, --ep and --cp ask for to a config (nothing for one rank and stage),
// and the routing for the config's builder to check (a sequence length given then goes with it:
// routing is counted per sequence).
void add_hf_split(nlohmann::json& config, int tp, bool sp, const std::optional<std::int64_t>& seq, int pp, int stage, int ep, int cp = 1,
                  const HfRouting& routing = {});

// Built-in published configs usable as template names (llama-2-7b, bert-base-uncased, ...).
bool is_hf_preset(const std::string& name);
std::vector<std::string> hf_preset_names();
// The preset's published config (architecture keys only) named as the preset, with the keys of
// `overrides` replacing its own.
nlohmann::json hf_preset_config(const std::string& name, const nlohmann::json& overrides);
// The preset's config with the keys of `overrides` replacing its own, expanded.
nlohmann::json expand_hf_preset(const std::string& name, const nlohmann::json& overrides, const std::string& origin);

}  // namespace roofline
