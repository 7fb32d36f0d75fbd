// CUDA kernels of the movement family: transpose, permute, reshape, concat, split, embedding and
// embedding_grad, computing what ops/reference.cpp computes.
//
// Copies move elements as raw bytes (templates on the element or chunk width, never on the dtype),
// so they are exact for every dtype:
//  - reshape, concat, split: one batched row copy (up to 32 parts per launch, blockIdx.y = part),
//    256 threads, grid-stride over each part's rows x chunks, moving the widest chunk (16, 8, 4, 2
//    or 1 bytes) that every pointer, pitch and row length allows: 16-byte loads/stores in the
//    common case.
//  - transpose, permute: dims are collapsed first (size-1 dims dropped, dims that stay adjacent
//    merged); when the innermost collapsed dim keeps input stride 1 (e.g. [B, S, H, D] ->
//    [B, H, S, D]), permute_rows_kernel copies whole rows of it in 16-byte (else 8- or 4-byte)
//    chunks, one source offset per chunk (32-bit index math under 2^31 chunks); when what
//    remains is a (batched) swap of the last two dims, a 32x32 shared-memory
//    tiled transpose (32x8 threads, each moving 4 elements, tile padded to 33 columns against bank
//    conflicts) reads and writes coalesced; otherwise a strided copy (dense writes, gathered reads,
//    offsets from up to 8 dims with 32-bit index math under 2^31 elements).
//  - embedding: a gather of table rows, one thread per chunk of an output row (widest chunk as
//    above); an index outside [0, num_embeddings) yields a zero row (the reference throws; a
//    kernel cannot).
//  - embedding_grad: scatter-add. The table gradient is accumulated in f32 with atomicAdd: directly
//    in the output when it is f32, otherwise in an f32 buffer from ctx.scratch that a second
//    kernel converts to the output dtype (one rounding, as the reference rounds its double sum
//    once). Atomics make the f32 summation order vary from run to run; out-of-range indices are
//    skipped.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/families.hpp"
#include "ops/cuda/launch_shape.hpp"
#include "ops/error.hpp"

namespace roofline::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxDims = 8;
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column: each thread moves kTile / kTileRows elements
constexpr int kMaxParts = 32;

// ---------------------------------------------------------------------------------------------
// Row copies (reshape, concat, split)

struct CopyPart {
    const unsigned char* src = nullptr;
    unsigned char* dst = nullptr;
    std::int64_t rows = 0, row_bytes = 0, src_pitch = 0, dst_pitch = 0;
};

struct CopyBatch {
    CopyPart part[kMaxParts];
    int nparts = 0;
};

template <class Chunk>
__device__ __forceinline__ void copy_rows(const CopyBatch& b) {
    const CopyPart& p = b.part[blockIdx.y];
    const std::int64_t units = p.row_bytes / static_cast<std::int64_t>(sizeof(Chunk));
    const std::int64_t total = p.rows * units;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        std::int64_t r = 0, c = e;
        if (p.rows > 1) {
            r = e / units;
            c = e - r * units;
        }
        const Chunk* s = reinterpret_cast<const Chunk*>(p.src + r * p.src_pitch);
        Chunk* d = reinterpret_cast<Chunk*>(p.dst + r * p.dst_pitch);
        d[c] = s[c];
    }
}

template <class Chunk>
__global__ void __launch_bounds__(kThreads) reshape_copy_kernel(CopyBatch b) {
    copy_rows<Chunk>(b);
}
template <class Chunk>
__global__ void __launch_bounds__(kThreads) concat_copy_kernel(CopyBatch b) {
    copy_rows<Chunk>(b);
}
template <class Chunk>
__global__ void __launch_bounds__(kThreads) split_copy_kernel(CopyBatch b) {
    copy_rows<Chunk>(b);
}

// ---------------------------------------------------------------------------------------------
// transpose / permute

struct Layout {
    int rank = 0;  // collapsed output dims, innermost first
    std::int64_t shape[kMaxDims] = {};
    std::int64_t stride[kMaxDims] = {};  // input stride (elements) of each output dim
};

template <class I>
__device__ __forceinline__ std::int64_t input_offset(I i, const Layout& L) {
    I off = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
        if (d == L.rank) break;
        const I n = static_cast<I>(L.shape[d]);
        off += (i % n) * static_cast<I>(L.stride[d]);
        i /= n;
    }
    return static_cast<std::int64_t>(off);
}

