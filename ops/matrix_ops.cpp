// matmul (batched, with transposes), linear (+bias) and conv2d: the ops a matrix unit can run.
#include "ops/checked.hpp"
#include "ops/op_rule.hpp"

namespace roofline {
namespace {

void require_matrix_dtype(OpKind k, const TensorDesc& t, const char* role) {
    if (t.dtype == DType::u8 || is_index(t.dtype)) {
        throw InputError(std::string(op_name(k)) + ": " + role + " must be a floating-point or int8 tensor, got " + desc_str(t));
    }
}

struct MatmulDims {
    Shape batch;  // broadcast batch dims
    std::int64_t m = 0, n = 0, k = 0;
};

MatmulDims matmul_dims(Inputs in, const Attrs& attrs) {
    const TensorDesc& a = in[0];
    const TensorDesc& b = in[1];
    if (a.rank() < 2 || b.rank() < 2) {
        throw InputError("operands must have rank >= 2 (got " + desc_str(a) + " and " + desc_str(b) + ")");
    }
    const bool ta = attrs.get_bool("transpose_a", false);
    const bool tb = attrs.get_bool("transpose_b", false);
    const auto ra = a.shape.size(), rb = b.shape.size();
    MatmulDims d;
    d.m = ta ? a.shape[ra - 1] : a.shape[ra - 2];
    const std::int64_t ka = ta ? a.shape[ra - 2] : a.shape[ra - 1];
    const std::int64_t kb = tb ? b.shape[rb - 1] : b.shape[rb - 2];
    d.n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
    if (ka != kb) {
        throw InputError("inner dimensions differ: a is " + desc_str(a) + (ta ? " (transposed)" : "") + ", b is " + desc_str(b) +
                         (tb ? " (transposed)" : "") + " (K " + std::to_string(ka) + " vs " + std::to_string(kb) + ")");
    }
    d.k = ka;
    d.batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2));
    return d;
}

std::vector<TensorDesc> matmul_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_matrix_dtype(k, in[0], "a");
    const DType dt = common_dtype(k, in);
    MatmulDims d = matmul_dims(in, attrs);
    Shape out = d.batch;
    out.push_back(d.m);
    out.push_back(d.n);
    return {TensorDesc{out, matrix_output_dtype(dt)}};
}

Work matmul_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    MatmulDims d = matmul_dims(in, attrs);
    Work w = io_bytes(in, out);
    // 2 FLOPs per multiply-add; M x K . K x N has M*N*K of them per batch entry.
    w.matrix_flops = checked_mul(checked_mul(checked_mul(numel(d.batch), d.m), checked_mul(d.n, d.k)), 2, "FLOPs");
    return w;
}

// linear(x[..., in], w[out, in], b[out]?) = x w^T + b, as torch.nn.Linear stores its weight.
// Quantized forms, as serving engines run them (attributes):
//   weight_bits: 4 for int4 weights packed two to an int8 byte (w[out, in / 2], as GPTQ and AWQ
//     checkpoints pack them); otherwise the weight dtype's width.
//   group_size: the weights' quantization group along `in` (0: one scale per output channel);
//     each group's scale is read with the weight (2 bytes: AWQ/GPTQ fp16 scales).
//   out_dtype: the epilogue's output dtype (a scaled int8 GEMM writes bf16, cutlass_scaled_mm).
// A weight in int8 or fp8 under a 16/32-bit x is weight-only quantization (W8A16, W4A16: Marlin,
// AWQ, GPTQ kernels): dequantized in registers, the math on tensor cores in x's dtype.
struct LinearForm {
    std::int64_t fan_in = 0, fan_out = 0;
    int weight_bits = 0;
    bool weight_only = false;  // w dequantized to x's dtype inside the kernel
    std::int64_t group = 0;
    DType out = DType::f32;
};

bool is_quantized_storage(DType d) { return d == DType::int8 || d == DType::fp8_e4m3 || d == DType::fp8_e5m2; }

