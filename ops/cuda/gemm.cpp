// matmul and linear through cuBLASLt (host code only; the one small kernel it may need, the bias
// add fallback, lives in attention.cu). Row-major tensors map onto cuBLASLt's column-major
// convention by computing C^T = opB(B)^T opA(A)^T: a row-major [r x c] matrix with leading
// dimension ld is the column-major [c x r] matrix with the same ld, so no data moves.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/gemm.hpp"
#include "ops/error.hpp"

namespace roofline::cuda {

namespace {

void check_lt(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS) {
        throw CudaError(std::string(call) + ": cuBLASLt status " + std::to_string(static_cast<int>(s)) + " (" + cublasLtGetStatusName(s) +
                        ")");
    }
}

cudaDataType_t cuda_type(DType d) {
    switch (d) {
        case DType::f32:
        case DType::tf32: return CUDA_R_32F;
        case DType::f16: return CUDA_R_16F;
        case DType::bf16: return CUDA_R_16BF;
        default: break;
    }
    throw InputError("cuBLASLt GEMM: no " + std::string(dtype_name(d)) + " operands");
}

// Largest power of two (<= 256) dividing the address of every matrix of a batch.
std::uint32_t alignment(const void* p, std::int64_t stride_elems, std::int64_t elem_bytes, std::int64_t batch) {
    std::uint64_t v = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    if (batch > 1) v |= static_cast<std::uint64_t>(stride_elems * elem_bytes);
    std::uint32_t a = 1;
    while (a < 256 && (v & a) == 0) a <<= 1;
    return a;
}

// Descriptors, layouts and the chosen algorithm of one GEMM configuration.
struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::size_t workspace = 0;
    bool bias_epilogue = false;
    std::string note;  // "cublasLt algo=.. tile=.. ..."

    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
        if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
        if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
        if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
        if (op != nullptr) cublasLtMatmulDescDestroy(op);
    }
};

struct PreferenceGuard {
    cublasLtMatmulPreference_t p = nullptr;
    PreferenceGuard() { check_lt(cublasLtMatmulPreferenceCreate(&p), "cublasLtMatmulPreferenceCreate"); }
    ~PreferenceGuard() { cublasLtMatmulPreferenceDestroy(p); }
    PreferenceGuard(const PreferenceGuard&) = delete;
    PreferenceGuard& operator=(const PreferenceGuard&) = delete;
};

using Key = std::array<std::int64_t, 24>;

std::mutex& cache_mutex() {
    static std::mutex m;
    return m;
}

std::map<Key, std::unique_ptr<Plan>>& cache() {
    static std::map<Key, std::unique_ptr<Plan>> c;
    return c;
}

void set_layout_batch(cublasLtMatrixLayout_t l, std::int64_t batch, std::int64_t stride) {
    if (batch <= 1) return;
    const auto count = static_cast<std::int32_t>(batch);
    check_lt(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
             "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check_lt(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
             "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

std::string algo_note(const cublasLtMatmulHeuristicResult_t& r, bool bias_epilogue) {
    std::int32_t id = -1, split_k = 1;
    std::uint32_t tile = 0, stages = 0;
    std::size_t written = 0;
    check_lt(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &written),
             "cublasLtMatmulAlgoConfigGetAttribute(ID)");
    check_lt(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &written),
             "cublasLtMatmulAlgoConfigGetAttribute(TILE_ID)");
    check_lt(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &written),
             "cublasLtMatmulAlgoConfigGetAttribute(STAGES_ID)");
    check_lt(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof(split_k), &written),
             "cublasLtMatmulAlgoConfigGetAttribute(SPLITK_NUM)");
    char buf[192];
    std::snprintf(buf, sizeof buf, "cublasLt algo=%d tile=%u stages=%u splitK=%d wavesCount=%.3f workspace=%zu%s", static_cast<int>(id),
                  static_cast<unsigned>(tile), static_cast<unsigned>(stages), static_cast<int>(split_k), static_cast<double>(r.wavesCount),
                  r.workspaceSize, bias_epilogue ? " epilogue=bias" : "");
    return buf;
}

