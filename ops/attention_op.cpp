// attention(q[..., Sq, D], k[..., Sk, D], v[..., Sk, Dv]) -> [..., Sq, Dv]: scaled dot-product
// attention as a composite. Its work is the sum of the materialised algorithm's parts, counted by
// their own rules: scores = q k^T, scale, causal mask (when causal), softmax, probabilities x v.
// The fused (flash-style) variant and its different traffic belong to the fusion pass.
#include <cmath>

#include "ops/op_rule.hpp"

namespace roofline {
namespace {

struct Parts {
    TensorDesc scores;
    TensorDesc out;
};

Parts attention_parts(Inputs in) {
    const TensorDesc& q = in[0];
    const TensorDesc& k = in[1];
    const TensorDesc& v = in[2];
    if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank()) {
        throw InputError("q, k, v must have the same rank >= 2, got " + desc_str(q) + ", " + desc_str(k) + ", " + desc_str(v));
    }
    if (k.shape[k.shape.size() - 2] != v.shape[v.shape.size() - 2]) {
        throw InputError("k " + desc_str(k) + " and v " + desc_str(v) + " differ in sequence length");
    }
    Attrs tb;
    tb.set("transpose_b", true);
    // Shapes from K and V as q's dtype: a quantized cache is dequantized as it is loaded.
    const TensorDesc qk[2] = {q, TensorDesc{k.shape, q.dtype}};
    TensorDesc scores = infer_outputs(OpKind::matmul, qk, tb)[0];
    const TensorDesc pv[2] = {scores, TensorDesc{v.shape, q.dtype}};
    TensorDesc out = infer_outputs(OpKind::matmul, pv, Attrs{})[0];
    return {scores, out};
}

// K and V may be kept quantized (an fp8 or int8 KV cache: vLLM's kv_cache_dtype) under 16-bit
// queries: the attention kernel dequantizes them as it loads them, and its traffic is theirs.
bool quantized_kv(Inputs in) {
    const auto quantized = [](DType d) { return d == DType::fp8_e4m3 || d == DType::fp8_e5m2 || d == DType::int8; };
    return (in[0].dtype == DType::bf16 || in[0].dtype == DType::f16) && in[1].dtype == in[2].dtype && quantized(in[1].dtype);
}

std::vector<TensorDesc> attention_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_floating(k, in[0], "q");
    if (!quantized_kv(in)) (void)common_dtype(k, in);
    if (attrs.has("scale") && !(attrs.get_double("scale", 1.0) > 0)) throw InputError("attribute 'scale' must be positive");
    return {attention_parts(in).out};
}

Work attention_work(OpKind, Inputs in, std::span<const TensorDesc>, const Attrs& attrs) {
    const Parts p = attention_parts(in);
    Attrs tb;
    tb.set("transpose_b", true);
    Attrs scale;
    scale.set("factor", attrs.get_double("scale", 1.0 / std::sqrt(static_cast<double>(in[0].shape.back()))));
    const TensorDesc qk[2] = {in[0], in[1]};
    const TensorDesc pv[2] = {p.scores, in[2]};
    const TensorDesc s[1] = {p.scores};
    const TensorDesc o[1] = {p.out};
    // Materialised as three kernels: S = Q K^T, P = softmax(mask(scale * S)) with the scale and the
    // mask applied in the softmax's pass over S (a fused scale-mask-softmax, as the project's CUDA
    // kernel and Megatron-LM's run it: their arithmetic, not their traffic), O = P V. A model that
    // runs them as separate kernels spells them out as separate ops (Hugging Face's eager attention).
    Work w = count_work(OpKind::matmul, qk, s, tb);
    w.vector_flops += count_work(OpKind::scale, s, s, scale).vector_flops;
    if (attrs.get_bool("causal", false)) w.vector_flops += count_work(OpKind::causal_mask, s, s, Attrs{}).vector_flops;
    w += count_work(OpKind::softmax, s, s, Attrs{});
    w += count_work(OpKind::matmul, pv, o, Attrs{});
    return w;
}

}  // namespace

const OpRule& attention_rule() {
    static const OpRule r{OpFamily::attention, 3, 3, {"causal", "scale"}, attention_infer, attention_work};
    return r;
}

}  // namespace roofline