LinearForm linear_form(Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    const TensorDesc& w = in[1];
    LinearForm f;
    f.fan_out = w.shape[0];
    f.weight_only = w.dtype != x.dtype && is_quantized_storage(w.dtype) && is_floating(x.dtype) && dtype_bytes(x.dtype) >= 2;
    if (w.dtype != x.dtype && !f.weight_only) throw InputError("weight dtype " + desc_str(w) + " differs from x " + desc_str(x));
    f.weight_bits = static_cast<int>(attrs.get_int("weight_bits", 8 * dtype_bytes(w.dtype)));
    if (f.weight_bits == 4) {
        if (w.dtype != DType::int8) throw InputError("weight_bits 4 packs two int4 weights per int8 byte; the weight is " + desc_str(w));
        f.fan_in = checked_mul(w.shape[1], 2, "input features");
    } else if (f.weight_bits == 8 * dtype_bytes(w.dtype)) {
        f.fan_in = w.shape[1];
    } else {
        throw InputError("attribute 'weight_bits' must be 4 (int4 packed in int8) or the weight dtype's width, got " +
                         std::to_string(f.weight_bits));
    }
    f.group = attrs.get_int("group_size", 0);
    if (f.group < 0 || (f.group > 0 && f.fan_in % f.group != 0)) {
        throw InputError("attribute 'group_size' " + std::to_string(f.group) + " must be 0 (per channel) or divide the " +
                         std::to_string(f.fan_in) + " input features");
    }
    f.out = f.weight_only ? x.dtype : matrix_output_dtype(x.dtype);
    if (attrs.has("out_dtype")) {
        const auto d = parse_dtype(attrs.get_string("out_dtype", ""));
        if (!d || !is_floating(*d)) throw InputError("attribute 'out_dtype' must name a floating-point dtype");
        f.out = *d;
    }
    return f;
}

std::vector<TensorDesc> linear_infer(OpKind k, Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    const TensorDesc& w = in[1];
    require_matrix_dtype(k, x, "x");
    if (x.rank() < 1 || w.rank() != 2) {
        throw InputError("expects x[..., in] and weight[out, in], got " + desc_str(x) + " and " + desc_str(w));
    }
    const LinearForm f = linear_form(in, attrs);
    if (x.shape.back() != f.fan_in) {
        throw InputError("x has " + std::to_string(x.shape.back()) + " input features but weight " + desc_str(w) + " expects " +
                         std::to_string(f.fan_in));
    }
    if (in.size() == 3 && (in[2].shape != Shape{w.shape[0]} || in[2].dtype != f.out)) {
        throw InputError("bias must be " + desc_str(TensorDesc{{w.shape[0]}, f.out}) + ", got " + desc_str(in[2]));
    }
    Shape out = x.shape;
    out.back() = w.shape[0];
    return {TensorDesc{out, f.out}};
}

Work linear_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const LinearForm f = linear_form(in, attrs);
    const std::int64_t rows = numel(Shape(in[0].shape.begin(), in[0].shape.end() - 1));
    Work w = io_bytes(in, out);
    w.matrix_flops = checked_mul(checked_mul(rows, f.fan_in), checked_mul(f.fan_out, 2), "FLOPs");
    if (in.size() == 3) w.vector_flops = checked_mul(rows, f.fan_out, "FLOPs");  // one add per output
    // Quantization scales (a weight-only or group-quantized GEMM): one per group and output
    // channel, read with the weights.
    if (f.weight_only || attrs.has("group_size")) {
        const std::int64_t groups = f.group > 0 ? f.fan_in / f.group : 1;
        w.bytes_read += checked_mul(checked_mul(f.fan_out, groups), 2, "scale bytes");
    }
    // Weight-only: each weight is dequantized (convert and scale: 2 operations) once per block
    // row of the GEMM's M dimension (tiles of up to 64 rows: Marlin's and the AWQ kernels' M tiles).
    if (f.weight_only) {
        const std::int64_t m_tiles = (rows + 63) / 64;
        w.vector_flops += checked_mul(checked_mul(f.fan_in, f.fan_out), checked_mul(m_tiles, 2), "FLOPs");
    }
    return w;
}

