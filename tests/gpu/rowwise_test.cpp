// [gpu] tests of the row-wise, reduction and convolution kernels (ops/cuda/rowwise.cu, reduce.cu,
// conv.cu) against the CPU reference executor, in f32, f16 and bf16. Row lengths cover every
// launch shape: 1 and 37 (warp per row, 4 values per lane), 300 (16 per lane), 1000 (32 per
// lane), 1027 and 5000 (block per row, row cached in shared memory), 20000 and 50257 (block per
// row re-reading global memory, 1024 threads).
//
// Tolerances (relative error norm ||gpu - ref|| / ||ref||, the reference computing in double on
// the same dtype-rounded inputs and rounding its outputs to f32):
//  * f16 2e-3 and bf16 1.6e-2: the kernels compute in f32 and round each output once to the
//    dtype's 10 / 7-bit mantissa (relative error <= 2^-11 / 2^-8 per element, about 2.8e-4 /
//    2.3e-3 in norm); the bounds are about 2 ulp with room for the f32 arithmetic.
//  * f32 1e-5: every kernel accumulates in f32 but in a different order than the reference (per
//    thread over <= n / threads elements, then a pairwise warp / block tree), so a sum of n terms
//    carries about (n / threads + log2 threads) * 2^-24 relative error, under 1e-6 for the sizes
//    here, plus a few ulp from expf / logf / sqrtf; 1e-5 leaves a 10x margin and still catches
//    any indexing or algebra mistake (those show as errors of order 1).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "measure/device.hpp"
#include "measure/gpu_op.hpp"
#include "ops/op_rule.hpp"
#include "ops/reference.hpp"