std::unique_ptr<Plan> make_plan(const Gemm& g, cublasLtHandle_t handle, std::size_t workspace_bytes,
                                const std::array<std::uint32_t, 4>& align) {
    auto p = std::make_unique<Plan>();
    const cublasComputeType_t compute = g.ab_dtype == DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    check_lt(cublasLtMatmulDescCreate(&p->op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    // cuBLASLt's A is our B and its B our A (C^T = opB(B)^T opA(A)^T).
    const std::int32_t trans_lt_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const std::int32_t trans_lt_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_lt_a, sizeof(trans_lt_a)),
             "cublasLtMatmulDescSetAttribute(TRANSA)");
    check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_lt_b, sizeof(trans_lt_b)),
             "cublasLtMatmulDescSetAttribute(TRANSB)");
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    const cudaDataType_t ab = cuda_type(g.ab_dtype), c = cuda_type(g.c_dtype);
    // Column-major shapes: lt A is [n x k] (or stored [k x n] when transposed), lt B is [k x m]
    // (or [m x k]), lt C is [n x m].
    check_lt(cublasLtMatrixLayoutCreate(&p->la, ab, g.trans_b ? u(g.k) : u(g.n), g.trans_b ? u(g.n) : u(g.k), g.ldb),
             "cublasLtMatrixLayoutCreate(A)");
    check_lt(cublasLtMatrixLayoutCreate(&p->lb, ab, g.trans_a ? u(g.m) : u(g.k), g.trans_a ? u(g.k) : u(g.m), g.lda),
             "cublasLtMatrixLayoutCreate(B)");
    check_lt(cublasLtMatrixLayoutCreate(&p->lc, c, u(g.n), u(g.m), g.ldc), "cublasLtMatrixLayoutCreate(C)");
    set_layout_batch(p->la, g.batch, g.stride_b);
    set_layout_batch(p->lb, g.batch, g.stride_a);
    set_layout_batch(p->lc, g.batch, g.stride_c);

    PreferenceGuard pref;
    const std::uint64_t ws = workspace_bytes;
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
             "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
    const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; ++i) {
        check_lt(cublasLtMatmulPreferenceSetAttribute(pref.p, align_attr[i], &align[static_cast<std::size_t>(i)], sizeof(std::uint32_t)),
                 "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
    }

    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    if (g.bias != nullptr) {
        // Bias vector of lt C's row count (n), broadcast along lt C's columns: along our rows.
        const std::uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
        check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
                 "cublasLtMatmulDescSetAttribute(EPILOGUE)");
        check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)),
                 "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
        const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, p->op, p->la, p->lb, p->lc, p->lc, pref.p, 1, &result, &returned);
        if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) {
            check_lt(s, "cublasLtMatmulAlgoGetHeuristic");
        }
        if (s == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
            p->bias_epilogue = true;
        } else {
            // No bias epilogue for this configuration: plain GEMM, then add_row_bias.
            const std::uint32_t none = CUBLASLT_EPILOGUE_DEFAULT;
            check_lt(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &none, sizeof(none)),
                     "cublasLtMatmulDescSetAttribute(EPILOGUE)");
            returned = 0;
        }
    }
    if (!p->bias_epilogue) {
        check_lt(cublasLtMatmulAlgoGetHeuristic(handle, p->op, p->la, p->lb, p->lc, p->lc, pref.p, 1, &result, &returned),
                 "cublasLtMatmulAlgoGetHeuristic");
    }
    if (returned < 1 || result.state != CUBLAS_STATUS_SUCCESS) {
        throw CudaError("cublasLtMatmulAlgoGetHeuristic: no algorithm for a " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                        std::to_string(g.k) + " " + std::string(dtype_name(g.ab_dtype)) + " GEMM (batch " + std::to_string(g.batch) + ")");
    }
    p->algo = result.algo;
    p->workspace = result.workspaceSize;
    p->note = algo_note(result, p->bias_epilogue);
    return p;
}

void zero_output(const Gemm& g, LaunchContext& ctx) {
    const auto es = static_cast<std::size_t>(dtype_bytes(g.c_dtype));
    auto* stream = static_cast<cudaStream_t>(ctx.stream);
    for (std::int64_t b = 0; b < g.batch; ++b) {
        char* base = static_cast<char*>(g.c) + static_cast<std::size_t>(b * g.stride_c) * es;
        check(cudaMemset2DAsync(base, static_cast<std::size_t>(g.ldc) * es, 0, static_cast<std::size_t>(g.n) * es,
                                static_cast<std::size_t>(g.m), stream),
              "cudaMemset2DAsync(GEMM with K = 0)");
    }
}

