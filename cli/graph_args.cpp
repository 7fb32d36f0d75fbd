#include "cli/validators.hpp"
#include "cli/graph_args.hpp"

#include <cstdio>

#include "model/model_json.hpp"
#include "model/templates.hpp"
#include "ops/error.hpp"

namespace roofline::cli {

void add_quantization_options(CLI::App* cmd, Quantization& q) {
    cmd->add_option("--weights", q.weights,
                    "quantized weights of the decoder layers' linear layers: int8 or int4 (weight-only, grouped scales; W8A16/W4A16 as "
                    "Marlin, AWQ, GPTQ run them), fp8_e4m3 or fp8_e5m2 (weight-only, or W8A8 with --activations)");
    cmd->add_option("--group-size", q.group_size, "int8/int4 weights: input features per scale (0: one per output channel)")
        ->capture_default_str();
    cmd->add_option("--activations", q.activations,
                    "8-bit GEMM inputs (W8A8: int8 SmoothQuant or fp8, with --weights of the same type): quantized by a kernel "
                    "before each GEMM, scaled back to 16 bits in its epilogue");
    cmd->add_option("--kv-cache", q.kv_cache, "KV cache dtype: int8, fp8_e4m3 or fp8_e5m2 (default: the model's)");
}

void GraphArgs::add_to(CLI::App* cmd) {
    cmd->add_option(
           "MODEL", model,
           "a model file (roofline-model/1 JSON, a Hugging Face config.json, or .onnx) or a built-in template: " + template_choices())
        ->required();
    cmd->add_option("--dtype", dtype, "compute and parameter dtype policy: f64, f32, tf32, f16, bf16, fp8_e4m3 or fp8_e5m2");
    cmd->add_option("--batch,--microbatch", batch, "override the model's batch dimension (with --cluster: the micro-batch a rank runs)")
        ->check(kPositive);
    cmd->add_option("--seq", seq, "override the model's sequence-length dimension")->check(kPositive);
    cmd->add_option("--mode", mode, "inference: the model's graph as given; training: forward, backward and optimizer step")
        ->check(CLI::IsMember({"inference", "training"}))
        ->capture_default_str();
    cmd->add_option("--optimizer", optimizer,
                    "training: sgd (momentum 0.9), adam, adamw (weight decay 0.01) or none (forward and backward only, no update: "
                    "what loss.backward() alone runs)")
        ->check(CLI::IsMember({"sgd", "adam", "adamw", "none"}))
        ->capture_default_str();
    cmd->add_option("--loss-scale", loss_scale, "training: static loss scale (seed the loss gradient with S, unscale in the optimizer)")
        ->check(kNonNegative);
    cmd->add_option(
           "--master-weights", master,
           "training: on (fp32 master weights and optimizer state for 16-bit parameters) or off; default: the model's dtype_policy (on)")
        ->check(CLI::IsMember({"on", "off"}));
    cmd->add_option("--phase", phase,
                    "an LLM inference step as a serving engine runs it: prefill (--seq prompt tokens, K and V written to the "
                    "cache) or decode (one new token per sequence attending to --context cached tokens); decoder-only LLMs, and "
                    "encoder-decoders (t5, switch_transformers, bart: prefill encodes --seq source tokens and runs the decoder's first "
                    "token; decode also attends to the cross-attention K and V of --source encoder tokens)")
        ->check(CLI::IsMember({"prefill", "decode"}));
    cmd->add_option("--context", context, "--phase decode: tokens already in each sequence's KV cache")->check(kNonNegative);
    cmd->add_option("--source", source,
                    "--phase decode of an encoder-decoder (t5, switch_transformers, bart): encoder tokens per sequence whose "
                    "cross-attention K and V are cached (required: no default)")
        ->check(kPositive);
    add_quantization_options(cmd, quant);
    cmd->add_flag(
        "--allow-unknown", allow_unknown,
        "ONNX models: keep ops roofline cannot map as opaque ops counted as zero work (marked 'opaque' in reports) instead of failing");
}

Graph GraphArgs::build(TrainingOptions* t) const {
    ModelOverrides ov;
    if (batch > 0) ov.batch = batch;
    if (seq > 0) ov.seq = seq;
    if (!dtype.empty()) {
        auto d = parse_dtype(dtype);
        if (!d || !is_floating(*d))
            throw InputError("--dtype: expected a floating-point dtype (f64, f32, tf32, f16, bf16, fp8_e4m3, fp8_e5m2), got '" + dtype +
                             "'");
        ov.dtype = d;
    }
    ov.allow_unknown = allow_unknown;
    ov.frozen_weights = !training();
    ov.tp = tp;
    ov.sp = sp;
    ov.cp = cp;
    ov.ep = ep;
    routing.apply(ov);
    ov.pp = pp;
    ov.stage = stage;
    if (phase.empty() && context >= 0) throw InputError("--context is the cached tokens of --phase decode");
    if (phase.empty() && source >= 0) throw InputError("--source is the cached encoder tokens of an encoder-decoder's --phase decode");
    if (phase.empty() && quant.any())
        throw InputError("--weights, --activations and --kv-cache quantize an LLM inference step: give --phase prefill or decode");
    if (!phase.empty()) {
        if (training()) throw InputError("--phase " + phase + " is an inference step: it takes no --mode training");
        PhaseOptions p;
        p.quant = quant;
        p.phase = phase == "decode" ? InferencePhase::decode : InferencePhase::prefill;
        if (p.phase == InferencePhase::decode) {
            if (seq > 0) throw InputError("--seq is the prompt length of --phase prefill; a decode step takes --context (cached tokens)");
            if (context < 0) throw InputError("--phase decode needs --context N (tokens already in each sequence's KV cache)");
            p.context = context;
            p.source = source;
        } else if (context >= 0) {
            throw InputError("--context belongs to --phase decode; a prefill's prompt length is --seq");
        } else if (source >= 0) {
            throw InputError("--source belongs to --phase decode; an encoder-decoder's prefill encodes --seq source tokens");
        }
        ov.phase = p;
    }
    Graph g = load_model_arg(model, ov);
    std::size_t opaque = 0;
    for (const Node& n : g.nodes()) opaque += n.kind == OpKind::opaque ? 1 : 0;
    if (opaque > 0) {
        std::string names;
        for (const Node& n : g.nodes()) {
            if (n.kind == OpKind::opaque) names += (names.empty() ? "" : ", ") + n.name + " (" + n.attrs.get_string("op_type", "?") + ")";
        }
        std::fprintf(stderr, "warning: %zu op(s) without a mapping counted as zero work (--allow-unknown): %s\n", opaque, names.c_str());
    }
    if (training()) {
        add_stand_in_loss(g);  // an exported ONNX inference graph has no loss (model/autodiff.hpp)
        TrainingOptions opt;
        opt.optimizer = optimizer == "sgd"    ? Optimizer::sgd
                        : optimizer == "adam" ? Optimizer::adam
                        : optimizer == "none" ? Optimizer::none
                                              : Optimizer::adamw;
        opt.loss_scale = loss_scale >= 0 ? loss_scale : g.precision.loss_scale;
        opt.master_weights = master.empty() ? g.precision.master_weights : master == "on";
        g = build_training_step(std::move(g), opt);
        if (t != nullptr) *t = opt;
    }
    return g;
}

}  // namespace roofline::cli
