// [gpu] tests of the GEMM and attention kernels (ops/cuda/gemm.cpp, attention.cu) against the CPU
// reference executor: matmul and linear on cuBLASLt, attention materialised (cuBLASLt + softmax
// kernel) and fused (flash), and the fused flash backward pair against gradients computed here in
// double. Shapes cover 1x1x1 products, long K (1000), N = 1 tails, every batch-broadcast pattern
// the GEMM planner distinguishes (folded into M, stride-0 operand, host-looped outer dimensions),
// sequence lengths 1, 37, 256, 1000 (partial tiles of 32 and 64 rows), head dims 32 to 128 and
// Sq != Sk with Dv != D.
//
// Tolerances (relative error norm ||gpu - ref|| / ||ref||; the reference computes in double on
// the same dtype-rounded inputs and rounds its outputs to f32):
//  * f32 1e-5: cuBLASLt runs CUBLAS_COMPUTE_32F (no TF32) and the kernels compute in f32, summing in
//    another order than the reference: K <= 1000 terms give a few 1e-7 in norm, and expf / exp2f
//    add a few ulp; 1e-5 leaves a 10x margin while any indexing or masking mistake is of order 1.
//  * f16 2e-3, bf16 1.6e-2 (about 2 ulp of the 10 / 7-bit mantissa): products accumulate in f32 on
//    tensor cores and the output is rounded once; attention also rounds its intermediates to the
//    dtype as frameworks do (materialised: scores S and probabilities P; flash: P before the PV
//    product), each a relative error <= 2^-11 / 2^-8 per element that averages down in the sums.
//  * backward, the same bounds: the fused kernels round P and dS to the dtype before their
//    tensor-core products (as FlashAttention-2 does) and read o as the forward kernel stored it, so
//    dq, dk and dv carry three or four roundings that average down in the sums over 37 to 256 rows
//    (about 0.4 ulp in norm: 4e-4 for f16, 3e-3 for bf16 when checked on a CPU emulation of the
//    kernels); in f32, dS = P (dP - Delta) cancels mildly, still under 1e-6.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "measure/cuda_session.hpp"
#include "measure/device.hpp"
#include "measure/gpu_op.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/flash.hpp"
#include "ops/cuda/gemm.hpp"
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
        case DType::f16: return 2e-3;     // ~2 ulp of a 10-bit mantissa (see the header)
        case DType::bf16: return 1.6e-2;  // ~2 ulp of a 7-bit mantissa
        default: return 1e-5;             // f32: f32 accumulation in another order
    }
}