struct ConvGeometry {
    std::int64_t n, c_in, h, w, c_out, kh, kw, groups, ho, wo;
};

std::int64_t pair_at(const std::vector<std::int64_t>& v, std::size_t i, const char* name) {
    if (v.size() != 2) throw InputError(std::string("attribute '") + name + "' must have 2 entries (h, w)");
    return v[i];
}

ConvGeometry conv_geometry(Inputs in, const Attrs& attrs) {
    const TensorDesc& x = in[0];
    const TensorDesc& w = in[1];
    if (x.rank() != 4 || w.rank() != 4) {
        throw InputError("expects x[N, C, H, W] and weight[C_out, C_in/groups, kH, kW], got " + desc_str(x) + " and " + desc_str(w));
    }
    const auto stride = attrs.get_ints("stride", {1, 1});
    const auto pad = attrs.get_ints("padding", {0, 0});
    const auto dil = attrs.get_ints("dilation", {1, 1});
    ConvGeometry g{x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2], w.shape[3], attrs.get_int("groups", 1), 0, 0};
    if (g.groups < 1 || g.c_in % g.groups != 0 || g.c_out % g.groups != 0) {
        throw InputError("groups " + std::to_string(g.groups) + " must divide C_in " + std::to_string(g.c_in) + " and C_out " +
                         std::to_string(g.c_out));
    }
    if (w.shape[1] != g.c_in / g.groups) {
        throw InputError("weight " + desc_str(w) + " expects " + std::to_string(w.shape[1]) + " channels per group, input has " +
                         std::to_string(g.c_in / g.groups));
    }
    std::int64_t out_hw[2] = {0, 0};
    const std::int64_t size[2] = {g.h, g.w}, kernel[2] = {g.kh, g.kw};
    for (std::size_t i = 0; i < 2; ++i) {
        const std::int64_t s = pair_at(stride, i, "stride"), p = pair_at(pad, i, "padding"), d = pair_at(dil, i, "dilation");
        if (s < 1 || d < 1 || p < 0) throw InputError("stride and dilation must be >= 1 and padding >= 0");
        const std::int64_t span = checked_add(checked_mul(d, kernel[i] - 1), 1, "kernel extent");
        const std::int64_t avail = checked_add(size[i], checked_mul(2, p), "padded size");
        if (avail < span) {
            throw InputError("kernel extent " + std::to_string(span) + " exceeds padded input " + std::to_string(avail));
        }
        out_hw[i] = (avail - span) / s + 1;
    }
    g.ho = out_hw[0];
    g.wo = out_hw[1];
    return g;
}

std::vector<TensorDesc> conv2d_infer(OpKind k, Inputs in, const Attrs& attrs) {
    require_matrix_dtype(k, in[0], "x");
    if (in[1].dtype != in[0].dtype) throw InputError("weight dtype differs from x: " + desc_str(in[1]));
    ConvGeometry g = conv_geometry(in, attrs);
    const DType out_dtype = matrix_output_dtype(in[0].dtype);
    if (in.size() == 3 && (in[2].shape != Shape{g.c_out} || in[2].dtype != out_dtype)) {
        throw InputError("bias must be " + desc_str(TensorDesc{{g.c_out}, out_dtype}) + ", got " + desc_str(in[2]));
    }
    return {TensorDesc{{g.n, g.c_out, g.ho, g.wo}, out_dtype}};
}

