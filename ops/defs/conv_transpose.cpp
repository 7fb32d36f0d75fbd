// conv_transpose2d(x [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW], bias [C_out]?) ->
// y [N, C_out, H_out, W_out] with H_out = (H - 1) stride - 2 padding + dilation (kH - 1) +
// output_padding + 1 (torch.nn.ConvTranspose2d, ONNX ConvTranspose in 2-d). It is the data gradient
// of the convolution from y's shape to x's with this weight, which is how cuDNN runs it (PyTorch's
// cudnn_convolution_transpose calls cudnnConvolutionBackwardData) and how this project's executor
// runs it (ops/defs/conv_transpose.cu calls conv2d_grad_input's implicit GEMM): so it is costed
// as conv2d_grad_input (KernelForm::conv_grad_input: M = N x output pixels, N = C_out per group),
// with the bias added per output element. output_padding is in [0, stride): the sizes for which
// this convolution maps y's shape back to x's exactly (PyTorch allows up to the dilation too; such
// a model is rejected here with the reason).
// Gradients (PyTorch's cudnn_convolution_transpose_backward): dx = conv2d(dy, weight) with the same
// stride, padding, dilation and groups; dweight = the convolution's weight gradient with the roles
// of x and dy swapped (conv2d_grad_weight(x, dy)); dbias = dy summed over N, H and W.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ops/checked.hpp"
#include "ops/op_def.hpp"