// y (dense) [i] = x[offset of i]
template <class T>
__global__ void __launch_bounds__(kThreads) permute_strided_kernel(const T* __restrict__ x, T* __restrict__ y, Layout L, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = x[n <= INT_MAX ? input_offset(static_cast<unsigned>(i), L) : input_offset(static_cast<std::uint64_t>(i), L)];
    }
}

// A permutation that keeps the innermost (collapsed) dim: y (dense) gathers whole input rows of
// that dim. L is in Chunk units (L.shape[0] = chunks per row, L.stride[0] = 1), so each thread
// moves one Chunk (16 bytes in the common case) and computes its source offset once per chunk.
template <class Chunk>
__global__ void __launch_bounds__(kThreads)
    permute_rows_kernel(const Chunk* __restrict__ x, Chunk* __restrict__ y, Layout L, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    if (n <= INT_MAX) {
        const unsigned n32 = static_cast<unsigned>(n), s32 = static_cast<unsigned>(stride);
        for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n32; i += s32) y[i] = x[input_offset(i, L)];
        return;
    }
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = x[input_offset(static_cast<std::uint64_t>(i), L)];
    }
}

// x [batch][rows][cols] -> y [batch][cols][rows], through a 32x32 tile in shared memory.
template <class T>
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_tiled_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t batch, std::int64_t rows, std::int64_t cols) {
    __shared__ T tile[kTile][kTile + 1];
    const std::int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
    for (std::int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
        const T* xb = x + b * rows * cols;
        T* yb = y + b * rows * cols;
        for (std::int64_t tr = blockIdx.y; tr < tiles_r; tr += gridDim.y) {
            for (std::int64_t tc = blockIdx.x; tc < tiles_c; tc += gridDim.x) {
                const std::int64_t r0 = tr * kTile, c0 = tc * kTile;
                for (int j = static_cast<int>(threadIdx.y); j < kTile; j += kTileRows) {
                    const std::int64_t r = r0 + j, c = c0 + threadIdx.x;
                    if (r < rows && c < cols) tile[j][threadIdx.x] = xb[r * cols + c];
                }
                __syncthreads();
                for (int j = static_cast<int>(threadIdx.y); j < kTile; j += kTileRows) {
                    const std::int64_t c = c0 + j, r = r0 + threadIdx.x;
                    if (c < cols && r < rows) yb[c * rows + r] = tile[threadIdx.x][j];
                }
                __syncthreads();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// embedding, embedding_grad

__device__ __forceinline__ std::int64_t load_index(const void* idx, bool idx64, std::int64_t r) {
    return idx64 ? static_cast<std::int64_t>(static_cast<const long long*>(idx)[r])
                 : static_cast<std::int64_t>(static_cast<const int*>(idx)[r]);
}

// y[r, :] = table[idx[r], :], in chunks of units per row.
template <class Chunk>
__global__ void __launch_bounds__(kThreads)
    embedding_gather_kernel(const Chunk* __restrict__ table, const void* __restrict__ idx, bool idx64, Chunk* __restrict__ y,
                            std::int64_t rows, std::int64_t units, std::int64_t vocab) {
    const std::int64_t total = rows * units;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const std::int64_t r = e / units, c = e - r * units;
        const std::int64_t row = load_index(idx, idx64, r);
        y[e] = row >= 0 && row < vocab ? table[row * units + c] : Chunk{};
    }
}

enum FloatDt : int { fdt_f32, fdt_f16, fdt_bf16 };

__device__ __forceinline__ float load_float(const void* p, int dt, std::int64_t i) {
    switch (dt) {
        case fdt_f32: return static_cast<const float*>(p)[i];
        case fdt_f16: return __half2float(static_cast<const __half*>(p)[i]);
        default: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    }
}

// acc[idx[r], j] += dy[r, j]
__global__ void __launch_bounds__(kThreads)
    embedding_grad_scatter_add_kernel(const void* __restrict__ dy, int dy_dt, const void* __restrict__ idx, bool idx64, float* acc,
                                      std::int64_t rows, std::int64_t dim, std::int64_t vocab) {
    const std::int64_t total = rows * dim;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
        const std::int64_t r = e / dim, j = e - r * dim;
        const std::int64_t row = load_index(idx, idx64, r);
        if (row >= 0 && row < vocab) atomicAdd(acc + row * dim + j, load_float(dy, dy_dt, e));
    }
}

// The f32 accumulator to the output dtype (f16 or bf16), round to nearest even.
__global__ void __launch_bounds__(kThreads)
    embedding_grad_store_kernel(const float* __restrict__ acc, void* __restrict__ y, int dt, std::int64_t n) {
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (dt == fdt_f16)
            static_cast<__half*>(y)[i] = __float2half_rn(acc[i]);
        else
            static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(acc[i]);
    }
}

// ---------------------------------------------------------------------------------------------
// Host side

// Blocks of kThreads for `work` items, at most 8 blocks per SM (one full wave; kernels loop).
unsigned grid_for(std::int64_t work) { return cuda::grid_for(work, kThreads); }

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// Widest power-of-two chunk (<= 16 bytes) dividing every value.
int chunk_bytes(const std::vector<std::uint64_t>& values) {
    int c = 16;
    for (std::uint64_t v : values) {
        while (c > 1 && v % static_cast<std::uint64_t>(c) != 0) c /= 2;
    }
    return c;
}

enum class CopyKind { reshape, concat, split };

template <class Chunk>
void launch_copy_batch(CopyKind kind, const CopyBatch& b, std::int64_t max_units, cudaStream_t s) {
    const dim3 grid(grid_for(max_units), static_cast<unsigned>(b.nparts));
    switch (kind) {
        case CopyKind::reshape:
            reshape_copy_kernel<Chunk><<<grid, kThreads, 0, s>>>(b);
            check_launch("reshape_copy_kernel");
            break;
        case CopyKind::concat:
            concat_copy_kernel<Chunk><<<grid, kThreads, 0, s>>>(b);
            check_launch("concat_copy_kernel");
            break;
        case CopyKind::split:
            split_copy_kernel<Chunk><<<grid, kThreads, 0, s>>>(b);
            check_launch("split_copy_kernel");
            break;
    }
}

void launch_copies(CopyKind kind, const std::vector<CopyPart>& all, LaunchContext& ctx) {
    cudaStream_t s = ctx.stream;
    std::vector<CopyPart> parts;
    for (const CopyPart& p : all) {
        if (p.rows > 0 && p.row_bytes > 0) parts.push_back(p);
    }
    for (std::size_t first = 0; first < parts.size(); first += kMaxParts) {
        CopyBatch b;
        std::vector<std::uint64_t> values;
        const std::size_t end = std::min(parts.size(), first + kMaxParts);
        for (std::size_t i = first; i < end; ++i) {
            const CopyPart& p = parts[i];
            b.part[b.nparts++] = p;
            for (std::uint64_t v :
                 {static_cast<std::uint64_t>(addr(p.src)), static_cast<std::uint64_t>(addr(p.dst)), static_cast<std::uint64_t>(p.row_bytes),
                  static_cast<std::uint64_t>(p.src_pitch), static_cast<std::uint64_t>(p.dst_pitch)}) {
                values.push_back(v);
            }
        }
        const int c = chunk_bytes(values);
        std::int64_t max_units = 0;
        for (int i = 0; i < b.nparts; ++i) max_units = std::max(max_units, b.part[i].rows * (b.part[i].row_bytes / c));
        switch (c) {
            case 16: launch_copy_batch<uint4>(kind, b, max_units, s); break;
            case 8: launch_copy_batch<uint2>(kind, b, max_units, s); break;
            case 4: launch_copy_batch<unsigned>(kind, b, max_units, s); break;
            case 2: launch_copy_batch<unsigned short>(kind, b, max_units, s); break;
            default: launch_copy_batch<unsigned char>(kind, b, max_units, s); break;
        }
        ctx.notes.push_back(std::string(kind == CopyKind::reshape  ? "reshape"
                                        : kind == CopyKind::concat ? "concat"
                                                                   : "split") +
                            "_copy_kernel: " + std::to_string(b.nparts) + " parts, " + std::to_string(c) + "-byte chunks");
    }
}

void require_arity(OpKind k, const Tensors& in, std::size_t nin_lo, std::size_t nin_hi, const Tensors& out, std::size_t nout_lo,
                   std::size_t nout_hi) {
    if (in.size() < nin_lo || in.size() > nin_hi || out.size() < nout_lo || out.size() > nout_hi) {
        throw InputError(std::string(op_name(k)) + ": CUDA kernel got " + std::to_string(in.size()) + " inputs and " +
                         std::to_string(out.size()) + " outputs");
    }
}

[[noreturn]] void mismatch(OpKind k, const TensorDesc& a, const TensorDesc& b) {
    throw InputError(std::string(op_name(k)) + ": " + desc_str(a) + " does not match " + desc_str(b));
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// concat (whole = output) and split (whole = input): part p is rows of n_p * inner elements at
// offset base_p * inner in each row of the whole. The row copies, or nullopt for mixed dtypes.
std::optional<std::vector<CopyPart>> concat_split_plan(OpKind k, const Tensors& parts, const DeviceTensor& whole, const Attrs& a) {
    const Shape& ws = whole.desc.shape;
    const std::int64_t axis = normalize_axis(a.get_int("axis", 0), whole.desc.rank());
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < axis; ++d) outer *= ws[at(d)];
    for (std::size_t d = at(axis) + 1; d < ws.size(); ++d) inner *= ws[d];
    const std::int64_t es = dtype_bytes(whole.desc.dtype);
    std::vector<CopyPart> copies;
    std::int64_t base = 0;
    for (const DeviceTensor& p : parts) {
        if (p.desc.dtype != whole.desc.dtype) return std::nullopt;
        if (p.desc.rank() != whole.desc.rank()) mismatch(k, p.desc, whole.desc);
        for (std::size_t d = 0; d < ws.size(); ++d) {
            if (d != at(axis) && p.desc.shape[d] != ws[d]) mismatch(k, p.desc, whole.desc);
        }
        const std::int64_t n = p.desc.shape[at(axis)];
        if (base + n > ws[at(axis)]) mismatch(k, p.desc, whole.desc);
        const std::int64_t part_row = n * inner * es, whole_row = ws[at(axis)] * inner * es;
        unsigned char* whole_at = static_cast<unsigned char*>(whole.data) + base * inner * es;
        CopyPart c;
        c.rows = outer;
        c.row_bytes = part_row;
        if (k == OpKind::concat) {
            c.src = static_cast<const unsigned char*>(p.data);
            c.src_pitch = part_row;
            c.dst = whole_at;
            c.dst_pitch = whole_row;
        } else {
            c.src = whole_at;
            c.src_pitch = whole_row;
            c.dst = static_cast<unsigned char*>(p.data);
            c.dst_pitch = part_row;
        }
        copies.push_back(c);
        base += n;
    }
    if (base != ws[at(axis)]) throw InputError(std::string(op_name(k)) + ": the parts do not add up to " + desc_str(whole.desc));
    return copies;
}

bool launch_concat_split(OpKind k, const Tensors& parts, const DeviceTensor& whole, const Attrs& a, LaunchContext& ctx) {
    const std::optional<std::vector<CopyPart>> copies = concat_split_plan(k, parts, whole, a);
    if (!copies) return false;
    launch_copies(k == OpKind::concat ? CopyKind::concat : CopyKind::split, *copies, ctx);
    return true;
}

// Output dims (outermost first) with their input strides, collapsed into L: size-1 dims dropped,
// a dim merged into the next inner one where the input stays contiguous across both.
bool make_layout(const Shape& o, const std::vector<std::int64_t>& strides, Layout& L) {
    std::vector<std::int64_t> shape, st;
    for (std::size_t d = 0; d < o.size(); ++d) {
        if (o[d] == 1) continue;
        if (!shape.empty() && st.back() == strides[d] * o[d]) {
            shape.back() *= o[d];
            st.back() = strides[d];
        } else {
            shape.push_back(o[d]);
            st.push_back(strides[d]);
        }
    }
    if (shape.size() > static_cast<std::size_t>(kMaxDims)) return false;
    L = Layout{};
    L.rank = static_cast<int>(shape.size());
    for (int j = 0; j < L.rank; ++j) {
        L.shape[j] = shape[shape.size() - 1 - at(j)];
        L.stride[j] = st[st.size() - 1 - at(j)];
    }
    return true;
}

template <class Chunk>
void launch_permute_rows_chunk(const DeviceTensor& x, const DeviceTensor& y, const Layout& L, std::int64_t units, cudaStream_t s) {
    // The kernel uses 32-bit indices when units <= INT_MAX: i + grid stride (<= 2^31 + 2^25) fits in 32 bits.
    permute_rows_kernel<Chunk>
        <<<grid_for(units), kThreads, 0, s>>>(static_cast<const Chunk*>(x.data), static_cast<Chunk*>(y.data), L, units);
    check_launch("permute_rows_kernel");
}

// A permutation that keeps the innermost collapsed dim (input stride 1), e.g. the attention head
// split [B, S, H, D] -> [B, H, S, D]: whole rows of that dim are copied in the widest chunk that
// the row length, every outer stride and both pointers allow. False when that chunk is no wider
// than an element (the strided element copy is as good).
bool launch_permute_rows(const DeviceTensor& x, const DeviceTensor& y, const Layout& L, std::int64_t n, LaunchContext& ctx) {
    if (L.rank < 1 || L.stride[0] != 1) return false;
    const std::int64_t es = dtype_bytes(y.desc.dtype);
    if (es <= 0) return false;
    std::vector<std::uint64_t> values{static_cast<std::uint64_t>(L.shape[0] * es), static_cast<std::uint64_t>(addr(x.data)),
                                      static_cast<std::uint64_t>(addr(y.data))};
    for (int d = 1; d < L.rank; ++d) values.push_back(static_cast<std::uint64_t>(L.stride[d] * es));
    const int c = chunk_bytes(values);
    if (c <= es || c < 4) return false;
    Layout U = L;
    U.shape[0] = L.shape[0] * es / c;
    for (int d = 1; d < L.rank; ++d) U.stride[d] = L.stride[d] * es / c;
    const std::int64_t units = n * es / c;
    switch (c) {
        case 16: launch_permute_rows_chunk<uint4>(x, y, U, units, ctx.stream); break;
        case 8: launch_permute_rows_chunk<uint2>(x, y, U, units, ctx.stream); break;
        default: launch_permute_rows_chunk<unsigned>(x, y, U, units, ctx.stream); break;
    }
    ctx.notes.push_back("permute_rows_kernel: rows of " + std::to_string(L.shape[0]) + " elements kept whole, " + std::to_string(L.rank) +
                        " collapsed dims, " + std::to_string(c) + "-byte chunks");
    return true;
}

template <class T>
void launch_permute(const DeviceTensor& x, const DeviceTensor& y, const Layout& L, std::int64_t n, LaunchContext& ctx) {
    cudaStream_t s = ctx.stream;
    const T* xp = static_cast<const T*>(x.data);
    T* yp = static_cast<T*>(y.data);
    // Batched swap of the last two dims: output [B, P, Q] from input [B, Q, P].
    const bool swap2 = L.rank == 2 && L.stride[0] == L.shape[1] && L.stride[1] == 1;
    const bool swap3 = L.rank == 3 && L.stride[0] == L.shape[1] && L.stride[1] == 1 && L.stride[2] == L.shape[0] * L.shape[1];
    if (swap2 || swap3) {
        const std::int64_t rows = L.shape[0], cols = L.shape[1], batch = swap3 ? L.shape[2] : 1;
        const std::int64_t tiles_r = (rows + kTile - 1) / kTile, tiles_c = (cols + kTile - 1) / kTile;
        const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(tiles_c, INT_MAX)),
                        static_cast<unsigned>(std::min<std::int64_t>(tiles_r, 65535)),
                        static_cast<unsigned>(std::min<std::int64_t>(batch, 65535)));
        transpose_tiled_kernel<T><<<grid, dim3(kTile, kTileRows), 0, s>>>(xp, yp, batch, rows, cols);
        check_launch("transpose_tiled_kernel");
        ctx.notes.push_back("transpose_tiled_kernel: " + std::to_string(batch) + " x [" + std::to_string(rows) + "," +
                            std::to_string(cols) + "], 32x32 tiles");
        return;
    }
    permute_strided_kernel<T><<<grid_for(n), kThreads, 0, s>>>(xp, yp, L, n);
    check_launch("permute_strided_kernel");
    ctx.notes.push_back("permute_strided_kernel over " + std::to_string(L.rank) + " collapsed dims");
}