namespace {

using namespace roofline;

bool gpu_available() {
    const auto q = query_cuda_devices();
    if (q.devices.empty()) {
        std::printf("SKIP: %s\n", q.problem.c_str());
        return false;
    }
    return true;
}

const DType kFloatTypes[] = {DType::f32, DType::f16, DType::bf16};

double tolerance(DType d) {
    switch (d) {
        case DType::f16: return 2e-3;     // ~2 ulp of a 10-bit mantissa (one rounding of an f32 result)
        case DType::bf16: return 1.6e-2;  // ~2 ulp of a 7-bit mantissa
        default: return 1e-5;             // f32: f32 accumulation in another order (see the header)
    }
}

std::uint64_t mix(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Deterministic values in [-1, 1), rounded to the dtype, never zero.
HostTensor random_tensor(const Shape& shape, DType d, std::uint64_t seed) {
    HostTensor t{TensorDesc{shape, d}, std::vector<double>(static_cast<std::size_t>(numel(shape)))};
    for (std::size_t i = 0; i < t.data.size(); ++i) {
        const double u = static_cast<double>(mix(seed * 1000003ULL + i) >> 11) * 0x1.0p-53;  // [0, 1)
        double v = round_to(2 * u - 1, d);
        if (v == 0) v = 0.25;
        t.data[i] = v;
    }
    return t;
}

// Class indices in [0, bound).
HostTensor index_tensor(const Shape& shape, DType d, std::int64_t bound, std::uint64_t seed) {
    HostTensor t{TensorDesc{shape, d}, std::vector<double>(static_cast<std::size_t>(numel(shape)))};
    for (std::size_t i = 0; i < t.data.size(); ++i) {
        t.data[i] = static_cast<double>(mix(seed * 7919ULL + i) % static_cast<std::uint64_t>(bound));
    }
    return t;
}

// Runs op k on the GPU and checks every output against the f32 reference.
void check_op(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& attrs, const std::string& what) {
    INFO(std::string(op_name(k)) + " " + what);
    std::vector<TensorDesc> descs;
    for (const HostTensor* t : in) descs.push_back(t->desc);
    const std::vector<TensorDesc> out = infer_outputs(k, descs, attrs);
    const std::vector<HostTensor> ref = run_reference(k, in, attrs, out, RefPrecision::f32);
    const GpuOpResult gpu = run_op_on_gpu(k, in, attrs, out);
    REQUIRE(gpu.outputs.size() == ref.size());
    std::string notes;
    for (const std::string& n : gpu.notes) notes += (notes.empty() ? "" : "; ") + n;
    INFO("launches: " << notes);
    for (std::size_t i = 0; i < ref.size(); ++i) {
        INFO("output " << i << " " << desc_str(out[i]));
        const double err = relative_error(gpu.outputs[i], ref[i]);
        CAPTURE(err);
        CHECK(err <= tolerance(out[i].dtype));
    }
}

std::string label(DType d, const Shape& s) { return std::string(dtype_name(d)) + shape_str(s); }

const std::int64_t kRowLengths[] = {1, 37, 300, 1000, 1027, 5000, 20000};

Attrs axis_attr(std::int64_t axis) {
    Attrs a;
    a.set("axis", axis);
    return a;
}

}  // namespace

TEST_CASE("softmax and softmax_grad kernels match the reference along the last axis", "[gpu]") {
    if (!gpu_available()) return;
    for (DType d : kFloatTypes) {
        for (std::int64_t n : kRowLengths) {
            const Shape s{3, n};
            const HostTensor x = random_tensor(s, d, 1), dy = random_tensor(s, d, 2);
            check_op(OpKind::softmax, {&x}, Attrs{}, label(d, s));
            // softmax_grad takes any y; the reference's softmax output keeps it realistic.
            HostTensor yr{x.desc, run_reference(OpKind::softmax, {&x}, Attrs{}, {x.desc}, RefPrecision::f32)[0].data};
            for (double& v : yr.data) v = round_to(v, d);
            check_op(OpKind::softmax_grad, {&dy, &yr}, Attrs{}, label(d, s));
        }
    }
    // More rows than the grids hold at once (the kernels loop over rows).
    const Shape many{40000, 37}, many_long{2500, 1027};
    const HostTensor a = random_tensor(many, DType::f32, 3), b = random_tensor(many_long, DType::bf16, 4);
    check_op(OpKind::softmax, {&a}, Attrs{}, "many short rows");
    check_op(OpKind::softmax, {&b}, Attrs{}, "many long rows");
}

TEST_CASE("softmax and softmax_grad kernels match the reference along a non-last axis", "[gpu]") {
    if (!gpu_available()) return;
    struct Case {
        Shape shape;
        std::int64_t axis;
    };
    // thread per column (few columns but a short axis; many columns), block per strided row
    // (128 threads for 300 / 1000, 512 for 1027).
    const Case cases[] = {{{4, 37, 5}, 1}, {{2, 100, 1100}, 1}, {{3, 1000, 2}, -2}, {{300, 7}, 0}, {{1027, 3}, 0}, {{2, 3, 4, 5}, -3}};
    for (DType d : kFloatTypes) {
        for (const Case& c : cases) {
            const HostTensor x = random_tensor(c.shape, d, 5), dy = random_tensor(c.shape, d, 6);
            const Attrs at = axis_attr(c.axis);
            check_op(OpKind::softmax, {&x}, at, label(d, c.shape) + " axis " + std::to_string(c.axis));
            check_op(OpKind::softmax_grad, {&dy, &x}, at, label(d, c.shape) + " axis " + std::to_string(c.axis));
        }
    }
}

TEST_CASE("layernorm and rmsnorm kernels match the reference", "[gpu]") {
    if (!gpu_available()) return;
    for (DType d : kFloatTypes) {
        for (std::int64_t n : kRowLengths) {
            const Shape s{3, n};
            const HostTensor x = random_tensor(s, d, 7), w = random_tensor({n}, d, 8), b = random_tensor({n}, d, 9);
            check_op(OpKind::layernorm, {&x, &w, &b}, Attrs{}, label(d, s) + " weight, bias");
            check_op(OpKind::layernorm, {&x}, Attrs{}, label(d, s));
            check_op(OpKind::rmsnorm, {&x, &w}, Attrs{}, label(d, s) + " weight");
        }
        const Shape s{2, 5, 1000};
        const HostTensor x = random_tensor(s, d, 10), w = random_tensor({1000}, d, 11);
        Attrs eps;
        eps.set("eps", 1e-3);
        check_op(OpKind::layernorm, {&x, &w}, eps, label(d, s) + " weight, eps 1e-3");
        check_op(OpKind::rmsnorm, {&x}, eps, label(d, s) + " eps 1e-3");
    }
}

TEST_CASE("layernorm_grad and rmsnorm_grad kernels match the reference", "[gpu]") {
    if (!gpu_available()) return;
    Attrs affine0, affine1, affine2;
    affine0.set("affine", std::int64_t{0});
    affine1.set("affine", std::int64_t{1});
    affine2.set("affine", std::int64_t{2});
    for (DType d : kFloatTypes) {
        for (std::int64_t n : kRowLengths) {
            const Shape s{3, n};
            const HostTensor dy = random_tensor(s, d, 12), x = random_tensor(s, d, 13), w = random_tensor({n}, d, 14);
            check_op(OpKind::layernorm_grad, {&dy, &x, &w}, affine2, label(d, s) + " affine 2");
            check_op(OpKind::layernorm_grad, {&dy, &x}, affine0, label(d, s) + " affine 0");
            check_op(OpKind::rmsnorm_grad, {&dy, &x, &w}, affine1, label(d, s) + " affine 1");
        }
        // Many rows: the parameter gradients split the rows into chunks summed by a second kernel.
        for (const Shape& s : {Shape{600, 37}, Shape{64, 1027}, Shape{512, 64}}) {
            const HostTensor dy = random_tensor(s, d, 15), x = random_tensor(s, d, 16), w = random_tensor({s[1]}, d, 17);
            check_op(OpKind::layernorm_grad, {&dy, &x, &w}, affine1, label(d, s) + " affine 1");
            check_op(OpKind::layernorm_grad, {&dy, &x, &w}, affine2, label(d, s) + " affine 2");
            check_op(OpKind::rmsnorm_grad, {&dy, &x, &w}, affine1, label(d, s) + " affine 1");
            check_op(OpKind::rmsnorm_grad, {&dy, &x}, affine0, label(d, s) + " affine 0");
        }
    }
}

TEST_CASE("cross_entropy and cross_entropy_grad kernels match the reference", "[gpu]") {
    if (!gpu_available()) return;
    const char* reductions[] = {"mean", "sum", "none"};
    std::vector<std::int64_t> lengths(std::begin(kRowLengths), std::end(kRowLengths));
    lengths.push_back(50257);  // a GPT-2 vocabulary
    for (DType d : kFloatTypes) {
        for (std::int64_t v : lengths) {
            const Shape s{3, v};
            const HostTensor logits = random_tensor(s, d, 18);
            for (const char* red : reductions) {
                const DType tdt = v % 2 == 0 ? DType::int64 : DType::int32;
                const HostTensor targets = index_tensor({3}, tdt, v, 19);
                Attrs at;
                at.set("reduction", std::string(red));
                const std::string what = label(d, s) + " " + red + " targets " + std::string(dtype_name(tdt));
                check_op(OpKind::cross_entropy, {&logits, &targets}, at, what);
                const Shape ls = std::string(red) == "none" ? Shape{3} : Shape{};
                const HostTensor dloss = random_tensor(ls, DType::f32, 20);
                check_op(OpKind::cross_entropy_grad, {&logits, &targets, &dloss}, at, what);
            }
        }
    }
    // Many rows, both target dtypes, rank-3 logits: the mean reduction sums 4000 row losses.
    for (DType tdt : {DType::int32, DType::int64}) {
        const HostTensor logits = random_tensor({40, 100, 37}, DType::f32, 21);
        const HostTensor targets = index_tensor({40, 100}, tdt, 37, 22);
        check_op(OpKind::cross_entropy, {&logits, &targets}, Attrs{}, "f32[40,100,37] mean " + std::string(dtype_name(tdt)));
        const HostTensor dloss = random_tensor({}, DType::f32, 23);
        check_op(OpKind::cross_entropy_grad, {&logits, &targets, &dloss}, Attrs{}, "f32[40,100,37] mean " + std::string(dtype_name(tdt)));
    }
}

TEST_CASE("reduce_sum, reduce_mean, reduce_max and reduce_max_grad kernels match the reference", "[gpu]") {
    if (!gpu_available()) return;
    struct Case {
        Shape shape;
        std::vector<std::int64_t> axes;  // empty: attribute absent (all axes)
        bool keepdim;
    };
    const Case cases[] = {
        {{3, 1000}, {1}, false},           // rows: warp per output
        {{2, 5000}, {-1}, true},           // rows: block per output
        {{37, 1000}, {}, false},           // everything: one block
        {{1027, 37}, {0}, false},          // columns, rows split into chunks
        {{4, 37, 9}, {1}, true},           // columns [A, R, K]
        {{2, 3, 5, 7}, {0, 2}, false},     // general: reduced, kept, reduced, kept
        {{8, 6, 7, 9}, {0, 2, 3}, false},  // general: a conv bias gradient (NCHW over N, H, W)
        {{5, 1, 7}, {1}, false},           // only a size-1 axis: a copy
        {{1}, {0}, false},
        // the vectorised column path (K a multiple of 8): many row chunks then the finalize
        // kernel, A > 1, and the size-1 copy
        {{1000, 64}, {0}, false},
        {{3, 100, 48}, {1}, true},
        {{5, 1, 16}, {1}, false},
    };
    for (DType d : kFloatTypes) {
        for (const Case& c : cases) {
            Attrs at;
            if (!c.axes.empty()) at.set("axes", c.axes);
            at.set("keepdim", c.keepdim);
            const HostTensor x = random_tensor(c.shape, d, 24);
            const std::string what = label(d, c.shape) + (c.axes.empty() ? " all axes" : " axes " + shape_str(c.axes));
            check_op(OpKind::reduce_sum, {&x}, at, what);
            check_op(OpKind::reduce_mean, {&x}, at, what);
            check_op(OpKind::reduce_max, {&x}, at, what);
            // reduce_max_grad from the reference maximum (exact: the largest stored value).
            const TensorDesc yd = infer_outputs(OpKind::reduce_max, std::vector<TensorDesc>{x.desc}, at)[0];
            const HostTensor y{yd, run_reference(OpKind::reduce_max, {&x}, at, {yd}, RefPrecision::f32)[0].data};
            const HostTensor dy = random_tensor(yd.shape, d, 25);
            check_op(OpKind::reduce_max_grad, {&dy, &x, &y}, at, what);
        }
    }
}

TEST_CASE("conv2d, conv2d_grad_input and conv2d_grad_weight kernels match the reference", "[gpu]") {
    if (!gpu_available()) return;
    struct Case {
        Shape x, w;
        std::vector<std::int64_t> stride, padding, dilation;
        std::int64_t groups;
        bool bias;
    };
    const Case cases[] = {
        {{2, 3, 9, 11}, {5, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},     // padded 3x3
        {{2, 4, 13, 10}, {6, 2, 3, 2}, {2, 1}, {0, 2}, {1, 2}, 2, false},   // strided, dilated, grouped
        {{1, 3, 7, 7}, {3, 1, 5, 5}, {3, 2}, {2, 2}, {1, 1}, 3, true},      // depthwise, stride 3
        {{4, 8, 16, 16}, {70, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false},  // N > 64 tile; split-K for dw
        {{2, 5, 6, 6}, {4, 5, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},      // 1x1
    };
    for (DType d : kFloatTypes) {
        for (const Case& c : cases) {
            Attrs at;
            at.set("stride", c.stride);
            at.set("padding", c.padding);
            at.set("dilation", c.dilation);
            at.set("groups", c.groups);
            const HostTensor x = random_tensor(c.x, d, 26), w = random_tensor(c.w, d, 27), b = random_tensor({c.w[0]}, d, 28);
            const std::string what = label(d, c.x) + " weight " + shape_str(c.w) + " groups " + std::to_string(c.groups);
            std::vector<const HostTensor*> fwd_in = {&x, &w};
            if (c.bias) fwd_in.push_back(&b);
            check_op(OpKind::conv2d, fwd_in, at, what);
            const TensorDesc yd = infer_outputs(OpKind::conv2d, std::vector<TensorDesc>{x.desc, w.desc}, at)[0];
            const HostTensor dy = random_tensor(yd.shape, d, 29);
            Attrs gi = at, gw = at;
            gi.set("input_shape", c.x);
            gw.set("weight_shape", c.w);
            check_op(OpKind::conv2d_grad_input, {&dy, &w}, gi, what);
            check_op(OpKind::conv2d_grad_weight, {&dy, &x}, gw, what);
        }
    }
}
