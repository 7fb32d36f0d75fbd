#pragma once
// LLM inference phases (analyze --phase, generate, serve): one prefill or one decode step of a
// decoder-only LLM as a serving engine runs it, built as a roofline-model/1 document from the
// model's architecture. The kernels are vLLM's (vllm/model_executor/models/llama.py, gpt2.py;
// vllm/attention): one fused QKV projection, one fused gate-up projection (SwiGLU), the KV cache
// written once per new token (reshape_and_cache) and read in place by attention, logits for the
// last token of each sequence only. Attention is the materialised three-kernel composite (QK^T,
// scale-mask-softmax, PV; ops/attention_op.cpp), LLM-Viewer's unfused counting; --fuse turns it
// into flash attention.
//   prefill: `tokens` prompt tokens per sequence; K and V of every token written to the cache.
//   decode:  one new token per sequence attending to `context` cached tokens plus itself; its K and
//            V appended to the cache. Grouped-query attention reads each KV head once for the
//            query heads that share it (the queries of a group are the rows of one GEMM).
// Encoder-decoder models (t5, switch_transformers, bart; model/hf_seq2seq.cpp) run their steps as
// transformers' generate() does with use_cache, from their Hugging Face builders' layers:
//   prefill: the encoder over `tokens` source tokens; every decoder layer's cross-attention K and V
//            of the encoder output computed once and cached; the decoder's first token (its
//            self-attention K and V cached), logits for it.
//   decode:  one decoder token per sequence: self-attention over `context` cached tokens plus
//            itself, cross-attention over the cached K and V of `source` encoder tokens (neither
//            the encoder nor the cross-attention projections run), logits for it.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "model/graph.hpp"
#include "ops/dtype.hpp"

namespace roofline {

struct ModelOverrides;

enum class InferencePhase { prefill, decode };
std::string_view phase_name(InferencePhase p);

// What sizes a decoder-only transformer's inference work.
struct DecoderArch {
    std::string name;
    std::string dtype = "bf16";  // the checkpoint's dtype
    std::int64_t vocab = 0, d = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
    std::int64_t max_positions = 0;
    std::int64_t sliding_window = 0;  // 0: none (mistral: decode attends to the last `window` tokens)
    bool rope = false;                // rotary embeddings (llama, mistral); else learned positions (gpt2)
    bool gated_mlp = false;           // SwiGLU (gate and up, then down); else up, activation, down
    bool rmsnorm = false;             // else layernorm with a bias
    bool qkv_bias = false, out_bias = false, mlp_bias = false;
    bool tied = false;              // the LM head is the token embedding
    std::string act = "gelu_tanh";  // gelu_tanh, gelu, silu, relu
    double eps = 1e-5;
    std::int64_t batch = 1;  // the model's default batch
};

// Serving-engine quantization (vLLM's schemes) of the decoder layers' linear layers and of the KV
// cache; the embedding and the LM head keep the checkpoint's dtype, as AWQ, GPTQ and fp8
// checkpoints leave them. Where each (de)quantization runs is where those kernels run it:
//   weights only (W8A16, W4A16: Marlin, AWQ, GPTQ): weights stored in int8, int4 (two per byte,
//     with a 16-bit scale per group of `group_size` input features) or fp8 (a scale per output
//     channel); dequantized in registers inside the GEMM, whose math stays 16-bit.
//   weights and activations (W8A8: fp8, or int8 SmoothQuant): each GEMM's input quantized by a
//     kernel of its own (scaled_fp8_quant, scaled_int8_quant), the GEMM on 8-bit tensor cores, the
//     output scaled back to 16 bits in its epilogue (cutlass_scaled_mm).
//   KV cache: K and V quantized as they are written (reshape_and_cache), dequantized as the
//     decode attention kernel loads them; prefill attends over the fresh 16-bit K and V.
struct Quantization {
    std::string weights;            // "" (the checkpoint's dtype), int8, int4, fp8_e4m3, fp8_e5m2
    std::int64_t group_size = 128;  // int8/int4 weights: input features per scale (0: one per channel)
    std::string activations;        // "" (16-bit), int8, fp8_e4m3, fp8_e5m2 (needs weights of the same type)
    std::string kv_cache;           // "" (the checkpoint's dtype), int8, fp8_e4m3, fp8_e5m2
    bool any() const { return !weights.empty() || !activations.empty() || !kv_cache.empty(); }
    std::string describe() const;  // "weights int4 (groups of 128), KV cache fp8_e4m3"; "" when none
};
// InputError naming the flag for an unknown type or an unsupported combination.
void check_quantization(const Quantization& q);
// --dtype for an inference step: a 16-bit or 32-bit dtype becomes the model's; an 8-bit float is
// the fp8 W8A8 scheme (weights and activations in it, the rest in the model's 16-bit dtype), which
// then cannot be combined with --weights or --activations (InputError).
void apply_inference_dtype(DecoderArch& a, Quantization& q, std::optional<DType> dtype);
// The KV cache's element type under q for a model of this architecture.
DType kv_cache_dtype(const DecoderArch& a, const Quantization& q);

struct PhaseOptions {
    InferencePhase phase = InferencePhase::prefill;
    std::optional<std::int64_t> batch;  // default: the model's
    std::int64_t tokens = 0;            // prefill: prompt tokens per sequence (0: the model's maximum)
    std::int64_t context = 0;           // decode: tokens already cached per sequence
    std::int64_t source = -1;           // encoder-decoder decode: encoder tokens whose cross K/V are cached (-1: not given)
    int tp = 1;                         // tensor-parallel ranks: the document is one rank's share
    Quantization quant;
};

// K and V bytes one token adds to the cache of one sequence (all layers; one rank's share under tp).
double kv_cache_bytes_per_token(const DecoderArch& a, DType kv, int tp = 1);
// Tokens whose K and V a decode step at this context reads: context + 1, or the sliding window.
std::int64_t attended_tokens(const DecoderArch& a, std::int64_t context);

// The architecture of a Hugging Face config (gpt2, llama, mistral); InputError naming origin and
// the key otherwise.
DecoderArch decoder_arch_of_hf(const nlohmann::json& cfg, const std::string& origin);
// MODEL as the command line names it (a GPT template, a Hugging Face preset, a config.json or a
// roofline-model/1 file referencing a template): its decoder architecture. InputError for a model
// that is not a decoder-only LLM.
DecoderArch decoder_arch_of(const std::string& model);

// The document of one prefill or decode step. InputError for a context beyond the model's
// positions or a tensor-parallel degree that does not divide the heads.
nlohmann::json build_phase_doc(const DecoderArch& a, const PhaseOptions& p);

// The step's graph (eval mode: no dropout; one rank's share under p.tp).
Graph build_phase_graph(const DecoderArch& a, const PhaseOptions& p);

// The document of an encoder-decoder's step from its Hugging Face config (model_type t5,
// switch_transformers or bart); dtype overrides the checkpoint's (16 or 32 bits). InputError naming
// the flag for a missing --source, a length beyond BART's positions, a tp that does not divide the
// heads, or quantization it does not model (--weights, --activations; --kv-cache for t5/switch).
nlohmann::json build_seq2seq_phase_doc(const nlohmann::json& cfg, const std::string& origin, const PhaseOptions& p,
                                       std::optional<DType> dtype = std::nullopt);

// load_model_arg for ov.phase: the step's graph (eval mode: no dropout).
Graph load_phase_model(const std::string& model, const ModelOverrides& ov);

}  // namespace roofline