bool launch_transpose_permute(OpKind k, const DeviceTensor& x, const DeviceTensor& y, const Attrs& a, LaunchContext& ctx) {
    const Shape& xs = x.desc.shape;
    const std::int64_t r = x.desc.rank();
    std::vector<std::int64_t> perm(xs.size());
    std::iota(perm.begin(), perm.end(), 0);
    if (k == OpKind::transpose) {
        std::swap(perm[at(normalize_axis(a.get_int("dim0", -2), r))], perm[at(normalize_axis(a.get_int("dim1", -1), r))]);
    } else {
        const auto p = a.get_ints("perm", {});
        if (static_cast<std::int64_t>(p.size()) != r) throw InputError("permute: attribute 'perm' does not match " + desc_str(x.desc));
        for (std::size_t i = 0; i < p.size(); ++i) perm[i] = normalize_axis(p[i], r);
    }
    if (y.desc.rank() != r) mismatch(k, x.desc, y.desc);
    std::vector<std::int64_t> xstride(xs.size(), 1);
    for (std::size_t i = xs.size(); i-- > 1;) xstride[i - 1] = xstride[i] * xs[i];
    std::vector<std::int64_t> strides(xs.size());
    for (std::size_t d = 0; d < xs.size(); ++d) {
        if (y.desc.shape[d] != xs[at(perm[d])]) mismatch(k, x.desc, y.desc);
        strides[d] = xstride[at(perm[d])];
    }
    Layout L;
    if (!make_layout(y.desc.shape, strides, L)) return false;
    const std::int64_t n = y.desc.numel();
    if (n == 0) return true;
    if (launch_permute_rows(x, y, L, n, ctx)) return true;
    switch (dtype_bytes(y.desc.dtype)) {
        case 1: launch_permute<std::uint8_t>(x, y, L, n, ctx); return true;
        case 2: launch_permute<std::uint16_t>(x, y, L, n, ctx); return true;
        case 4: launch_permute<std::uint32_t>(x, y, L, n, ctx); return true;
        case 8: launch_permute<std::uint64_t>(x, y, L, n, ctx); return true;
        default: return false;
    }
}