void add_bias_batches(const Gemm& g, LaunchContext& ctx) {
    const auto es = dtype_bytes(g.c_dtype);
    for (std::int64_t b = 0; b < g.batch; ++b) {
        add_row_bias(static_cast<char*>(g.c) + b * g.stride_c * es, g.ldc, g.bias, g.c_dtype, g.m, g.n, ctx.stream);
    }
}

}  // namespace

bool gemm_supported(DType ab, DType c) {
    switch (ab) {
        case DType::f32:
        case DType::tf32: return c == DType::f32 || c == DType::tf32;
        case DType::f16: return c == DType::f16 || c == DType::f32;
        case DType::bf16: return c == DType::bf16 || c == DType::f32;
        default: return false;
    }
}

void run_gemm(const Gemm& g, LaunchContext& ctx, const char* label) {
    if (!gemm_supported(g.ab_dtype, g.c_dtype)) {
        throw InputError("cuBLASLt GEMM: no configuration for " + std::string(dtype_name(g.ab_dtype)) + " inputs and " +
                         std::string(dtype_name(g.c_dtype)) + " output");
    }
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0 || g.ldc < g.n || g.lda < (g.trans_a ? g.m : g.k) || g.ldb < (g.trans_b ? g.k : g.n)) {
        throw InputError("cuBLASLt GEMM: inconsistent sizes or leading dimensions");
    }
    if (g.m == 0 || g.n == 0 || g.batch == 0) return;
    if (g.k == 0) {  // an empty sum: zeros (plus bias)
        zero_output(g, ctx);
        if (g.bias != nullptr) add_bias_batches(g, ctx);
        return;
    }
    if (ctx.cublaslt == nullptr) throw CudaError("cuBLASLt GEMM: the launch context has no cuBLASLt handle");
    auto* handle = static_cast<cublasLtHandle_t>(ctx.cublaslt);
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    const std::int64_t ab_bytes = dtype_bytes(g.ab_dtype), c_bytes = dtype_bytes(g.c_dtype);
    const std::array<std::uint32_t, 4> align = {alignment(g.b, g.stride_b, ab_bytes, g.batch),
                                                alignment(g.a, g.stride_a, ab_bytes, g.batch), alignment(g.c, g.stride_c, c_bytes, g.batch),
                                                alignment(g.c, g.stride_c, c_bytes, g.batch)};
    const std::uint32_t bias_align = g.bias == nullptr ? 0 : alignment(g.bias, 0, c_bytes, 1);
    const Key key = {device,
                     static_cast<std::int64_t>(g.ab_dtype),
                     static_cast<std::int64_t>(g.c_dtype),
                     g.m,
                     g.n,
                     g.k,
                     g.trans_a ? 1 : 0,
                     g.trans_b ? 1 : 0,
                     g.lda,
                     g.ldb,
                     g.ldc,
                     g.batch > 1 ? g.stride_a : 0,
                     g.batch > 1 ? g.stride_b : 0,
                     g.batch > 1 ? g.stride_c : 0,
                     g.batch,
                     g.bias != nullptr ? 1 : 0,
                     align[0],
                     align[1],
                     align[2],
                     bias_align,
                     static_cast<std::int64_t>(ctx.workspace_bytes),
                     0,
                     0,
                     0};
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto& plans = cache();
    auto it = plans.find(key);
    if (it == plans.end()) {
        if (plans.size() >= 4096) plans.clear();  // bounded: a long run over many shapes starts over
        it = plans.emplace(key, make_plan(g, handle, ctx.workspace_bytes, align)).first;
    }
    Plan& p = *it->second;
    if (p.bias_epilogue) {
        check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)),
                 "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    }
    const float alpha = g.alpha, beta = 0.0f;
    check_lt(cublasLtMatmul(handle, p.op, &alpha, g.b, p.la, g.a, p.lb, &beta, g.c, p.lc, g.c, p.lc, &p.algo,
                            p.workspace > 0 ? ctx.workspace : nullptr, p.workspace, static_cast<cudaStream_t>(ctx.stream)),
             "cublasLtMatmul");
    if (g.bias != nullptr && !p.bias_epilogue) add_bias_batches(g, ctx);
    if (label != nullptr) {
        std::string note = std::string(label) + " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
        if (g.batch > 1) note += " batch " + std::to_string(g.batch);
        note += " " + std::string(dtype_name(g.ab_dtype)) + ": " + p.note;
        ctx.notes.push_back(std::move(note));
    }
}

