#include "ops/cuda/families.hpp"
#include "ops/error.hpp"

namespace roofline::cuda {

namespace {

std::string dtypes_of(const Tensors& ts) {
    std::string s;
    for (const auto& t : ts) s += (s.empty() ? "" : ",") + std::string(dtype_name(t.desc.dtype));
    return s;
}

bool launch_family(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    switch (k) {
        // the ops of ops/defs/: their launcher in ops/defs/<name>.cu
#define ROOFLINE_DEFINED_OP(name) \
    case OpKind::name:            \
        return launch_##name(in, a, out, ctx);
#include "ops/defined_ops.inc"
#undef ROOFLINE_DEFINED_OP
        case OpKind::matmul:
        case OpKind::linear: return launch_gemm(k, in, a, out, ctx);
        case OpKind::attention: return launch_attention(k, in, a, out, ctx);
        case OpKind::conv2d:
        case OpKind::conv2d_grad_input:
        case OpKind::conv2d_grad_weight: return launch_conv(k, in, a, out, ctx);
        case OpKind::softmax:
        case OpKind::layernorm:
        case OpKind::rmsnorm:
        case OpKind::cross_entropy:
        case OpKind::softmax_grad:
        case OpKind::layernorm_grad:
        case OpKind::rmsnorm_grad:
        case OpKind::cross_entropy_grad: return launch_rowwise(k, in, a, out, ctx);
        case OpKind::reduce_sum:
        case OpKind::reduce_mean:
        case OpKind::reduce_max:
        case OpKind::reduce_max_grad: return launch_reduce(k, in, a, out, ctx);
        case OpKind::embedding:
        case OpKind::embedding_grad:
        case OpKind::transpose:
        case OpKind::permute:
        case OpKind::reshape:
        case OpKind::concat:
        case OpKind::split: return launch_movement(k, in, a, out, ctx);
        case OpKind::relu:
        case OpKind::gelu:
#define ROOFLINE_UNARY(name, ...) case OpKind::name:
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
        case OpKind::neg:
        case OpKind::scale:
        case OpKind::add:
        case OpKind::sub:
        case OpKind::mul:
        case OpKind::div:
        case OpKind::maximum:
        case OpKind::dropout:
        case OpKind::causal_mask:
        case OpKind::unary_grad:
        case OpKind::maximum_grad:
        case OpKind::dropout_grad:
        case OpKind::expand:
        case OpKind::fill:
        case OpKind::cast:
        case OpKind::sgd_update:
        case OpKind::adam_update:
        case OpKind::shift:
        case OpKind::pow: return launch_pointwise(k, in, a, out, ctx);
        case OpKind::where:
        case OpKind::slice:
        case OpKind::pad:
        case OpKind::resize:
        case OpKind::max_pool2d:
        case OpKind::avg_pool2d:
        case OpKind::max_pool2d_grad:
        case OpKind::avg_pool2d_grad: return launch_gather_family(k, in, a, out, ctx);
        case OpKind::topk: return launch_scan_family(k, in, a, out, ctx);
        case OpKind::opaque:
            throw InputError("no CUDA kernel for opaque op '" + a.get_string("op_type", "?") +
                             "' (kept by --allow-unknown with zero work; it cannot be measured)");
    }
    return false;
}

}  // namespace

void launch_op(OpKind k, const std::vector<DeviceTensor>& in, const Attrs& attrs, const std::vector<DeviceTensor>& out,
               LaunchContext& ctx) {
    if (!launch_family(k, in, attrs, out, ctx)) {
        throw InputError("no CUDA kernel for " + std::string(op_name(k)) + " with inputs (" + dtypes_of(in) + ") and outputs (" +
                         dtypes_of(out) + ")");
    }
}

}  // namespace roofline::cuda