template <class Chunk>
void launch_gather(const DeviceTensor& table, const DeviceTensor& idx, const DeviceTensor& y, std::int64_t rows, std::int64_t units,
                   cudaStream_t s) {
    embedding_gather_kernel<Chunk><<<grid_for(rows * units), kThreads, 0, s>>>(static_cast<const Chunk*>(table.data), idx.data,
                                                                               idx.desc.dtype == DType::int64, static_cast<Chunk*>(y.data),
                                                                               rows, units, table.desc.shape[0]);
    check_launch("embedding_gather_kernel");
}

bool launch_embedding(const Tensors& in, const DeviceTensor& y, LaunchContext& ctx) {
    cudaStream_t s = ctx.stream;
    const DeviceTensor& table = in[0];
    const DeviceTensor& idx = in[1];
    if (!is_index(idx.desc.dtype) || table.desc.dtype != y.desc.dtype) return false;
    if (table.desc.rank() != 2) throw InputError("embedding: table must be [num_embeddings, dim], got " + desc_str(table.desc));
    const std::int64_t rows = idx.desc.numel(), dim = table.desc.shape[1];
    if (y.desc.numel() != rows * dim) mismatch(OpKind::embedding, idx.desc, y.desc);
    const std::int64_t row_bytes = dim * dtype_bytes(y.desc.dtype);
    if (rows == 0 || row_bytes == 0) return true;
    const int c = chunk_bytes(
        {static_cast<std::uint64_t>(row_bytes), static_cast<std::uint64_t>(addr(table.data)), static_cast<std::uint64_t>(addr(y.data))});
    const std::int64_t units = row_bytes / c;
    switch (c) {
        case 16: launch_gather<uint4>(table, idx, y, rows, units, s); break;
        case 8: launch_gather<uint2>(table, idx, y, rows, units, s); break;
        case 4: launch_gather<unsigned>(table, idx, y, rows, units, s); break;
        case 2: launch_gather<unsigned short>(table, idx, y, rows, units, s); break;
        default: launch_gather<unsigned char>(table, idx, y, rows, units, s); break;
    }
    ctx.notes.push_back("embedding_gather_kernel: " + std::to_string(c) + "-byte chunks");
    return true;
}