std::int64_t batch_offset(const Shape& operand_batch, const Shape& c_batch, const std::vector<std::int64_t>& coords) {
    const std::size_t lead = c_batch.size() - operand_batch.size();
    std::int64_t off = 0;
    for (std::size_t i = 0; i < operand_batch.size(); ++i) {
        off = off * operand_batch[i] + (operand_batch[i] == 1 ? 0 : coords[lead + i]);
    }
    return off;
}

BatchPlan plan_batches(const Shape& a_batch, const Shape& b_batch, const Shape& c_batch, bool trans_a) {
    BatchPlan plan;
    const std::size_t r = c_batch.size();
    if (a_batch.size() > r || b_batch.size() > r) throw InputError("batched matmul: operand batch rank exceeds the output's");
    const auto dim_of = [r](const Shape& s, std::size_t i) {
        const std::size_t lead = r - s.size();
        return i < lead ? std::int64_t{1} : s[i - lead];
    };
    // Effective stride (in matrices) of output batch dimension i in an operand: 0 where it broadcasts.
    const auto stride_of = [&](const Shape& s, std::size_t i) {
        if (dim_of(s, i) == 1) return std::int64_t{0};
        std::int64_t st = 1;
        for (std::size_t j = i + 1; j < r; ++j) st *= dim_of(s, j);
        return st;
    };
    const std::int64_t total = numel(c_batch);
    if (!trans_a && numel(b_batch) == 1 && numel(a_batch) == total) {
        plan.fold_m = true;  // A's batch and rows are one [batch*m x k] matrix times the one B
        plan.inner = total;
        return plan;
    }
    std::size_t i = r;
    bool started = false;
    while (i > 0) {
        const std::size_t d = i - 1;
        const std::int64_t c = c_batch[d];
        if (c != 1) {
            const std::int64_t sa = stride_of(a_batch, d), sb = stride_of(b_batch, d);
            if (!started) {
                plan.stride_a = sa;
                plan.stride_b = sb;
                started = true;
            } else if (sa != plan.stride_a * plan.inner || sb != plan.stride_b * plan.inner) {
                break;
            }
            plan.inner *= c;
        }
        i = d;
    }
    plan.outer.assign(c_batch.begin(), c_batch.begin() + static_cast<std::ptrdiff_t>(i));
    return plan;
}

