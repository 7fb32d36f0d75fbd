#include "ops/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

#include "ops/error.hpp"
#include "ops/index_map.hpp"
#include "ops/op_def.hpp"
#include "ops/op_rule.hpp"
#include "ops/pointwise_math.hpp"

namespace roofline {
namespace {

using Coords = std::vector<std::int64_t>;

std::vector<std::int64_t> strides_of(const Shape& s) {
    std::vector<std::int64_t> st(s.size(), 1);
    for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
    return st;
}

Coords unravel(std::int64_t idx, const Shape& s) {
    Coords c(s.size(), 0);
    for (std::size_t i = s.size(); i-- > 0;) {
        if (s[i] > 0) {
            c[i] = idx % s[i];
            idx /= s[i];
        }
    }
    return c;
}

// Offset into a tensor of shape s broadcast (right-aligned) against coordinates of a larger shape.
std::int64_t bcast_offset(const Shape& s, const Coords& c) {
    const std::size_t lead = c.size() - s.size();
    std::int64_t off = 0;
    for (std::size_t i = 0; i < s.size(); ++i) off = off * s[i] + (s[i] == 1 ? 0 : c[lead + i]);
    return off;
}

HostTensor make(const TensorDesc& d, double fill = 0.0) {
    return HostTensor{d, std::vector<double>(static_cast<std::size_t>(d.numel()), fill)};
}

struct AxisSplit {
    std::int64_t outer, n, inner;
};

AxisSplit split_at(const Shape& s, std::int64_t axis) {
    AxisSplit a{1, s[static_cast<std::size_t>(axis)], 1};
    for (std::int64_t i = 0; i < axis; ++i) a.outer *= s[static_cast<std::size_t>(i)];
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < s.size(); ++i) a.inner *= s[i];
    return a;
}

double unary(OpKind k, double x, const Attrs& a) {
    // the scalar operand: scale's factor, shift's offset, pow's exponent
    const double factor = k == OpKind::scale   ? a.get_double("factor", 1.0)
                          : k == OpKind::shift ? a.get_double("offset", 0.0)
                          : k == OpKind::pow   ? a.get_double("exponent", 1.0)
                                               : 1.0;
    const bool tanh_form = k != OpKind::gelu || a.get_string("approximate", "tanh") == "tanh";
    double y = 0;
    if (!unary_value(k, x, factor, tanh_form, y)) throw InputError("reference: not a unary op");
    return y;
}

// d unary / dx times dy, from the saved tensor (x, or y for sigmoid/tanh/exp/sqrt/rsqrt); of is
// parse_op of the attribute "of" (nullopt when it names no op).
double unary_grad_value(const std::string& of, std::optional<OpKind> of_kind, const Attrs& a, double dy, double s) {
    const bool tanh_form = of_kind != OpKind::gelu || a.get_string("approximate", "tanh") == "tanh";
    double dx = 0;
    if (!of_kind || !unary_grad_math(*of_kind, tanh_form, dy, s, dx)) throw InputError("reference: unary_grad of '" + of + "'");
    return dx;
}

double binary(OpKind k, double a, double b) {
    switch (k) {
        case OpKind::add: return a + b;
        case OpKind::sub: return a - b;
        case OpKind::mul: return a * b;
        case OpKind::div: return a / b;
        case OpKind::maximum: return std::max(a, b);
        case OpKind::pow: return std::pow(a, b);  // a tensor exponent
        default: throw InputError("reference: not a binary op");
    }
}

// Batched matmul with broadcasting and transposes.
void matmul(const HostTensor& A, const HostTensor& B, bool ta, bool tb, HostTensor& Y) {
    const Shape& ys = Y.desc.shape;
    const std::size_t r = ys.size();
    const std::int64_t M = ys[r - 2], N = ys[r - 1];
    const std::int64_t K = ta ? A.desc.shape[A.desc.shape.size() - 2] : A.desc.shape.back();
    const Shape yb(ys.begin(), ys.end() - 2), ab(A.desc.shape.begin(), A.desc.shape.end() - 2),
        bb(B.desc.shape.begin(), B.desc.shape.end() - 2);
    const std::int64_t batches = numel(yb);
    for (std::int64_t bi = 0; bi < batches; ++bi) {
        const Coords c = unravel(bi, yb);
        const std::int64_t ao = bcast_offset(ab, c) * M * K, bo = bcast_offset(bb, c) * K * N;
        for (std::int64_t m = 0; m < M; ++m) {
            for (std::int64_t n = 0; n < N; ++n) {
                double acc = 0;
                for (std::int64_t k = 0; k < K; ++k) {
                    const double av = A.data[static_cast<std::size_t>(ao + (ta ? k * M + m : m * K + k))];
                    const double bv = B.data[static_cast<std::size_t>(bo + (tb ? n * K + k : k * N + n))];
                    acc += av * bv;
                }
                Y.data[static_cast<std::size_t>((bi * M + m) * N + n)] = acc;
            }
        }
    }
}

struct Conv {
    std::int64_t n, ci, h, w, co, kh, kw, groups, ho, wo, sh, sw, ph, pw, dh, dw;
};

Conv conv_of(const Shape& x, const Shape& wt, const Shape& y, const Attrs& a) {
    const auto st = a.get_ints("stride", {1, 1}), pd = a.get_ints("padding", {0, 0}), dl = a.get_ints("dilation", {1, 1});
    return Conv{x[0], x[1], x[2], x[3], wt[0], wt[2], wt[3], a.get_int("groups", 1), y[2], y[3], st[0], st[1], pd[0], pd[1], dl[0], dl[1]};
}

// Calls f(x_index, w_index, y_index) for every multiply-add of a convolution.
template <class F>
void for_each_conv_mac(const Conv& c, F f) {
    const std::int64_t cig = c.ci / c.groups, cog = c.co / c.groups;
    for (std::int64_t n = 0; n < c.n; ++n)
        for (std::int64_t o = 0; o < c.co; ++o) {
            const std::int64_t g = o / cog;
            for (std::int64_t i = 0; i < c.ho; ++i)
                for (std::int64_t j = 0; j < c.wo; ++j)
                    for (std::int64_t ic = 0; ic < cig; ++ic)
                        for (std::int64_t p = 0; p < c.kh; ++p)
                            for (std::int64_t q = 0; q < c.kw; ++q) {
                                const std::int64_t hi = i * c.sh - c.ph + p * c.dh, wi = j * c.sw - c.pw + q * c.dw;
                                if (hi < 0 || hi >= c.h || wi < 0 || wi >= c.w) continue;
                                const std::int64_t xc = g * cig + ic;
                                f(((n * c.ci + xc) * c.h + hi) * c.w + wi, ((o * cig + ic) * c.kh + p) * c.kw + q,
                                  ((n * c.co + o) * c.ho + i) * c.wo + j);
                            }
        }
}

std::vector<std::int64_t> reduce_axes(const Shape& s, const Attrs& a) {
    std::vector<std::int64_t> axes;
    if (!a.has("axes")) {
        for (std::size_t i = 0; i < s.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    } else {
        for (std::int64_t ax : a.get_ints("axes", {})) axes.push_back(normalize_axis(ax, static_cast<std::int64_t>(s.size())));
    }
    return axes;
}

// Offset of an input element's reduction target in the keepdim-shaped output.
std::int64_t reduced_offset(const Coords& c, const Shape& s, const std::vector<std::int64_t>& axes) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool reduced = std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end();
        off = off * (reduced ? 1 : s[i]) + (reduced ? 0 : c[i]);
    }
    return off;
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

void softmax_rows(const std::vector<double>& x, std::vector<double>& y, AxisSplit s) {
    for (std::int64_t o = 0; o < s.outer; ++o)
        for (std::int64_t i = 0; i < s.inner; ++i) {
            double mx = -std::numeric_limits<double>::infinity(), sum = 0;
            for (std::int64_t j = 0; j < s.n; ++j) mx = std::max(mx, x[at((o * s.n + j) * s.inner + i)]);
            for (std::int64_t j = 0; j < s.n; ++j) sum += std::exp(x[at((o * s.n + j) * s.inner + i)] - mx);
            for (std::int64_t j = 0; j < s.n; ++j)
                y[at((o * s.n + j) * s.inner + i)] = std::exp(x[at((o * s.n + j) * s.inner + i)] - mx) / sum;
        }
}

void causal(std::vector<double>& x, const Shape& s, double value) {
    const std::int64_t sq = s[s.size() - 2], sk = s.back();
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(x.size()); ++i) {
        const std::int64_t col = i % sk, row = (i / sk) % sq;
        if (col > row) x[at(i)] = value;
    }
}