namespace roofline {
namespace {

struct Geometry {
    std::int64_t n, ci, h, w, co, kh, kw, groups, ho, wo;
    std::int64_t stride[2], pad[2], dil[2];
};

std::int64_t pair(const std::vector<std::int64_t>& v, std::size_t i, const char* name) {
    if (v.size() != 2) throw InputError(std::string("conv_transpose2d: attribute '") + name + "' must have 2 entries (h, w)");
    return v[i];
}

Geometry geometry(Inputs in, const Attrs& a) {
    const TensorDesc &x = in[0], &wt = in[1];
    if (x.rank() != 4 || wt.rank() != 4)
        throw InputError("conv_transpose2d: expects x[N, C_in, H, W] and weight[C_in, C_out/groups, kH, kW], got " + desc_str(x) + " and " +
                         desc_str(wt));
    Geometry g{x.shape[0], x.shape[1], x.shape[2], x.shape[3], 0, wt.shape[2], wt.shape[3], a.get_int("groups", 1), 0, 0, {}, {}, {}};
    if (g.groups < 1 || g.ci % g.groups != 0)
        throw InputError("conv_transpose2d: groups " + std::to_string(g.groups) + " must divide C_in " + std::to_string(g.ci));
    if (wt.shape[0] != g.ci)
        throw InputError("conv_transpose2d: weight " + desc_str(wt) + " must have C_in = " + std::to_string(g.ci) + " rows (x " +
                         desc_str(x) + ")");
    g.co = checked_mul(wt.shape[1], g.groups, "C_out");
    const auto st = a.get_ints("stride", {1, 1}), pd = a.get_ints("padding", {0, 0}), dl = a.get_ints("dilation", {1, 1}),
               op = a.get_ints("output_padding", {0, 0});
    const std::int64_t size[2] = {g.h, g.w}, kernel[2] = {g.kh, g.kw};
    std::int64_t out[2] = {0, 0};
    for (std::size_t i = 0; i < 2; ++i) {
        const std::int64_t s = pair(st, i, "stride"), p = pair(pd, i, "padding"), d = pair(dl, i, "dilation"),
                           o = pair(op, i, "output_padding");
        if (s < 1 || d < 1 || p < 0) throw InputError("conv_transpose2d: stride and dilation must be >= 1 and padding >= 0");
        if (o < 0 || o >= s)
            throw InputError("conv_transpose2d: output_padding " + std::to_string(o) + " must be in [0, stride " + std::to_string(s) + ")");
        g.stride[i] = s, g.pad[i] = p, g.dil[i] = d;
        const std::int64_t full = checked_add(checked_mul(size[i] - 1, s, "output size"), checked_add(checked_mul(d, kernel[i] - 1), 1));
        out[i] = checked_add(full, o - 2 * p, "output size");
        if (size[i] < 1 || out[i] < 1)
            throw InputError("conv_transpose2d: padding " + std::to_string(p) + " leaves no output of x " + desc_str(x) +
                             " (the full output has " + std::to_string(full) + ")");
    }
    g.ho = out[0], g.wo = out[1];
    return g;
}

std::vector<TensorDesc> conv_transpose2d_infer(OpKind k, Inputs in, const Attrs& a) {
    require_floating(k, in[0], "x");
    if (in[1].dtype != in[0].dtype) throw InputError("conv_transpose2d: weight dtype differs from x: " + desc_str(in[1]));
    const Geometry g = geometry(in, a);
    const TensorDesc y{{g.n, g.co, g.ho, g.wo}, in[0].dtype};
    (void)y.bytes();
    if (in.size() == 3 && (in[2].shape != Shape{g.co} || in[2].dtype != in[0].dtype))
        throw InputError("conv_transpose2d: bias must be " + desc_str(TensorDesc{{g.co}, in[0].dtype}) + ", got " + desc_str(in[2]));
    return {y};
}

// The data gradient's multiply-adds: each input element meets every weight of its group once,
// 2 N C_in H W (C_out / groups) kH kW; the bias one add per output element. Bytes: x, the weight
// and the bias read once, y written once (ideal: no col2im buffer).
Work conv_transpose2d_work(OpKind, Inputs in, std::span<const TensorDesc> out, const Attrs& a) {
    const Geometry g = geometry(in, a);
    Work w = io_bytes(in, out);
    const std::int64_t inputs = checked_mul(checked_mul(g.n, g.ci), checked_mul(g.h, g.w), "inputs");
    w.matrix_flops = checked_mul(checked_mul(inputs, checked_mul(g.co / g.groups, checked_mul(g.kh, g.kw)), "FLOPs"), 2, "FLOPs");
    if (in.size() == 3) w.vector_flops = out[0].numel();
    return w;
}

// Scatter form: x[n, c, i, j] adds x * w[c, o, p, q] to y[n, group(c) * C_out/groups + o,
// i stride - padding + p dilation, j stride - padding + q dilation] where that lies in y.
void conv_transpose2d_reference(const std::vector<const HostTensor*>& in, const Attrs& a, std::vector<HostTensor>& out) {
    const TensorDesc descs[2] = {in[0]->desc, in[1]->desc};
    const Geometry g = geometry(descs, a);
    const std::int64_t cig = g.ci / g.groups, cog = g.co / g.groups;
    const std::vector<double>&x = in[0]->data, &wt = in[1]->data;
    std::vector<double>& y = out[0].data;
    for (std::int64_t n = 0; n < g.n; ++n)
        for (std::int64_t c = 0; c < g.ci; ++c)
            for (std::int64_t i = 0; i < g.h; ++i)
                for (std::int64_t j = 0; j < g.w; ++j) {
                    const double v = x[static_cast<std::size_t>(((n * g.ci + c) * g.h + i) * g.w + j)];
                    for (std::int64_t o = 0; o < cog; ++o)
                        for (std::int64_t p = 0; p < g.kh; ++p)
                            for (std::int64_t q = 0; q < g.kw; ++q) {
                                const std::int64_t oh = i * g.stride[0] - g.pad[0] + p * g.dil[0],
                                                   ow = j * g.stride[1] - g.pad[1] + q * g.dil[1];
                                if (oh < 0 || oh >= g.ho || ow < 0 || ow >= g.wo) continue;
                                const std::int64_t oc = (c / cig) * cog + o;
                                y[static_cast<std::size_t>(((n * g.co + oc) * g.ho + oh) * g.wo + ow)] +=
                                    v * wt[static_cast<std::size_t>(((c * cog + o) * g.kh + p) * g.kw + q)];
                            }
                }
    if (in.size() == 3)
        for (std::size_t i = 0; i < y.size(); ++i)
            y[i] += in[2]->data[(i / static_cast<std::size_t>(g.ho * g.wo)) % static_cast<std::size_t>(g.co)];
}

std::vector<TensorRef> conv_transpose2d_grad(GradBuilder& b, const GradArgs& a) {
    std::vector<TensorRef> g(a.inputs.size(), kNoGrad);
    Attrs conv;
    for (const char* k : {"stride", "padding", "dilation", "groups"})
        if (const AttrValue* v = a.attrs.find(k)) conv.set(k, *v);
    const TensorRef dy = a.output_grads[0];
    if (a.needs[0]) g[0] = b.one(OpKind::conv2d, {dy, a.inputs[1]}, conv);
    if (a.needs[1]) {
        Attrs at = conv;
        at.set("weight_shape", b.desc(a.inputs[1]).shape);
        g[1] = b.one(OpKind::conv2d_grad_weight, {a.inputs[0], dy}, at);
    }
    if (a.inputs.size() == 3 && a.needs[2]) g[2] = b.one(OpKind::reduce_sum, {dy}, attr("axes", std::vector<std::int64_t>{0, 2, 3}));
    return g;
}

}  // namespace

ROOFLINE_OP_DEF(conv_transpose2d) {
    static const OpDefinition d{
        .rule = {OpFamily::matrix,
                 2,
                 3,
                 {"stride", "padding", "dilation", "groups", "output_padding"},
                 conv_transpose2d_infer,
                 conv_transpose2d_work},
        // cuDNN's data-gradient kernels; eager PyTorch dispatches conv_transpose2d -> convolution ->
        // _convolution -> cudnn_convolution_transpose: 3 calls beyond its own, as conv2d's
        .traits = {.kernel = KernelForm::conv_grad_input, .eager_extra_calls = 3, .keep_when_recomputing = true},
        .grad = conv_transpose2d_grad,
        .reference = conv_transpose2d_reference,
        // stride 2 with output_padding 1 and a bias (a decoder's 2x upsampling); grouped, padded
        .examples = {{{{1, 2, 3, 3}, {2, 3, 3, 3}, {3}},
                      attr2("stride", std::vector<std::int64_t>{2, 2}, "output_padding", std::vector<std::int64_t>{1, 1})},
                     {{{2, 4, 3, 4}, {4, 1, 2, 3}}, attr2("groups", std::int64_t{2}, "padding", std::vector<std::int64_t>{1, 1})}},
    };
    return d;
}

}  // namespace roofline