void run_batched_matmul(const BatchedMatmul& mm, LaunchContext& ctx, const char* label) {
    const std::int64_t total = numel(mm.c_batch);
    if (total == 0 || mm.m == 0 || mm.n == 0) return;
    const std::int64_t ab = dtype_bytes(mm.ab_dtype), cb = dtype_bytes(mm.c_dtype);
    const std::int64_t a_mat = mm.m * mm.k, b_mat = mm.k * mm.n, c_mat = mm.m * mm.n;
    const BatchPlan plan = plan_batches(mm.a_batch, mm.b_batch, mm.c_batch, mm.trans_a);
    Gemm g;
    g.ab_dtype = mm.ab_dtype;
    g.c_dtype = mm.c_dtype;
    g.m = mm.m;
    g.n = mm.n;
    g.k = mm.k;
    g.trans_a = mm.trans_a;
    g.trans_b = mm.trans_b;
    g.lda = mm.trans_a ? mm.m : mm.k;
    g.ldb = mm.trans_b ? mm.k : mm.n;
    g.ldc = mm.n;
    g.alpha = mm.alpha;
    if (plan.fold_m) {
        g.m = mm.m * total;
        g.a = mm.a;
        g.b = mm.b;
        g.c = mm.c;
        run_gemm(g, ctx, label);
        return;
    }
    g.stride_a = plan.stride_a * a_mat;
    g.stride_b = plan.stride_b * b_mat;
    g.stride_c = c_mat;
    const std::int64_t outer = numel(plan.outer);
    // cuBLASLt takes an int32 batch count; very large batches go in chunks.
    constexpr std::int64_t kMaxBatch = 65535;
    std::vector<std::int64_t> coords(mm.c_batch.size(), 0);
    bool first = true;
    for (std::int64_t o = 0; o < outer; ++o) {
        // Coordinates of outer index o over plan.outer (the leading output batch dimensions).
        std::int64_t rest = o;
        for (std::size_t d = plan.outer.size(); d-- > 0;) {
            coords[d] = rest % plan.outer[d];
            rest /= plan.outer[d];
        }
        const std::int64_t a_off = batch_offset(mm.a_batch, mm.c_batch, coords);
        const std::int64_t b_off = batch_offset(mm.b_batch, mm.c_batch, coords);
        for (std::int64_t start = 0; start < plan.inner; start += kMaxBatch) {
            g.batch = std::min(kMaxBatch, plan.inner - start);
            g.a = static_cast<const char*>(mm.a) + (a_off * a_mat + start * g.stride_a) * ab;
            g.b = static_cast<const char*>(mm.b) + (b_off * b_mat + start * g.stride_b) * ab;
            g.c = static_cast<char*>(mm.c) + ((o * plan.inner + start) * c_mat) * cb;
            run_gemm(g, ctx, first ? label : nullptr);
            first = false;
        }
    }
    if (outer > 1 && label != nullptr && !ctx.notes.empty()) {
        ctx.notes.back() += " (x" + std::to_string(outer) + " host-looped GEMMs over broadcast batch dims)";
    }
}

bool launch_gemm(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    if (out.size() != 1 || in.size() < 2) return false;
    const DType dt = in[0].desc.dtype;
    if (in[1].desc.dtype != dt || !gemm_supported(dt, out[0].desc.dtype) || out[0].desc.dtype != dt) return false;
    const Shape& xs = in[0].desc.shape;
    const Shape& ws = in[1].desc.shape;
    const Shape& ys = out[0].desc.shape;
    if (k == OpKind::matmul) {
        if (in.size() != 2 || xs.size() < 2 || ws.size() < 2 || ys.size() < 2) return false;
        BatchedMatmul mm;
        mm.ab_dtype = dt;
        mm.c_dtype = out[0].desc.dtype;
        mm.trans_a = a.get_bool("transpose_a", false);
        mm.trans_b = a.get_bool("transpose_b", false);
        mm.m = ys[ys.size() - 2];
        mm.n = ys.back();
        mm.k = mm.trans_a ? xs[xs.size() - 2] : xs.back();
        mm.a = in[0].data;
        mm.b = in[1].data;
        mm.c = out[0].data;
        mm.a_batch.assign(xs.begin(), xs.end() - 2);
        mm.b_batch.assign(ws.begin(), ws.end() - 2);
        mm.c_batch.assign(ys.begin(), ys.end() - 2);
        if (broadcast_shapes(mm.a_batch, mm.b_batch) != mm.c_batch) {
            throw InputError("matmul: output " + desc_str(out[0].desc) + " is not the broadcast of the inputs' batch dims");
        }
        run_batched_matmul(mm, ctx, "matmul");
        return true;
    }
    if (k == OpKind::linear) {
        if (in.size() > 3 || xs.empty() || ws.size() != 2) return false;
        if (in.size() == 3 && in[2].desc.dtype != out[0].desc.dtype) return false;
        const std::int64_t fan_in = ws[1], fan_out = ws[0];
        Gemm g;
        g.ab_dtype = dt;
        g.c_dtype = out[0].desc.dtype;
        g.m = numel(Shape(xs.begin(), xs.end() - 1));
        g.n = fan_out;
        g.k = fan_in;
        g.trans_a = false;
        g.trans_b = true;  // W is [out, in]: y = x W^T, as torch.nn.Linear
        g.a = in[0].data;
        g.lda = fan_in;
        g.b = in[1].data;
        g.ldb = fan_in;
        g.c = out[0].data;
        g.ldc = fan_out;
        g.bias = in.size() == 3 ? in[2].data : nullptr;
        run_gemm(g, ctx, "linear");
        return true;
    }
    return false;
}

}  // namespace roofline::cuda