// max/avg pooling over [N, C, H, W]; padding is -inf for max and excluded from the average unless
// count_include_pad (ONNX AveragePool's default, torch's is true; the importer sets it).
void pool2d(OpKind k, const HostTensor& x, const Attrs& a, HostTensor& y) {
    const auto pair = [&](const char* n, std::int64_t f) { return a.get_ints(n, {f, f}); };
    const auto kernel = pair("kernel", 1), stride = pair("stride", 1), pad = pair("padding", 0), dil = pair("dilation", 1);
    const bool include_pad = a.get_bool("count_include_pad", false);
    const Shape& xs = x.desc.shape;
    const Shape& ys = y.desc.shape;
    for (std::int64_t i = 0; i < y.desc.numel(); ++i) {
        const Coords c = unravel(i, ys);
        double acc = k == OpKind::max_pool2d ? -std::numeric_limits<double>::infinity() : 0.0;
        std::int64_t count = 0;
        for (std::int64_t r = 0; r < kernel[0]; ++r)
            for (std::int64_t s = 0; s < kernel[1]; ++s) {
                const std::int64_t h = c[2] * stride[0] - pad[0] + r * (k == OpKind::max_pool2d ? dil[0] : 1);
                const std::int64_t w = c[3] * stride[1] - pad[1] + s * (k == OpKind::max_pool2d ? dil[1] : 1);
                const bool inside = h >= 0 && h < xs[2] && w >= 0 && w < xs[3];
                const bool in_padded = h < xs[2] + pad[0] && w < xs[3] + pad[1];  // ceil-mode windows may overhang
                if (inside) {
                    const double v = x.data[at(((c[0] * xs[1] + c[1]) * xs[2] + h) * xs[3] + w)];
                    acc = k == OpKind::max_pool2d ? std::max(acc, v) : acc + v;
                }
                if (inside || (include_pad && in_padded)) ++count;
            }
        y.data[at(i)] = k == OpKind::max_pool2d ? acc : acc / static_cast<double>(std::max<std::int64_t>(count, 1));
    }
}