int float_dt(DType d) {
    switch (d) {
        case DType::f32: return fdt_f32;
        case DType::f16: return fdt_f16;
        case DType::bf16: return fdt_bf16;
        default: return -1;
    }
}

bool launch_embedding_grad(const Tensors& in, const DeviceTensor& y, LaunchContext& ctx) {
    const DeviceTensor& dy = in[0];
    const DeviceTensor& idx = in[1];
    const int dy_dt = float_dt(dy.desc.dtype), y_dt = float_dt(y.desc.dtype);
    if (!is_index(idx.desc.dtype) || dy_dt < 0 || y_dt < 0) return false;
    if (y.desc.rank() != 2) throw InputError("embedding_grad: output must be [num_embeddings, dim], got " + desc_str(y.desc));
    const std::int64_t vocab = y.desc.shape[0], dim = y.desc.shape[1], rows = idx.desc.numel();
    if (dy.desc.numel() != rows * dim) mismatch(OpKind::embedding_grad, dy.desc, y.desc);
    const std::int64_t n = y.desc.numel();
    if (n == 0) return true;
    cudaStream_t s = ctx.stream;
    float* acc = nullptr;
    if (y_dt == fdt_f32) {
        acc = static_cast<float*>(y.data);
    } else {
        if (!ctx.scratch) throw InputError("embedding_grad: the launch context has no scratch memory for the f32 accumulator");
        acc = static_cast<float*>(ctx.scratch(static_cast<std::size_t>(n) * sizeof(float)));
    }
    check(cudaMemsetAsync(acc, 0, static_cast<std::size_t>(n) * sizeof(float), s), "cudaMemsetAsync(embedding_grad accumulator)");
    if (rows > 0) {
        embedding_grad_scatter_add_kernel<<<grid_for(rows * dim), kThreads, 0, s>>>(dy.data, dy_dt, idx.data,
                                                                                    idx.desc.dtype == DType::int64, acc, rows, dim, vocab);
        check_launch("embedding_grad_scatter_add_kernel");
    }
    if (y_dt != fdt_f32) {
        embedding_grad_store_kernel<<<grid_for(n), kThreads, 0, s>>>(acc, y.data, y_dt, n);
        check_launch("embedding_grad_store_kernel");
    }
    ctx.notes.push_back(y_dt == fdt_f32 ? "embedding_grad: f32 atomicAdd into the output"
                                        : "embedding_grad: f32 atomicAdd into scratch, then converted to the output dtype");
    return true;
}

}  // namespace

