#pragma once
// Built-in model templates. A template is sugar: it expands to a "roofline-model/1" document,
// exactly what a user could write by hand, and goes through the same loader.
//   mlp  — batch x input -> [linear, activation] x hidden -> linear -> cross-entropy
//   gpt  — a GPT-2/GPT-3 decoder (see expand_gpt in templates.cpp for the exact node list)
// Presets: gpt2-small, gpt2-medium, gpt2-large, gpt2-xl, gpt3-175b (gpt with a config).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "model/inference.hpp"
#include "model/model_doc.hpp"

namespace roofline {

bool is_template_name(const std::string& name);
// The templates that build one rank of a tensor-parallel split (config key "tp"): the GPT ones.
bool template_splits_tensor_parallel(const std::string& name);

// The most layers a template or Hugging Face config may ask for (checked before building).
inline constexpr std::int64_t kMaxLayers = 4096;
std::string template_choices();
// config keys are validated (unknown keys rejected, with origin and JSON path in the message).
// A GPT template (gpt, gpt2-*, gpt3-175b) with its config as a decoder architecture; nullopt for
// any other template.
std::optional<DecoderArch> gpt_template_arch(const std::string& name, const nlohmann::json& config, const std::string& origin);
nlohmann::json expand_template(const std::string& name, const nlohmann::json& config, const std::string& origin);
// The same document as its builder made it (model/model_doc.hpp), for the loader: the GPT and MLP
// templates'; nullopt for the others (the Hugging Face presets, whose builders give JSON).
std::optional<ModelDoc> expand_built_template(const std::string& name, const nlohmann::json& config, const std::string& origin);

}  // namespace roofline