// The pooling gradients, walking the same windows as pool2d: max sends each dy to the first position
// holding its window's maximum (recomputed from x); avg spreads dy / count over the window.
void pool2d_grad(OpKind k, const HostTensor* x, const HostTensor& dy, const Attrs& a, HostTensor& dx) {
    const bool max = k == OpKind::max_pool2d_grad;
    const auto pair = [&](const char* n, std::int64_t f) { return a.get_ints(n, {f, f}); };
    const auto kernel = pair("kernel", 1), stride = pair("stride", 1), pad = pair("padding", 0), dil = pair("dilation", 1);
    const bool include_pad = a.get_bool("count_include_pad", false);
    const Shape& xs = dx.desc.shape;
    const Shape& ys = dy.desc.shape;
    for (std::int64_t i = 0; i < dy.desc.numel(); ++i) {
        const Coords c = unravel(i, ys);
        double best = -std::numeric_limits<double>::infinity();
        std::int64_t best_at = -1, count = 0;
        std::vector<std::int64_t> window;
        for (std::int64_t r = 0; r < kernel[0]; ++r)
            for (std::int64_t s = 0; s < kernel[1]; ++s) {
                const std::int64_t h = c[2] * stride[0] - pad[0] + r * (max ? dil[0] : 1);
                const std::int64_t w = c[3] * stride[1] - pad[1] + s * (max ? dil[1] : 1);
                const bool inside = h >= 0 && h < xs[2] && w >= 0 && w < xs[3];
                const bool in_padded = h < xs[2] + pad[0] && w < xs[3] + pad[1];
                if (inside) {
                    const std::int64_t off = ((c[0] * xs[1] + c[1]) * xs[2] + h) * xs[3] + w;
                    window.push_back(off);
                    if (max && (best_at < 0 || x->data[at(off)] > best)) {
                        best = x->data[at(off)];
                        best_at = off;
                    }
                }
                if (inside || (include_pad && in_padded)) ++count;
            }
        if (max) {
            if (best_at >= 0) dx.data[at(best_at)] += dy.data[at(i)];
        } else {
            for (std::int64_t off : window) dx.data[at(off)] += dy.data[at(i)] / static_cast<double>(std::max<std::int64_t>(count, 1));
        }
    }
}