bool launch_movement(OpKind k, const Tensors& in, const Attrs& a, const Tensors& out, LaunchContext& ctx) {
    switch (k) {
        case OpKind::reshape: {
            require_arity(k, in, 1, 1, out, 1, 1);
            if (in[0].desc.dtype != out[0].desc.dtype) return false;
            if (in[0].desc.numel() != out[0].desc.numel()) mismatch(k, in[0].desc, out[0].desc);
            CopyPart p;
            p.src = static_cast<const unsigned char*>(in[0].data);
            p.dst = static_cast<unsigned char*>(out[0].data);
            p.rows = 1;
            p.row_bytes = p.src_pitch = p.dst_pitch = out[0].desc.bytes();
            launch_copies(CopyKind::reshape, {p}, ctx);
            return true;
        }
        case OpKind::transpose:
        case OpKind::permute:
            require_arity(k, in, 1, 1, out, 1, 1);
            if (in[0].desc.dtype != out[0].desc.dtype) return false;
            return launch_transpose_permute(k, in[0], out[0], a, ctx);
        case OpKind::concat: require_arity(k, in, 1, SIZE_MAX, out, 1, 1); return launch_concat_split(k, in, out[0], a, ctx);
        case OpKind::split: require_arity(k, in, 1, 1, out, 1, SIZE_MAX); return launch_concat_split(k, out, in[0], a, ctx);
        case OpKind::embedding: require_arity(k, in, 2, 2, out, 1, 1); return launch_embedding(in, out[0], ctx);
        case OpKind::embedding_grad: require_arity(k, in, 2, 2, out, 1, 1); return launch_embedding_grad(in, out[0], ctx);
        default: return false;
    }
}

}  // namespace roofline::cuda