Work conv2d_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    ConvGeometry g = conv_geometry(in, attrs);
    const std::int64_t outputs = checked_mul(checked_mul(g.n, g.c_out), checked_mul(g.ho, g.wo), "outputs");
    const std::int64_t macs_per_output = checked_mul(g.c_in / g.groups, checked_mul(g.kh, g.kw), "MACs");
    Work w = io_bytes(in, out);  // ideal: input read once (no im2col expansion)
    w.matrix_flops = checked_mul(checked_mul(outputs, macs_per_output, "FLOPs"), 2, "FLOPs");
    if (in.size() == 3) w.vector_flops = outputs;
    return w;
}

}  // namespace

const OpRule& matmul_rule() {
    static const OpRule r{OpFamily::matrix, 2, 2, {"transpose_a", "transpose_b"}, matmul_infer, matmul_work};
    return r;
}

const OpRule& linear_rule() {
    static const OpRule r{OpFamily::matrix, 2, 3, {"weight_bits", "group_size", "out_dtype"}, linear_infer, linear_work};
    return r;
}

const OpRule& conv2d_rule() {
    static const OpRule r{OpFamily::matrix, 2, 3, {"stride", "padding", "dilation", "groups"}, conv2d_infer, conv2d_work};
    return r;
}

}  // namespace roofline

namespace roofline {
namespace {

// conv2d_grad_input(dy, weight) -> dx of attribute input_shape; conv2d_grad_weight(dy, x) -> dw of
// attribute weight_shape. Each is a convolution with the forward's multiply-add count.
TensorDesc shape_attr(const Attrs& attrs, const char* name, DType d) {
    TensorDesc t{attrs.require_ints(name), d};
    check_dims(t.shape);
    return t;
}

std::vector<TensorDesc> conv_grad_input_infer(OpKind, Inputs in, const Attrs& attrs) {
    const TensorDesc x = shape_attr(attrs, "input_shape", in[0].dtype);
    const TensorDesc fwd[2] = {x, in[1]};
    const ConvGeometry g = conv_geometry(fwd, attrs);
    if (in[0].shape != Shape{g.n, g.c_out, g.ho, g.wo})
        throw InputError("dy " + desc_str(in[0]) + " does not match the convolution's output");
    return {x};
}

std::vector<TensorDesc> conv_grad_weight_infer(OpKind, Inputs in, const Attrs& attrs) {
    const TensorDesc w = shape_attr(attrs, "weight_shape", in[0].dtype);
    const TensorDesc fwd[2] = {in[1], w};
    const ConvGeometry g = conv_geometry(fwd, attrs);
    if (in[0].shape != Shape{g.n, g.c_out, g.ho, g.wo})
        throw InputError("dy " + desc_str(in[0]) + " does not match the convolution's output");
    return {w};
}

Work conv_grad_work(OpKind k, Inputs in, std::span<const TensorDesc> out, const Attrs& attrs) {
    const bool for_input = k == OpKind::conv2d_grad_input;
    const TensorDesc fwd[2] = {for_input ? out[0] : in[1], for_input ? in[1] : out[0]};
    const ConvGeometry g = conv_geometry(fwd, attrs);
    const std::int64_t outputs = checked_mul(checked_mul(g.n, g.c_out), checked_mul(g.ho, g.wo), "outputs");
    Work w = io_bytes(in, out);
    w.matrix_flops = checked_mul(checked_mul(outputs, checked_mul(g.c_in / g.groups, checked_mul(g.kh, g.kw))), 2, "FLOPs");
    return w;
}

}  // namespace

const OpRule& conv2d_grad_input_rule() {
    static const OpRule r{OpFamily::matrix, 2, 2, {"stride", "padding", "dilation", "groups", "input_shape"}, conv_grad_input_infer,
                          conv_grad_work};
    return r;
}

const OpRule& conv2d_grad_weight_rule() {
    static const OpRule r{OpFamily::matrix, 2, 2, {"stride", "padding", "dilation", "groups", "weight_shape"}, conv_grad_weight_infer,
                          conv_grad_work};
    return r;
}

}  // namespace roofline