std::vector<HostTensor> run(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& a, const std::vector<TensorDesc>& out) {
    std::vector<HostTensor> y;
    for (const TensorDesc& d : out) y.push_back(make(d));
    auto& Y = y[0].data;
    const auto& X = in.empty() ? Y : in[0]->data;
    switch (k) {
        case OpKind::matmul: matmul(*in[0], *in[1], a.get_bool("transpose_a", false), a.get_bool("transpose_b", false), y[0]); break;
        case OpKind::linear: {
            if (a.get_int("weight_bits", 8) == 4) throw InputError("linear: the reference executor does not unpack int4 weights");
            const std::int64_t fi = in[1]->desc.shape[1], fo = in[1]->desc.shape[0], rows = in[0]->desc.numel() / fi;
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t o = 0; o < fo; ++o) {
                    double acc = in.size() == 3 ? in[2]->data[at(o)] : 0;
                    for (std::int64_t i = 0; i < fi; ++i) acc += X[at(r * fi + i)] * in[1]->data[at(o * fi + i)];
                    Y[at(r * fo + o)] = acc;
                }
            break;
        }
        case OpKind::conv2d: {
            const Conv c = conv_of(in[0]->desc.shape, in[1]->desc.shape, out[0].shape, a);
            for_each_conv_mac(c, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { Y[at(yi)] += X[at(xi)] * in[1]->data[at(wi)]; });
            if (in.size() == 3) {
                for (std::int64_t i = 0; i < out[0].numel(); ++i) Y[at(i)] += in[2]->data[at((i / (c.ho * c.wo)) % c.co)];
            }
            break;
        }
        case OpKind::relu:
        case OpKind::gelu:
        case OpKind::neg:
        case OpKind::scale:
        case OpKind::shift:
        case OpKind::pow:
#define ROOFLINE_UNARY(name, ...) case OpKind::name:
#include "ops/unary_ops.def"
#undef ROOFLINE_UNARY
            if (k == OpKind::pow && in.size() == 2) {
                for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                    const Coords c = unravel(i, out[0].shape);
                    Y[at(i)] =
                        binary(k, in[0]->data[at(bcast_offset(in[0]->desc.shape, c))], in[1]->data[at(bcast_offset(in[1]->desc.shape, c))]);
                }
                break;
            }
            for (std::size_t i = 0; i < X.size(); ++i) Y[i] = unary(k, X[i], a);
            break;
        case OpKind::add:
        case OpKind::sub:
        case OpKind::mul:
        case OpKind::div:
        case OpKind::maximum:
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, out[0].shape);
                Y[at(i)] =
                    binary(k, in[0]->data[at(bcast_offset(in[0]->desc.shape, c))], in[1]->data[at(bcast_offset(in[1]->desc.shape, c))]);
            }
            break;
        case OpKind::softmax: softmax_rows(X, Y, split_at(out[0].shape, normalize_axis(a.get_int("axis", -1), out[0].rank()))); break;
        case OpKind::layernorm:
        case OpKind::rmsnorm: {
            const std::int64_t d = out[0].shape.back(), rows = out[0].numel() / std::max<std::int64_t>(d, 1);
            const double eps = a.get_double("eps", 1e-5);
            for (std::int64_t r = 0; r < rows; ++r) {
                double mean = 0, sq = 0;
                for (std::int64_t j = 0; j < d; ++j) mean += X[at(r * d + j)];
                mean /= static_cast<double>(d);
                if (k == OpKind::rmsnorm) mean = 0;
                for (std::int64_t j = 0; j < d; ++j) sq += (X[at(r * d + j)] - mean) * (X[at(r * d + j)] - mean);
                const double rstd = 1 / std::sqrt(sq / static_cast<double>(d) + eps);
                for (std::int64_t j = 0; j < d; ++j) {
                    double v = (X[at(r * d + j)] - mean) * rstd;
                    if (in.size() > 1) v *= in[1]->data[at(j)];
                    if (in.size() > 2) v += in[2]->data[at(j)];
                    Y[at(r * d + j)] = v;
                }
            }
            break;
        }
        case OpKind::reduce_sum:
        case OpKind::reduce_mean:
        case OpKind::reduce_max: {
            const Shape& s = in[0]->desc.shape;
            const auto axes = reduce_axes(s, a);
            if (k == OpKind::reduce_max) std::fill(Y.begin(), Y.end(), -std::numeric_limits<double>::infinity());
            for (std::int64_t i = 0; i < in[0]->desc.numel(); ++i) {
                double& t = Y[at(reduced_offset(unravel(i, s), s, axes))];
                t = k == OpKind::reduce_max ? std::max(t, X[at(i)]) : t + X[at(i)];
            }
            if (k == OpKind::reduce_mean) {
                const double n = static_cast<double>(in[0]->desc.numel()) / static_cast<double>(std::max<std::int64_t>(out[0].numel(), 1));
                for (double& v : Y) v /= n;
            }
            break;
        }
        case OpKind::embedding: {
            const std::int64_t d = in[0]->desc.shape[1], v = in[0]->desc.shape[0];
            for (std::int64_t i = 0; i < in[1]->desc.numel(); ++i) {
                const auto row = static_cast<std::int64_t>(in[1]->data[at(i)]);
                if (row < 0 || row >= v) throw InputError("reference: embedding index " + std::to_string(row) + " out of range");
                for (std::int64_t j = 0; j < d; ++j) Y[at(i * d + j)] = X[at(row * d + j)];
            }
            break;
        }
        case OpKind::transpose:
        case OpKind::permute: {
            const Shape& s = in[0]->desc.shape;
            std::vector<std::int64_t> perm(s.size());
            std::iota(perm.begin(), perm.end(), 0);
            if (k == OpKind::transpose) {
                std::swap(perm[at(normalize_axis(a.get_int("dim0", -2), static_cast<std::int64_t>(s.size())))],
                          perm[at(normalize_axis(a.get_int("dim1", -1), static_cast<std::int64_t>(s.size())))]);
            } else {
                const auto p = a.get_ints("perm", {});
                for (std::size_t i = 0; i < p.size(); ++i) perm[i] = normalize_axis(p[i], static_cast<std::int64_t>(s.size()));
            }
            const auto st = strides_of(s);
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, out[0].shape);
                std::int64_t off = 0;
                for (std::size_t d = 0; d < c.size(); ++d) off += c[d] * st[at(perm[d])];
                Y[at(i)] = X[at(off)];
            }
            break;
        }
        case OpKind::reshape:
        case OpKind::expand:
        case OpKind::cast:
            if (k == OpKind::expand) {
                for (std::int64_t i = 0; i < out[0].numel(); ++i)
                    Y[at(i)] = X[at(bcast_offset(in[0]->desc.shape, unravel(i, out[0].shape)))];
            } else {
                for (std::size_t i = 0; i < X.size(); ++i) Y[i] = k == OpKind::cast ? round_to(X[i], out[0].dtype) : X[i];
            }
            break;
        case OpKind::concat:
        case OpKind::split: {
            const bool cat = k == OpKind::concat;
            const Shape& whole = cat ? out[0].shape : in[0]->desc.shape;
            const auto axis = normalize_axis(a.get_int("axis", 0), static_cast<std::int64_t>(whole.size()));
            const AxisSplit ws = split_at(whole, axis);
            std::int64_t base = 0;
            const std::size_t parts = cat ? in.size() : out.size();
            for (std::size_t p = 0; p < parts; ++p) {
                const Shape& ps = cat ? in[p]->desc.shape : out[p].shape;
                const std::int64_t n = ps[at(axis)];
                for (std::int64_t o = 0; o < ws.outer; ++o)
                    for (std::int64_t j = 0; j < n; ++j)
                        for (std::int64_t i = 0; i < ws.inner; ++i) {
                            const std::int64_t wi = (o * ws.n + base + j) * ws.inner + i, pi = (o * n + j) * ws.inner + i;
                            if (cat)
                                Y[at(wi)] = in[p]->data[at(pi)];
                            else
                                y[p].data[at(pi)] = X[at(wi)];
                        }
                base += n;
            }
            break;
        }
        case OpKind::dropout: {
            const double p = a.get_double("p", 0.1);
            for (std::size_t i = 0; i < X.size(); ++i) {
                const bool kept = dropout_keep(static_cast<std::int64_t>(i), p);  // ops/pointwise_math.hpp
                y[1].data[i] = kept ? 1 : 0;
                Y[i] = kept ? X[i] / (1 - p) : 0;
            }
            break;
        }
        case OpKind::causal_mask:
            Y = X;
            causal(Y, out[0].shape, a.get_double("value", -std::numeric_limits<double>::infinity()));
            break;
        case OpKind::cross_entropy:
        case OpKind::cross_entropy_grad: {
            const HostTensor& L = *in[0];
            const std::int64_t v = L.desc.shape.back(), rows = L.desc.numel() / v;
            const std::string red = a.get_string("reduction", "mean");
            std::vector<double> p(at(v));
            for (std::int64_t r = 0; r < rows; ++r) {
                double mx = -std::numeric_limits<double>::infinity(), sum = 0;
                for (std::int64_t j = 0; j < v; ++j) mx = std::max(mx, L.data[at(r * v + j)]);
                for (std::int64_t j = 0; j < v; ++j) sum += std::exp(L.data[at(r * v + j)] - mx);
                const auto t = static_cast<std::int64_t>(in[1]->data[at(r)]);
                if (t < 0 || t >= v) throw InputError("reference: cross_entropy target " + std::to_string(t) + " out of range");
                if (k == OpKind::cross_entropy) {
                    const double loss = std::log(sum) + mx - L.data[at(r * v + t)];
                    if (red == "none")
                        Y[at(r)] = loss;
                    else
                        Y[0] += red == "mean" ? loss / static_cast<double>(rows) : loss;
                } else {
                    const double d = in[2]->data[at(red == "none" ? r : 0)] / (red == "mean" ? static_cast<double>(rows) : 1.0);
                    for (std::int64_t j = 0; j < v; ++j) {
                        Y[at(r * v + j)] = (std::exp(L.data[at(r * v + j)] - mx) / sum - (j == t ? 1.0 : 0.0)) * d;
                    }
                }
            }
            break;
        }
        case OpKind::attention: {
            const Shape& qs = in[0]->desc.shape;
            const std::int64_t sq = qs[qs.size() - 2], d = qs.back(), sk = in[1]->desc.shape[in[1]->desc.shape.size() - 2];
            Shape ss = qs;
            ss.back() = sk;
            HostTensor s = make(TensorDesc{ss, in[0]->desc.dtype});
            matmul(*in[0], *in[1], false, true, s);
            const double scale = a.get_double("scale", 1.0 / std::sqrt(static_cast<double>(d)));
            for (double& v : s.data) v *= scale;
            if (a.get_bool("causal", false)) causal(s.data, ss, -std::numeric_limits<double>::infinity());
            HostTensor p = s;
            softmax_rows(s.data, p.data, split_at(ss, static_cast<std::int64_t>(ss.size()) - 1));
            matmul(p, *in[2], false, false, y[0]);
            (void)sq;
            break;
        }
        case OpKind::unary_grad: {
            const std::string of = a.get_string("of", "");
            const std::optional<OpKind> of_kind = parse_op(of);
            for (std::size_t i = 0; i < X.size(); ++i) Y[i] = unary_grad_value(of, of_kind, a, X[i], in[1]->data[i]);
            break;
        }
        case OpKind::maximum_grad:
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, out[0].shape);
                const bool first =
                    in[1]->data[at(bcast_offset(in[1]->desc.shape, c))] >= in[2]->data[at(bcast_offset(in[2]->desc.shape, c))];
                y[0].data[at(i)] = first ? X[at(i)] : 0;
                y[1].data[at(i)] = first ? 0 : X[at(i)];
            }
            break;
        case OpKind::softmax_grad: {
            const AxisSplit s = split_at(out[0].shape, normalize_axis(a.get_int("axis", -1), out[0].rank()));
            const auto& yv = in[1]->data;
            for (std::int64_t o = 0; o < s.outer; ++o)
                for (std::int64_t i = 0; i < s.inner; ++i) {
                    double dot = 0;
                    for (std::int64_t j = 0; j < s.n; ++j) dot += X[at((o * s.n + j) * s.inner + i)] * yv[at((o * s.n + j) * s.inner + i)];
                    for (std::int64_t j = 0; j < s.n; ++j) {
                        const std::int64_t e = (o * s.n + j) * s.inner + i;
                        Y[at(e)] = yv[at(e)] * (X[at(e)] - dot);
                    }
                }
            break;
        }
        case OpKind::layernorm_grad:
        case OpKind::rmsnorm_grad: {
            const bool rms = k == OpKind::rmsnorm_grad;
            const auto& x = in[1]->data;
            const std::int64_t d = out[0].shape.back(), rows = out[0].numel() / std::max<std::int64_t>(d, 1);
            const double eps = a.get_double("eps", 1e-5);
            for (std::int64_t r = 0; r < rows; ++r) {
                double mean = 0, sq = 0;
                for (std::int64_t j = 0; j < d; ++j) mean += x[at(r * d + j)];
                mean = rms ? 0 : mean / static_cast<double>(d);
                for (std::int64_t j = 0; j < d; ++j) sq += (x[at(r * d + j)] - mean) * (x[at(r * d + j)] - mean);
                const double rstd = 1 / std::sqrt(sq / static_cast<double>(d) + eps);
                double mg = 0, mgx = 0;
                for (std::int64_t j = 0; j < d; ++j) {
                    const double g = X[at(r * d + j)] * (in.size() > 2 ? in[2]->data[at(j)] : 1.0);
                    mg += g;
                    mgx += g * (x[at(r * d + j)] - mean) * rstd;
                }
                mg /= static_cast<double>(d);
                mgx /= static_cast<double>(d);
                for (std::int64_t j = 0; j < d; ++j) {
                    const double xh = (x[at(r * d + j)] - mean) * rstd;
                    const double g = X[at(r * d + j)] * (in.size() > 2 ? in[2]->data[at(j)] : 1.0);
                    Y[at(r * d + j)] = rstd * (g - (rms ? 0 : mg) - xh * mgx);
                    if (y.size() > 1) y[1].data[at(j)] += X[at(r * d + j)] * xh;
                    if (y.size() > 2) y[2].data[at(j)] += X[at(r * d + j)];
                }
            }
            break;
        }
        case OpKind::dropout_grad: {
            const double p = a.get_double("p", 0.1);
            for (std::size_t i = 0; i < X.size(); ++i) Y[i] = X[i] * in[1]->data[i] / (1 - p);
            break;
        }
        case OpKind::embedding_grad: {
            const std::int64_t d = out[0].shape[1];
            for (std::int64_t i = 0; i < in[1]->desc.numel(); ++i) {
                const auto row = static_cast<std::int64_t>(in[1]->data[at(i)]);
                for (std::int64_t j = 0; j < d; ++j) Y[at(row * d + j)] += X[at(i * d + j)];
            }
            break;
        }
        case OpKind::conv2d_grad_input: {
            const Conv c = conv_of(out[0].shape, in[1]->desc.shape, in[0]->desc.shape, a);
            for_each_conv_mac(c, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { Y[at(xi)] += X[at(yi)] * in[1]->data[at(wi)]; });
            break;
        }
        case OpKind::conv2d_grad_weight: {
            const Conv c = conv_of(in[1]->desc.shape, out[0].shape, in[0]->desc.shape, a);
            for_each_conv_mac(c, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) { Y[at(wi)] += X[at(yi)] * in[1]->data[at(xi)]; });
            break;
        }
        case OpKind::reduce_max_grad: {
            const Shape& s = in[1]->desc.shape;
            const auto axes = reduce_axes(s, a);
            for (std::int64_t i = 0; i < in[1]->desc.numel(); ++i) {
                const std::int64_t o = reduced_offset(unravel(i, s), s, axes);
                Y[at(i)] = in[1]->data[at(i)] == in[2]->data[at(o)] ? X[at(o)] : 0;
            }
            break;
        }
        case OpKind::fill: std::fill(Y.begin(), Y.end(), a.get_double("value", 0.0)); break;
        case OpKind::where:
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, out[0].shape);
                const bool take_a = X[at(bcast_offset(in[0]->desc.shape, c))] != 0;
                const HostTensor& src = *in[take_a ? 1 : 2];
                Y[at(i)] = src.data[at(bcast_offset(src.desc.shape, c))];
            }
            break;
        case OpKind::slice: {
            const auto plan = slice_plan(in[0]->desc, a);
            const auto st = strides_of(in[0]->desc.shape);
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, out[0].shape);
                std::int64_t off = 0;
                for (std::size_t d = 0; d < c.size(); ++d) off += (plan[d][0] + c[d] * plan[d][1]) * st[d];
                Y[at(i)] = X[at(off)];
            }
            break;
        }
        case OpKind::pad: {
            const auto plan = pad_plan(in[0]->desc, a);
            const PadMode mode = parse_pad_mode(a.get_string("mode", "constant"));
            const double value = round_to(a.get_double("value", 0.0), out[0].dtype);  // what the tensor can hold
            const auto st = strides_of(in[0]->desc.shape);
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, out[0].shape);
                std::int64_t off = 0;
                bool inside = true;
                for (std::size_t d = 0; d < c.size() && inside; ++d) {
                    const std::int64_t s = pad_source(mode, c[d] - plan[d][0], in[0]->desc.shape[d]);
                    inside = s >= 0;
                    off += s * st[d];
                }
                Y[at(i)] = inside ? X[at(off)] : value;
            }
            break;
        }
        case OpKind::resize: {
            const Shape& xs = in[0]->desc.shape;
            const Shape& ys = out[0].shape;
            const auto st = strides_of(xs);
            const bool linear = a.get_string("mode", "nearest") == "linear";
            const ResizeCoord coord = parse_resize_coord(a.get_string("coordinate_transformation_mode", "half_pixel"));
            const NearestMode nm = parse_nearest_mode(a.get_string("nearest_mode", "round_prefer_floor"));
            for (std::int64_t i = 0; i < out[0].numel(); ++i) {
                const Coords c = unravel(i, ys);
                // per axis: the two neighbours and the weight of the upper one (nearest: one neighbour)
                std::vector<LinearTaps> taps(c.size());
                for (std::size_t d = 0; d < c.size(); ++d) {
                    if (xs[d] == ys[d]) {  // not resized
                        taps[d] = {c[d], c[d], 0.0};
                        continue;
                    }
                    const double s = resize_coordinate(coord, c[d], xs[d], ys[d]);
                    if (linear) {
                        taps[d] = resize_linear(s, xs[d]);
                    } else {
                        const std::int64_t j = resize_nearest(nm, s, xs[d]);
                        taps[d] = {j, j, 0.0};
                    }
                }
                double sum = 0;
                const std::size_t corners = std::size_t{1} << (linear ? c.size() : 0);
                for (std::size_t m = 0; m < corners; ++m) {
                    double weight = 1;
                    std::int64_t off = 0;
                    for (std::size_t d = 0; d < c.size(); ++d) {
                        const bool upper = linear && ((m >> d) & 1u);
                        weight *= linear ? (upper ? taps[d].w : 1 - taps[d].w) : 1.0;
                        off += (upper ? taps[d].hi : taps[d].lo) * st[d];
                    }
                    if (weight != 0) sum += weight * X[at(off)];
                }
                Y[at(i)] = sum;
            }
            break;
        }
        case OpKind::topk: {
            const std::int64_t axis = normalize_axis(a.get_int("axis", -1), in[0]->desc.rank());
            const AxisSplit s = split_at(in[0]->desc.shape, axis);
            const std::int64_t kk = a.require_int("k");
            const bool largest = a.get_bool("largest", true);
            std::vector<std::int64_t> order(static_cast<std::size_t>(s.n));
            for (std::int64_t o = 0; o < s.outer; ++o)
                for (std::int64_t i = 0; i < s.inner; ++i) {
                    const auto val = [&](std::int64_t j) { return X[at((o * s.n + j) * s.inner + i)]; };
                    std::iota(order.begin(), order.end(), std::int64_t{0});
                    // ties keep the lower index first (ONNX TopK; torch.topk on CUDA too)
                    std::stable_sort(order.begin(), order.end(),
                                     [&](std::int64_t p, std::int64_t q) { return largest ? val(p) > val(q) : val(p) < val(q); });
                    for (std::int64_t r = 0; r < kk; ++r) {
                        const std::size_t out_at = at((o * kk + r) * s.inner + i);
                        Y[out_at] = val(order[static_cast<std::size_t>(r)]);
                        y[1].data[out_at] = static_cast<double>(order[static_cast<std::size_t>(r)]);
                    }
                }
            break;
        }
        case OpKind::max_pool2d:
        case OpKind::avg_pool2d: pool2d(k, *in[0], a, y[0]); break;
        case OpKind::max_pool2d_grad: pool2d_grad(k, in[0], *in[1], a, y[0]); break;
        case OpKind::avg_pool2d_grad: pool2d_grad(k, nullptr, *in[0], a, y[0]); break;
        case OpKind::opaque:
            throw InputError("reference: opaque op '" + a.get_string("op_type", "?") + "' has no kernel (kept by --allow-unknown)");
        case OpKind::sgd_update: {
            const double lr = a.get_double("lr", 1e-3), mu = a.get_double("momentum", 0), wd = a.get_double("weight_decay", 0),
                         gs = a.get_double("grad_scale", 1);
            for (std::size_t i = 0; i < X.size(); ++i) {
                double g = in[1]->data[i] * gs + wd * X[i];
                if (in.size() == 3) {
                    g = mu * in[2]->data[i] + g;
                    y[1].data[i] = g;
                }
                Y[i] = X[i] - lr * g;
            }
            break;
        }
        case OpKind::adam_update: {  // first step (t = 1)
            const double lr = a.get_double("lr", 1e-3), b1 = a.get_double("beta1", 0.9), b2 = a.get_double("beta2", 0.999),
                         eps = a.get_double("eps", 1e-8), wd = a.get_double("weight_decay", 0), gs = a.get_double("grad_scale", 1);
            const bool decoupled = a.get_bool("decoupled", false);
            for (std::size_t i = 0; i < X.size(); ++i) {
                const double g = in[1]->data[i] * gs + (decoupled ? 0 : wd * X[i]);
                const double m = b1 * in[2]->data[i] + (1 - b1) * g, v = b2 * in[3]->data[i] + (1 - b2) * g * g;
                const double step = (m / (1 - b1)) / (std::sqrt(v / (1 - b2)) + eps) + (decoupled ? wd * X[i] : 0);
                Y[i] = X[i] - lr * step;
                y[1].data[i] = m;
                y[2].data[i] = v;
            }
            break;
        }
        // the ops of ops/defs/: their definition's kernel