double backward_tolerance(DType d) {
    switch (d) {
        case DType::f16: return 2e-3;     // P, dS and o rounded to f16 on the way (see the header)
        case DType::bf16: return 1.6e-2;  // the same roundings with a 7-bit mantissa
        default: return 1e-5;             // f32 sums in another order, mild cancellation in dP - Delta
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

std::vector<TensorDesc> descs(const std::vector<const HostTensor*>& in) {
    std::vector<TensorDesc> d;
    for (const HostTensor* t : in) d.push_back(t->desc);
    return d;
}

// Runs op k on the GPU and on the reference; returns the relative error of output 0.
double gpu_vs_reference(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& attrs, bool flash,
                        std::vector<std::string>* notes = nullptr) {
    const std::vector<TensorDesc> out = infer_outputs(k, descs(in), attrs);
    const std::vector<HostTensor> ref = run_reference(k, in, attrs, out, RefPrecision::f32);
    const GpuOpResult gpu = run_op_on_gpu(k, in, attrs, out, flash);
    if (notes != nullptr) *notes = gpu.notes;
    return relative_error(gpu.outputs.at(0), ref.at(0));
}

bool any_note_contains(const std::vector<std::string>& notes, const std::string& what) {
    for (const std::string& n : notes) {
        if (n.find(what) != std::string::npos) return true;
    }
    return false;
}

// Host-side only (no GPU needed): how broadcast batch dims become strided-batched GEMMs.
TEST_CASE("the GEMM batch planner collapses broadcast batch dims into strides", "[gpu]") {
    using cuda::plan_batches;
    auto p = plan_batches({4}, {}, {4}, false);  // B broadcast, A untransposed: fold into M
    CHECK(p.fold_m);
    CHECK(p.outer.empty());
    p = plan_batches({4}, {}, {4}, true);  // A transposed cannot fold: stride-0 B
    CHECK(!p.fold_m);
    CHECK(p.inner == 4);
    CHECK(p.stride_a == 1);
    CHECK(p.stride_b == 0);
    p = plan_batches({}, {4}, {4}, false);  // A broadcast
    CHECK(p.inner == 4);
    CHECK(p.stride_a == 0);
    CHECK(p.stride_b == 1);
    p = plan_batches({2, 3}, {2, 3}, {2, 3}, false);  // regular batch of 6
    CHECK(p.outer.empty());
    CHECK(p.inner == 6);
    CHECK(p.stride_a == 1);
    CHECK(p.stride_b == 1);
    p = plan_batches({2, 1}, {3}, {2, 3}, false);  // [2,1] x [3]: loop over 2, batch of 3 with stride-0 A
    CHECK(p.outer == Shape{2});
    CHECK(p.inner == 3);
    CHECK(p.stride_a == 0);
    CHECK(p.stride_b == 1);
    p = plan_batches({2, 1, 5}, {1, 3, 5}, {2, 3, 5}, true);
    CHECK(p.outer == Shape{2, 3});
    CHECK(p.inner == 5);
    p = plan_batches({1, 3}, {3}, {1, 3}, true);  // size-1 output dims merge with anything
    CHECK(p.outer.empty());
    CHECK(p.inner == 3);
    // Offsets follow reference.cpp's bcast_offset: a [2,1] at output coordinates (1, 2) -> 1.
    CHECK(cuda::batch_offset({2, 1}, {2, 3}, {1, 2}) == 1);
    CHECK(cuda::batch_offset({3}, {2, 3}, {1, 2}) == 2);
    CHECK(cuda::batch_offset({}, {2, 3}, {1, 2}) == 0);
}

struct MatmulCase {
    Shape a, b;
    bool ta, tb;
};

TEST_CASE("matmul on cuBLASLt matches the reference across shapes, transposes and broadcast batches", "[gpu]") {
    if (!gpu_available()) return;
    const MatmulCase cases[] = {
        {{1, 1}, {1, 1}, false, false},                  // 1x1x1
        {{37, 1000}, {1000, 3}, false, false},           // M 37, K 1000, N 3
        {{1000, 37}, {3, 1000}, true, true},             // the same product from transposed storage
        {{1027, 33}, {33, 1}, false, false},             // N = 1
        {{3, 4, 7, 5}, {3, 4, 6, 7}, true, true},        // regular batch of 12, both transposed
        {{4, 5, 7}, {7, 6}, false, false},               // broadcast B: batch folds into M
        {{5, 7}, {4, 6, 7}, false, true},                // broadcast A: stride 0 (B given as [6, 7])
        {{2, 1, 5, 7}, {3, 7, 4}, false, false},         // [2,1] x [3] batches: host loop over 2
        {{2, 1, 37, 64}, {1, 3, 64, 37}, false, false},  // [2,1] x [1,3] batches
    };
    for (const DType d : kFloatTypes) {
        for (const MatmulCase& c : cases) {
            Attrs attrs;
            attrs.set("transpose_a", c.ta);
            attrs.set("transpose_b", c.tb);
            const HostTensor a = random_tensor(c.a, d, 11);
            const HostTensor b = random_tensor(c.b, d, 12);
            std::vector<std::string> notes;
            const double err = gpu_vs_reference(OpKind::matmul, {&a, &b}, attrs, false, &notes);
            INFO(std::string(dtype_name(d)) + " " + shape_str(c.a) + (c.ta ? "^T" : "") + " x " + shape_str(c.b) + (c.tb ? "^T" : ""));
            CHECK(err <= tolerance(d));
            CHECK(any_note_contains(notes, "cublasLt algo="));
        }
    }
}

TEST_CASE("linear on cuBLASLt matches the reference with and without bias", "[gpu]") {
    if (!gpu_available()) return;
    struct LinearCase {
        Shape x, w;
        bool bias;
    };
    const LinearCase cases[] = {
        {{3, 37, 129}, {67, 129}, true}, {{3, 37, 129}, {67, 129}, false}, {{5}, {3, 5}, true},  // a single row
        {{1000, 64}, {1, 64}, false},                                                            // one output feature
        {{2, 9, 3}, {1000, 3}, true},                                                            // K = 3, wide output
    };
    for (const DType d : kFloatTypes) {
        for (const LinearCase& c : cases) {
            const HostTensor x = random_tensor(c.x, d, 21);
            const HostTensor w = random_tensor(c.w, d, 22);
            const HostTensor b = random_tensor({c.w[0]}, d, 23);
            std::vector<const HostTensor*> in = {&x, &w};
            if (c.bias) in.push_back(&b);
            INFO(std::string(dtype_name(d)) + " x " + shape_str(c.x) + " w " + shape_str(c.w) + (c.bias ? " + bias" : ""));
            CHECK(gpu_vs_reference(OpKind::linear, in, Attrs{}, false) <= tolerance(d));
        }
    }
}

struct AttentionCase {
    Shape q, k, v;
    bool causal;
    double scale;  // 0: the default 1/sqrt(D)
};

std::vector<AttentionCase> attention_cases() {
    std::vector<AttentionCase> cases;
    for (const std::int64_t s : {1, 37, 256, 1000}) {
        for (const std::int64_t d : {64, 128}) {
            for (const bool causal : {false, true}) {
                const std::int64_t batch = s >= 1000 ? 1 : 2;
                cases.push_back({{batch, s, d}, {batch, s, d}, {batch, s, d}, causal, 0});
            }
        }
    }
    cases.push_back({{2, 2, 37, 64}, {2, 1, 37, 64}, {2, 1, 37, 64}, true, 0});  // k, v shared by 2 heads
    cases.push_back({{1, 37, 64}, {1, 100, 64}, {1, 100, 32}, true, 0});         // Sq != Sk, Dv != D
    cases.push_back({{1, 100, 64}, {1, 37, 64}, {1, 37, 64}, true, 0.3});        // Sq > Sk, explicit scale
    cases.push_back({{2, 50, 80}, {2, 50, 80}, {2, 50, 80}, false, 0});
    cases.push_back({{1, 70, 96}, {1, 70, 96}, {1, 70, 96}, true, 0});
    cases.push_back({{3, 33, 32}, {3, 33, 32}, {3, 33, 32}, false, 0});
    cases.push_back({{1, 1500, 64}, {1, 1500, 64}, {1, 1500, 64}, false, 0});  // softmax rows > 1024
    // Vectorised register-resident softmax with 2 and 4 warps per row (rows of 2048 and 4096 keys,
    // 16-byte aligned), causal and not.
    for (const bool causal : {false, true}) {
        cases.push_back({{1, 128, 64}, {1, 2048, 64}, {1, 2048, 64}, causal, 0});
        cases.push_back({{1, 64, 64}, {1, 4096, 64}, {1, 4096, 64}, causal, 0});
    }
    return cases;
}

TEST_CASE("attention matches the reference, materialised and flash, causal or not", "[gpu]") {
    if (!gpu_available()) return;
    for (const DType d : kFloatTypes) {
        for (const AttentionCase& c : attention_cases()) {
            Attrs attrs;
            attrs.set("causal", c.causal);
            if (c.scale > 0) attrs.set("scale", c.scale);
            const HostTensor q = random_tensor(c.q, d, 31);
            const HostTensor k = random_tensor(c.k, d, 32);
            const HostTensor v = random_tensor(c.v, d, 33);
            const std::vector<const HostTensor*> in = {&q, &k, &v};
            const std::vector<TensorDesc> out = infer_outputs(OpKind::attention, descs(in), attrs);
            const std::vector<HostTensor> ref = run_reference(OpKind::attention, in, attrs, out, RefPrecision::f32);
            INFO(std::string(dtype_name(d)) + " q " + shape_str(c.q) + " k " + shape_str(c.k) + " v " + shape_str(c.v) +
                 (c.causal ? " causal" : ""));
            {
                const GpuOpResult m = run_op_on_gpu(OpKind::attention, in, attrs, out, false);
                INFO("materialised");
                CHECK(relative_error(m.outputs.at(0), ref.at(0)) <= tolerance(d));
                CHECK(any_note_contains(m.notes, "attention softmax"));
            }
            {
                const GpuOpResult f = run_op_on_gpu(OpKind::attention, in, attrs, out, true);
                INFO("flash");
                CHECK(relative_error(f.outputs.at(0), ref.at(0)) <= tolerance(d));
                CHECK(any_note_contains(f.notes, "flash attention forward"));
            }
        }
    }
}

// ---- flash backward ----

struct DeviceBuffer {
    void* p = nullptr;
    explicit DeviceBuffer(std::size_t bytes) { cuda::check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

std::unique_ptr<DeviceBuffer> upload(const HostTensor& t) {
    const std::vector<std::byte> bytes = encode_tensor(t);
    auto b = std::make_unique<DeviceBuffer>(bytes.size());
    cuda::check(cudaMemcpy(b->p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    return b;
}

HostTensor download(const void* p, const TensorDesc& d) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(d.bytes()));
    cuda::check(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return decode_tensor(d, bytes.data());
}

struct Grads {
    HostTensor dq, dk, dv;
};

// Attention backward in double, batch by batch (the matmul / softmax_grad recipe):
// S = scale q k^T (masked), P = softmax(S), O = P v; dv = P^T dO; dP = dO v^T;
// dS = P * (dP - rowsum(dP * P)); dq = scale dS k; dk = scale dS^T q.
Grads reference_grads(const HostTensor& q, const HostTensor& k, const HostTensor& v, const HostTensor& dout, double scale, bool causal) {
    const Shape& qs = q.desc.shape;
    const std::size_t r = qs.size();
    const std::int64_t sq = qs[r - 2], d = qs[r - 1], sk = k.desc.shape[r - 2], dv = v.desc.shape[r - 1];
    const std::int64_t batches = numel(Shape(qs.begin(), qs.end() - 2));
    Grads g{HostTensor{q.desc, std::vector<double>(q.data.size())}, HostTensor{k.desc, std::vector<double>(k.data.size())},
            HostTensor{v.desc, std::vector<double>(v.data.size())}};
    const auto at = [](std::int64_t i) { return static_cast<std::size_t>(i); };
    std::vector<double> p(at(sq * sk)), dp(at(sq * sk));
    for (std::int64_t b = 0; b < batches; ++b) {
        const double* Q = q.data.data() + b * sq * d;
        const double* K = k.data.data() + b * sk * d;
        const double* V = v.data.data() + b * sk * dv;
        const double* dO = dout.data.data() + b * sq * dv;
        double* dQ = g.dq.data.data() + b * sq * d;
        double* dK = g.dk.data.data() + b * sk * d;
        double* dV = g.dv.data.data() + b * sk * dv;
        for (std::int64_t i = 0; i < sq; ++i) {
            double mx = -std::numeric_limits<double>::infinity();
            for (std::int64_t j = 0; j < sk; ++j) {
                double s = 0;
                for (std::int64_t c = 0; c < d; ++c) s += Q[i * d + c] * K[j * d + c];
                s *= scale;
                if (causal && j > i) s = -std::numeric_limits<double>::infinity();
                p[at(i * sk + j)] = s;
                mx = std::max(mx, s);
            }
            double sum = 0;
            for (std::int64_t j = 0; j < sk; ++j) sum += (p[at(i * sk + j)] = std::exp(p[at(i * sk + j)] - mx));
            for (std::int64_t j = 0; j < sk; ++j) p[at(i * sk + j)] /= sum;
            double rowdot = 0;
            for (std::int64_t j = 0; j < sk; ++j) {
                double t = 0;
                for (std::int64_t c = 0; c < dv; ++c) t += dO[i * dv + c] * V[j * dv + c];
                dp[at(i * sk + j)] = t;
                rowdot += t * p[at(i * sk + j)];
            }
            for (std::int64_t j = 0; j < sk; ++j) {
                const double pij = p[at(i * sk + j)];
                const double ds = pij * (dp[at(i * sk + j)] - rowdot) * scale;
                for (std::int64_t c = 0; c < dv; ++c) dV[j * dv + c] += pij * dO[i * dv + c];
                for (std::int64_t c = 0; c < d; ++c) {
                    dQ[i * d + c] += ds * K[j * d + c];
                    dK[j * d + c] += ds * Q[i * d + c];
                }
            }
        }
    }
    return g;
}

TEST_CASE("flash attention backward matches reference gradients", "[gpu]") {
    if (!gpu_available()) return;
    std::vector<AttentionCase> cases;
    for (const std::int64_t s : {1, 37, 256}) {
        for (const std::int64_t d : {64, 128}) {
            for (const bool causal : {false, true}) cases.push_back({{2, s, d}, {2, s, d}, {2, s, d}, causal, 0});
        }
    }
    cases.push_back({{1, 37, 64}, {1, 100, 64}, {1, 100, 32}, true, 0});  // Sq != Sk, Dv != D
    cases.push_back({{2, 3, 90, 80}, {2, 3, 70, 80}, {2, 3, 70, 80}, false, 0.2});
    bool recompute_lse = false;
    for (const DType dt : kFloatTypes) {
        for (const AttentionCase& c : cases) {
            const std::size_t r = c.q.size();
            const double scale = c.scale > 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.q.back()));
            Shape os = c.q;
            os[r - 1] = c.v[r - 1];
            const HostTensor q = random_tensor(c.q, dt, 41);
            const HostTensor k = random_tensor(c.k, dt, 42);
            const HostTensor v = random_tensor(c.v, dt, 43);
            const HostTensor dout = random_tensor(os, dt, 44);
            const Grads ref = reference_grads(q, k, v, dout, scale, c.causal);
            INFO(std::string(dtype_name(dt)) + " q " + shape_str(c.q) + " k " + shape_str(c.k) + " v " + shape_str(c.v) +
                 (c.causal ? " causal" : ""));

            CudaSession session;
            cuda::LaunchContext ctx = session.context(true);
            const auto qbuf = upload(q), kbuf = upload(k), vbuf = upload(v), dobuf = upload(dout);
            const TensorDesc od{os, dt};
            DeviceBuffer o(static_cast<std::size_t>(od.bytes()));
            DeviceBuffer lse(static_cast<std::size_t>(numel(Shape(c.q.begin(), c.q.end() - 1))) * sizeof(float));
            DeviceBuffer gq(static_cast<std::size_t>(q.desc.bytes())), gk(static_cast<std::size_t>(k.desc.bytes())),
                gv(static_cast<std::size_t>(v.desc.bytes()));
            const cuda::DeviceTensor tq{qbuf->p, q.desc}, tk{kbuf->p, k.desc}, tv{vbuf->p, v.desc}, to{o.p, od}, tdo{dobuf->p, od},
                tgq{gq.p, q.desc}, tgk{gk.p, k.desc}, tgv{gv.p, v.desc};
            REQUIRE(cuda::flash_attention_forward(tq, tk, tv, to, static_cast<float*>(lse.p), scale, c.causal, ctx));
            // Once per dtype, let the backward recompute the logsumexp itself.
            const bool no_lse = !recompute_lse;
            recompute_lse = true;
            cuda::flash_attention_backward(tq, tk, tv, to, tdo, no_lse ? nullptr : static_cast<const float*>(lse.p), tgq, tgk, tgv, scale,
                                           c.causal, ctx);
            session.synchronize();
            CHECK(relative_error(download(gq.p, q.desc), ref.dq) <= backward_tolerance(dt));
            CHECK(relative_error(download(gk.p, k.desc), ref.dk) <= backward_tolerance(dt));
            CHECK(relative_error(download(gv.p, v.desc), ref.dv) <= backward_tolerance(dt));
            CHECK(any_note_contains(ctx.notes, "flash attention backward"));
            session.release_scratch();
        }
        recompute_lse = false;
    }
}

}  // namespace