#define ROOFLINE_DEFINED_OP(name) case OpKind::name:
#include "ops/defined_ops.inc"
#undef ROOFLINE_DEFINED_OP
            op_definition(k)->reference(in, a, y);
            break;
    }
    return y;
}

}  // namespace

double round_to(double v, DType d) {
    switch (d) {
        case DType::f64: return v;
        case DType::f32:
        case DType::tf32: return static_cast<double>(static_cast<float>(v));
        case DType::f16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(v)));
        case DType::bf16: {
            float f = static_cast<float>(v);
            std::uint32_t u = 0;
            std::memcpy(&u, &f, 4);
            if ((u & 0x7f800000u) != 0x7f800000u) u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
            u &= 0xffff0000u;
            std::memcpy(&f, &u, 4);
            return static_cast<double>(f);
        }
        case DType::int8:
        case DType::u8:
        case DType::int32:
        case DType::int64: return std::nearbyint(v);
        case DType::fp8_e4m3:
        case DType::fp8_e5m2: break;
    }
    throw InputError(std::string("reference: rounding to ") + std::string(dtype_name(d)) + " is not implemented");
}

std::vector<HostTensor> run_reference(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& attrs,
                                      const std::vector<TensorDesc>& out, RefPrecision precision) {
    std::vector<HostTensor> y = run(k, in, attrs, out);
    if (precision == RefPrecision::f32) {
        for (HostTensor& t : y) {
            if (is_floating(t.desc.dtype)) {
                for (double& v : t.data) v = static_cast<double>(static_cast<float>(v));
            }
        }
    }
    return y;
}

}  // namespace roofline
