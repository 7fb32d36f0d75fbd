#include "sim/gpu_model.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "sim/achieved.hpp"

#include "ops/op_rule.hpp"

namespace roofline {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

Kernel streaming_part(const std::string& name, const Work& w, DType d, std::int64_t elements);

// Tiles cuBLAS/CUTLASS kernels use for tensor-core GEMMs on sm_80/sm_90 (CUTLASS default
// threadblock shapes), largest first.
const GemmTile kTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};

// SIMT SGEMM tiles: the cuBLAS kernels PyTorch's fp32 (TF32 off) GEMMs launch on Pascal to Ampere,
// named <arch>_sgemm_<A>x<B>[_sliced1x4]_<layout> (every first kernel of the public NeuSight
// linear and bmm measurements is one of these, tests/data/public/neusight). cuBLAS is column-major:
// A runs along the (row-major) output's columns and B along its rows (the launches' grid x is
// ceil(columns / A), grid y ceil(rows / B)), so a GemmTile {m = rows, n = columns} is {B, A}:
// 128x128, 128x64, 64x64, 128x32, 32x128, then the sliced 128x32, 64x32 and 32x32. Threads per
// block as the public rows' launch columns give them (Block x of every row that names the kernel,
// on every GPU): 256, 128, 64, 256, 256, then 256, 256, 128; the sliced tiles run four K-slices of
// the block's warps.
const GemmTile kSimtTiles[] = {{128, 128, 256, false}, {64, 128, 128, false}, {64, 64, 64, false}, {32, 128, 256, false},
                               {128, 32, 256, false},  {32, 128, 256, true},  {32, 64, 256, true}, {32, 32, 128, true}};
// Batched SGEMMs (bmm) use the unsliced tiles without split-K.
constexpr std::size_t kSimtBatchedTiles = 5;
// cuDNN's fp32 implicit-GEMM convolution kernels (scudnn_128x128, _128x64, _128x32 in the public
// conv measurements' kernel lists) with the 128 along the GEMM's rows (output pixels for the
// forward pass), the orientation the convolution terms were fitted with; the launch columns of the
// public rows describe cuDNN's offsets kernel, not these, so the orientation is not read off a grid.
const GemmTile kConvSimtTiles[] = {{128, 128, 256, false}, {128, 64, 128, false}, {64, 64, 64, false}, {128, 32, 128, false},
                                   {32, 128, 128, false},  {128, 32, 512, true},  {64, 32, 256, true}, {32, 32, 128, true}};

// The implicit-GEMM forward kernels cuDNN 8.9 launches before sm_90: the public conv rows whose
// main kernel is an scudnn implicit GEMM (2,689, every GPU) name only scudnn_128x128 (202 rows,
// 256 threads per block), _128x64 (1,897, 128 threads) and _128x32 (590; 64 threads in 505), and
// their grid z is 1 in every one: no split over the reduction. The threads per block follow the
// tile (Block x), so the launch columns there are the main kernel's. Read off the kernel names
// and launch columns, not fitted. Data and weight gradients, and sm_90's cuDNN 9, keep the wider
// set below (no launch data for them).
const GemmTile kCudnnForwardTiles[] = {{128, 128, 256, false}, {128, 64, 128, false}, {128, 32, 64, false}};

// The one kernel cuBLAS (12.1, as PyTorch 2.1 ships it) launches for every fp32 strided-batched
// SGEMM on some architectures, whatever the shape: the public bmm measurements' first kernel is
// maxwell_sgemm_128x64_nn in 2491 of 2500 rows on the P100 (sm_60) and 2491 of 2500 on the P4
// (sm_61), ampere_sgemm_128x128_nn in 2490 of 2500 on the A100 (sm_80); on the V100 (sm_70) and T4
// (sm_75) it varies with the shape (four tiles), so there the modelled best tile stands. Read off
// the kernel names (like the tile set above), not fitted; a chip of another architecture gets the
// modelled choice.
std::optional<GemmTile> cublas_batched_simt_tile(const Hardware& hw) {
    const ComputeCapability cc = hw.gpu->compute_capability;
    if (cc.major == 6) return kSimtTiles[1];                   // maxwell_sgemm_128x64_nn
    if (cc.major == 8 && cc.minor == 0) return kSimtTiles[0];  // ampere_sgemm_128x128_nn
    return std::nullopt;
}

// A thread's micro-tile of a SIMT tile (outputs per thread = tile / threads per K-slice).
std::pair<double, double> simt_micro_tile(const GemmTile& t) {
    const double slices = t.sliced ? 4.0 : 1.0;
    const double outputs = static_cast<double>(t.m * t.n) / (static_cast<double>(t.threads) / slices);
    return outputs >= 64 ? std::pair{8.0, 8.0} : std::pair{8.0, std::max(1.0, outputs / 8.0)};
}

// Launch of a GEMM threadblock: 256 threads, the operand tiles double-buffered in shared memory
// (two stages of (tm + tn) x 32 elements), registers as CUTLASS kernels of that size use.
// Capped at what one block may use on the chip (fewer pipeline stages on smaller SMs).
LaunchConfig gemm_launch(const GemmTile& t, DType d, const Hardware& hw) {
    const auto max_smem = static_cast<std::int64_t>(hw.gpu->max_shared_memory_per_block_bytes.value);
    if (t.threads > 0) {
        // SIMT: two stages of (tm + tn) x 8 fp32 operands; the micro-tile's accumulators, operand
        // fragments and addresses in registers (~ 2 x outputs + 40 per thread, as cuBLAS's sgemm
        // kernels report).
        const auto [mr, nr] = simt_micro_tile(t);
        const auto regs = static_cast<std::int64_t>(std::min(255.0, 2.0 * mr * nr + 40.0));
        const std::int64_t smem = 2 * (t.m + t.n) * 8 * 4 + (t.sliced ? t.m * t.n * 4 : 0);
        return LaunchConfig{t.threads, regs, std::min(smem, max_smem)};
    }
    const std::int64_t stage_bytes = (t.m + t.n) * 32 * dtype_bytes(d);
    return LaunchConfig{256, t.m * t.n >= 256 * 128 ? 232 : 128, std::min(2 * stage_bytes, max_smem)};
}

std::int64_t gemm_tiles(const GemmShape& s, const GemmTile& t) { return s.batch * ceil_div(s.m, t.m) * ceil_div(s.n, t.n); }

// Elementwise and row-wise kernels: 256 threads per block, vectorised so that each thread handles
// 16 bytes of the output (one 128-bit access), one block per 256 such vectors.
Kernel streaming_kernel(const Graph& g, NodeId n, const Work& w, DType d) {
    Kernel k;
    const Node& node = g.node(n);
    // One thread per 16 bytes of the largest tensor it streams (a reduction reads more than it writes).
    std::int64_t elements = 0;
    for (TensorId t : node.outputs) elements = std::max(elements, g.tensor(t).desc.numel());
    for (TensorId t : node.inputs) elements = std::max(elements, g.tensor(t).desc.numel());
    const std::int64_t per_thread = std::max<std::int64_t>(1, 16 / std::max<std::int64_t>(1, dtype_bytes(d)));
    k.launch = LaunchConfig{256, 32, 0};
    k.blocks = std::max<std::int64_t>(1, ceil_div(elements, 256 * per_thread));
    k.work = w;
    k.dtype = d;
    return k;
}

// The GEMM kernel cuBLAS-like heuristics would pick for shape s: the tile and split-K with the
// least modelled time.
Kernel best_gemm(GemmShape s, const Work& w, DType d, const Hardware& hw, const GpuModelOptions& opt, bool aligned = true,
                 bool output_aligned = true) {
    Kernel k;
    k.output_aligned = output_aligned;
    // Tensor cores run any dtype the chip has a matrix peak for; a K that is not a multiple of
    // the alignment is padded up to it (the wasted MACs cost time), M and N are padded by the
    // tile quantization below.
    k.tensor_cores = hw.matrix_flop_per_s.count(d) != 0;
    k.aligned = aligned;
    if (k.tensor_cores) s.k = ceil_div(s.k, opt.tensor_core_alignment) * opt.tensor_core_alignment;
    std::optional<KernelCost> best;
    std::int64_t best_area = 0;
    std::vector<std::int64_t> splits = {1, 2, 4, 8, 16};
    if (opt.split_k)
        splits = {*opt.split_k};
    else if (opt.gemm_tile)
        splits = {1};
    std::span<const GemmTile> tiles = kTiles;
    std::optional<GemmTile> batched_tile;
    if (!k.tensor_cores && s.batch > 1 && s.conv == GemmShape::Conv::none && !s.library_internal && opt.cublas_batched_tile)
        batched_tile = cublas_batched_simt_tile(hw);
    const std::span<const GemmTile> simt = s.conv == GemmShape::Conv::none ? std::span<const GemmTile>(kSimtTiles) : kConvSimtTiles;
    const bool cudnn_forward =
        !k.tensor_cores && s.conv == GemmShape::Conv::forward && !hw.gpu->compute_capability.at_least(9) && opt.cudnn_forward_tiles;
    if (cudnn_forward)
        tiles = kCudnnForwardTiles;
    else if (!k.tensor_cores)
        tiles = batched_tile ? std::span<const GemmTile>(&*batched_tile, 1) : s.batch > 1 ? simt.first(kSimtBatchedTiles) : simt;
    if (!k.tensor_cores && (s.batch > 1 || cudnn_forward) && !opt.split_k) splits = {1};
    for (const GemmTile& t : tiles) {
        if (opt.gemm_tile && (t.m != opt.gemm_tile->m || t.n != opt.gemm_tile->n)) continue;
        for (std::int64_t split : splits) {
            if (split < 1 || (split > 1 && s.k / split < 64)) continue;  // keep at least 64 of K per block
            Kernel c;
            c.work = w;
            c.dtype = d;
            c.tensor_cores = k.tensor_cores;
            c.aligned = aligned;
            c.output_aligned = output_aligned;
            GemmShape cs = s;
            cs.tile = t;
            cs.tiles = gemm_tiles(s, t);
            cs.split_k = split;
            c.gemm = cs;
            c.launch = gemm_launch(t, d, hw);
            c.blocks = cs.tiles * split;
            const KernelCost cost = gpu_kernel_cost(c, hw, opt);
            // cuBLAS's heuristics rank the larger tiles first (NVIDIA Matrix Multiplication
            // Background guide: 256x128 most efficient down to 64x64): a smaller tile (or a split)
            // wins only when it is more than 2% faster, not on a rounding of the tail.
            const bool larger = best && t.m * t.n > best_area;
            if (!best || cost.time_s < best->time_s * (larger ? 1.02 : 0.98)) {
                best_area = t.m * t.n;
                best = cost;
                k = c;
            }
        }
    }
    if (opt.gemm_tile && !best) {  // a forced tile outside the list
        GemmShape cs = s;
        cs.tile = *opt.gemm_tile;
        cs.tiles = gemm_tiles(s, cs.tile);
        k.gemm = cs;
        k.launch = gemm_launch(cs.tile, d, hw);
        k.blocks = cs.tiles;
        k.work = w;
        k.dtype = d;
    }
    return k;
}

// 16-bit tensor-core kernels need every operand's leading dimension (its last stored dimension)
// to be a multiple of 16 bytes.
struct Alignment {
    bool operands = true, output = true;
};
Alignment gemm_alignment(const Graph& g, const Node& node, DType d) {
    const std::int64_t elt = dtype_bytes(d);
    auto ok = [&](TensorId t) {
        const Shape& s = g.tensor(t).desc.shape;
        return s.empty() || (s.back() * elt) % 16 == 0;
    };
    Alignment a;
    for (std::size_t i = 0; i < std::min<std::size_t>(2, node.inputs.size()); ++i) a.operands = a.operands && ok(node.inputs[i]);
    a.output = ok(node.outputs[0]);
    return a;
}

// Row-wise kernels (softmax, layernorm, rmsnorm, cross-entropy, their gradients, reductions over
// the last axis) launch the way Apex/PyTorch/OneFlow's do, and the project's own: rows of up to
// 1024 elements one warp per row, 4 rows per 128-thread block, the row in registers; longer rows
// one 512-thread block per row. Registers as ptxas reports for the project's row kernels
// (ops/cuda/rowwise.cu: 84-128 for the register-resident rows, 64 for the streaming long rows).
std::optional<Kernel> row_kernel(const Graph& g, NodeId n, const Work& w, DType d, const GpuModelOptions& opt) {
    const Node& node = g.node(n);
    const OpTraits& traits = traits_of(node.kind);
    if (traits.kernel != KernelForm::row) return std::nullopt;
    const Shape& x = g.tensor(node.inputs[0]).desc.shape;
    if (x.empty()) return std::nullopt;
    std::int64_t reduced = 1;  // the elements of a row: the last axis, or the trailing axes reduced together
    if (traits.row_axes_attr) {
        // The executor canonicalises a reduction over the trailing axes to rows x R and runs its
        // row kernel (ops/cuda/reduce.cu), one block per row when rows are few: a reduction over
        // every axis is one block.
        auto axes = node.attrs.get_ints("axes", {});
        const auto rank = static_cast<std::int64_t>(x.size());
        for (auto& a : axes) a = a < 0 ? a + rank : a;
        std::sort(axes.begin(), axes.end());
        const bool trailing = !axes.empty() && axes.back() == rank - 1 && axes.front() == rank - static_cast<std::int64_t>(axes.size());
        if (!trailing || (axes.size() > 1 && opt.eager)) return std::nullopt;  // not a row reduction
        for (const auto a : axes) reduced *= std::max<std::int64_t>(1, x[static_cast<std::size_t>(a)]);
    } else if (node.attrs.get_int("axis", -1) != -1 && node.attrs.get_int("axis", -1) != static_cast<std::int64_t>(x.size()) - 1) {
        return std::nullopt;
    }
    const std::int64_t len = std::max<std::int64_t>(1, traits.row_axes_attr ? reduced : x.back());
    const std::int64_t rows = std::max<std::int64_t>(1, g.tensor(node.inputs[0]).desc.numel() / len);
    Kernel k;
    k.work = w;
    k.dtype = d;
    k.row = true;
    // PyTorch's softmax kernels (the eager runtime; the evidence is theirs): passes over the row
    // separated by block reductions (Kernel::latency_bound_row). The project's own row kernels keep
    // the row in registers.
    k.latency_bound_row = opt.eager && traits.row_launch == RowLaunch::softmax;
    k.norm = traits.norm;
    if (traits.row_launch == RowLaunch::block_per_row) {
        // PyTorch's vectorized_layer_norm_kernel and layer_norm_grad_input_kernel: one 128-thread
        // block (32 x 4) per row, whatever its length (aten/src/ATen/native/cuda/layer_norm_kernel.cu).
        k.launch = LaunchConfig{128, 64, 1024};
        k.blocks = rows;
    } else if (len <= 1024) {
        k.launch = LaunchConfig{128, 112, 0};
        k.blocks = ceil_div(rows, 4);
    } else {
        k.launch = LaunchConfig{512, 64, 2048};
        k.blocks = rows;
    }
    return k;
}

// Materialised attention: S = Q K^T (a batched GEMM), P = softmax(mask(scale * S)) (a row kernel
// with the scale and mask in its pass), O = P V (a batched GEMM): one kernel per term of the op's
// own work (ops/attention_op.cpp counts the same terms), so the parts add up to exactly the work
// its lower bound is taken from.
Kernel attention_kernels(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt, DType d) {
    const Node& node = g.node(n);
    const TensorDesc& qd = g.tensor(node.inputs[0]).desc;
    const TensorDesc& kd = g.tensor(node.inputs[1]).desc;
    const TensorDesc& vd = g.tensor(node.inputs[2]).desc;
    const TensorDesc& od = g.tensor(node.outputs[0]).desc;
    const Shape& q = qd.shape;
    const Shape& kk = kd.shape;
    const std::int64_t sq = q[q.size() - 2], dq = q.back(), sk = kk[kk.size() - 2], dv = vd.shape.back();
    const std::int64_t batch = od.numel() / std::max<std::int64_t>(1, sq * dv);
    Shape score_shape(q.begin(), q.end() - 2);
    score_shape.push_back(sq);
    score_shape.push_back(sk);
    const TensorDesc scores{score_shape, qd.dtype};
    const std::int64_t elements = scores.numel();
    Kernel all;
    all.work = g.work(n);
    all.dtype = d;
    Attrs tb;
    tb.set("transpose_b", true);
    const TensorDesc qk_in[2] = {qd, kd};
    const TensorDesc pv_in[2] = {scores, vd};
    const TensorDesc s1[1] = {scores};
    const TensorDesc o1[1] = {od};
    Kernel k1 = best_gemm(GemmShape{batch, sq, sk, dq, {}, 0, 1}, count_work(OpKind::matmul, qk_in, s1, tb), d, hw, opt);
    k1.name = node.name + ".qk";
    all.parts.push_back(k1);
    // The scale and the causal mask in the softmax's pass (ops/attention_op.cpp counts the same).
    Work smw = count_work(OpKind::softmax, s1, s1, Attrs{});
    Attrs scale;
    scale.set("factor", node.attrs.get_double("scale", 1.0));
    smw.vector_flops += count_work(OpKind::scale, s1, s1, scale).vector_flops;
    if (node.attrs.get_bool("causal", false)) smw.vector_flops += count_work(OpKind::causal_mask, s1, s1, Attrs{}).vector_flops;
    Kernel sm = streaming_part(node.name + ".softmax", smw, d, elements);
    sm.row = true;
    sm.latency_bound_row = opt.eager;
    const std::int64_t rows = std::max<std::int64_t>(1, elements / std::max<std::int64_t>(1, sk));
    if (sk <= 1024) {
        sm.launch = LaunchConfig{128, 112, 0};
        sm.blocks = ceil_div(rows, 4);
    } else {
        sm.launch = LaunchConfig{512, 64, 2048};
        sm.blocks = rows;
    }
    all.parts.push_back(sm);
    Kernel k3 = best_gemm(GemmShape{batch, sq, dv, sk, {}, 0, 1}, count_work(OpKind::matmul, pv_in, o1, Attrs{}), d, hw, opt);
    k3.name = node.name + ".pv";
    all.parts.push_back(k3);
    all.launch = k1.launch;
    all.blocks = k1.blocks;
    all.tensor_cores = k1.tensor_cores;
    return all;
}

// cuDNN's Winograd algorithms take 3x3, stride-1, undilated, ungrouped 2-D convolutions.
bool winograd_eligible(const Node& node, const Shape& x, const Shape& wt, const Shape& out) {
    return x.size() == 4 && wt.size() == 4 && out.size() == 4 && wt[2] == 3 && wt[3] == 3 && node.attrs.get_int("groups", 1) == 1 &&
           node.attrs.get_ints("stride", {1, 1}) == std::vector<std::int64_t>{1, 1} &&
           node.attrs.get_ints("dilation", {1, 1}) == std::vector<std::int64_t>{1, 1};
}

// The filter transform G g G^T of every filter to an a x a tile (a^2 = a2 values a filter), in a
// kernel of its own before the product (both of cuDNN's Winograd algorithms).
Kernel winograd_filter_part(const Graph& g, const Node& node, DType d, std::int64_t a2) {
    const std::int64_t cin = g.tensor(node.inputs[0]).desc.shape[1], cout = g.tensor(node.outputs[0]).desc.shape[1];
    Work f;
    f.bytes_read = g.tensor(node.inputs[1]).desc.bytes();
    f.bytes_written = a2 * cin * cout * dtype_bytes(d);
    f.vector_flops = 2 * 3 * a2 * cin * cout;
    return streaming_part(node.name + ".winograd_filter", f, d, a2 * cin * cout);
}

}  // namespace

// cuDNN's fused Winograd F(2x2, 3x3) forward kernel (*_scudnn_winograd_128x128_*_tile<n><h><w>*),
// the F(2x2) algorithm cuDNN runs: its launch, read off every public row that ran it (3,442 of
// 3,442 on the P100, P4, T4 and V100, tests/data/public/neusight), is a grid of
// ceil(N/n) x ceil(T_h/h) x ceil(T_w/w) x ceil(C_out/32) blocks of 256 threads (T = ceil(output
// side / 2) Winograd tiles a side). Each block computes 32 output channels of n x h x w = 32
// output tiles of n images: the 16 Winograd components of a 32 x 32 product each, the
// accumulators of a 128 x 128 SGEMM tile, over the input channels, with the input and output
// transforms in its main loop and epilogue (the input transform's 32 adds a tile and channel,
// against the 16 x 32 = 512 FFMAs a tile and channel: 1/16, not counted). The filter's transform runs first, in
// its own kernel (generatewinogradtileskernel in the same rows). So tiles are padded per image and
// channels to 32, a waste the batched-GEMM form of the algorithm does not have: 8 x 8 output
// pixels of a 5 x 5 image in a 128-pixel block. cuDNN's Maxwell-generation kernels (sm_5x/6x,
// the P100's and P4's rows) come in six tile shapes (n, h, w) and the one with the least padding
// is taken here (the rows' own choice matches it in 977 of 2,057 rows, the rest spread over the
// shapes with no rule the shape alone shows); the Volta-generation ones (T4, V100: 1,385 of
// 1,385 rows) in one, 1 x 4 x 8.
std::optional<Kernel> fused_winograd_conv(const Graph& g, NodeId n, const Hardware& hw, DType d) {
    const Node& node = g.node(n);
    const Shape& x = g.tensor(node.inputs[0]).desc.shape;
    const Shape& wt = g.tensor(node.inputs[1]).desc.shape;
    const Shape& out = g.tensor(node.outputs[0]).desc.shape;
    if (!winograd_eligible(node, x, wt, out)) return std::nullopt;
    struct TileShape {
        std::int64_t images, rows, cols;
    };
    static constexpr TileShape kMaxwell[] = {{1, 4, 8}, {2, 4, 4}, {2, 2, 8}, {4, 1, 8}, {4, 2, 4}, {4, 4, 2}};
    const std::span<const TileShape> shapes =
        hw.gpu->compute_capability.major < 7 ? std::span<const TileShape>(kMaxwell) : std::span<const TileShape>(kMaxwell, 1);
    const std::int64_t th = ceil_div(out[2], 2), tw = ceil_div(out[3], 2);
    const std::int64_t cin = x[1], cout = out[1];
    std::int64_t blocks = 0;
    const TileShape* shape = nullptr;
    for (const TileShape& t : shapes) {
        const std::int64_t b = ceil_div(out[0], t.images) * ceil_div(th, t.rows) * ceil_div(tw, t.cols) * ceil_div(cout, 32);
        if (blocks == 0 || b < blocks) blocks = b, shape = &t;
    }
    const std::int64_t tiles = out[0] * th * tw;
    Kernel all;
    all.work = g.work(n);
    all.dtype = d;
    all.parts.push_back(winograd_filter_part(g, node, d, 16));
    Work mm;
    mm.matrix_flops = 2 * 16 * tiles * cin * cout;
    mm.bytes_read = g.tensor(node.inputs[0]).desc.bytes() + all.parts.back().work.bytes_written;
    mm.bytes_written = g.tensor(node.outputs[0]).desc.bytes();
    Kernel gemm;
    gemm.name = node.name + ".winograd_fused";
    gemm.work = mm;
    gemm.dtype = d;
    // As a 128 x 128-tiled SGEMM of [4 x tiles, C_in] x [C_in, 4 x C_out] (the same products and
    // padding: a block's 32 tiles x 32 channels x 16 components), one block per launched block.
    GemmShape s{1, 4 * tiles, 4 * cout, cin, kConvSimtTiles[0], blocks, 1};
    s.conv = GemmShape::Conv::forward;
    s.library_internal = true;
    gemm.gemm = s;
    gemm.launch = gemm_launch(s.tile, d, hw);
    gemm.blocks = blocks;
    // cuDNN's grid: x over the images and the channel blocks, y and z over the tile rows and columns.
    gemm.launch_text =
        fmt::format("winograd 2x2 tile{}{}{} grid {}x{}x{}", shape->images, shape->rows, shape->cols,
                    ceil_div(out[0], shape->images) * ceil_div(cout, 32), ceil_div(th, shape->rows), ceil_div(tw, shape->cols));
    all.parts.push_back(gemm);
    all.launch = gemm.launch;
    all.blocks = blocks;
    all.transformed = true;  // fewer MACs than the op's work: capped at the op's bound (Kernel::transformed)
    return all;
}

namespace {

// cuDNN's non-fused Winograd F(4x4, 3x3) convolution (Lavin & Gray 2016, "Fast Algorithms for
// Convolutional Neural Networks"; the public rows' winogradforwarddata4x4 / winogradforwardfilter4x4
// / sgemm / winogradforwardoutput4x4 sequence, on every GPU). Each m x m output tile comes from an
// a x a input tile (m = 4, a = m + 2), so the multiplications become a^2 batched GEMMs of
// [N x tiles, C_in] x [C_in, C_out] (9 m^2 / a^2 = 4x fewer MACs than direct), between an input
// transform (writes a^2 / m^2 x the input), a filter transform (a^2 x C_in x C_out, every call)
// and an output transform (reads a^2 / m^2 x the output). cuDNN's heuristics pick among it, the
// fused F(2x2) kernel (fused_winograd_conv) and implicit GEMM; the model takes the fastest.
std::optional<Kernel> nonfused_winograd_conv(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt, DType d) {
    const Node& node = g.node(n);
    const Shape& x = g.tensor(node.inputs[0]).desc.shape;
    const Shape& wt = g.tensor(node.inputs[1]).desc.shape;
    const Shape& out = g.tensor(node.outputs[0]).desc.shape;
    if (!winograd_eligible(node, x, wt, out)) return std::nullopt;
    constexpr std::int64_t m = 4, a = m + 2, a2 = a * a;
    const std::int64_t tiles = out[0] * ceil_div(out[2], m) * ceil_div(out[3], m);
    const std::int64_t cin = x[1], cout = out[1], elt = dtype_bytes(d);
    const Work total = g.work(n);
    Kernel all;
    all.work = total;
    all.dtype = d;
    Work in;
    in.bytes_read = g.tensor(node.inputs[0]).desc.bytes();
    in.bytes_written = a2 * tiles * cin * elt;
    in.vector_flops = 2 * a * a2 * tiles * cin;  // B^T d B as dense a x a products (an upper bound; the transforms stream)
    all.parts.push_back(streaming_part(node.name + ".winograd_in", in, d, a2 * tiles * cin));
    all.parts.push_back(winograd_filter_part(g, node, d, a2));  // on every call
    Work mm;
    mm.matrix_flops = 2 * a2 * tiles * cin * cout;
    mm.bytes_read = in.bytes_written + a2 * cin * cout * elt;
    mm.bytes_written = a2 * tiles * cout * elt;
    GemmShape gs{a2, tiles, cout, cin, {}, 0, 1};
    gs.library_internal = true;
    Kernel gemm = best_gemm(gs, mm, d, hw, opt);
    gemm.name = node.name + ".winograd_gemm";
    all.parts.push_back(gemm);
    Work o;
    o.bytes_read = mm.bytes_written;
    o.bytes_written = g.tensor(node.outputs[0]).desc.bytes();
    o.vector_flops = 2 * m * a * a * tiles * cout;  // A^T M A
    all.parts.push_back(streaming_part(node.name + ".winograd_out", o, d, a2 * tiles * cout));
    all.launch = gemm.launch;
    all.blocks = gemm.blocks;
    all.transformed = true;  // fewer MACs than the op's work: capped at the op's bound (Kernel::transformed)
    return all;
}

// cuDNN's choice, for a grouped convolution pass, of its single grouped direct kernel
// (conv2d_grouped_direct_kernel, dgrad2d_/wgrad2d_grouped_direct_kernel) over its group-by-group
// engines. A classification of cuDNN 9.19's heuristics on sm_90, fitted on the 470 grouped shapes of
// tests/data/public/h100-conv-2026-11-27 (both fit files; per pass, the best two-threshold rule):
//   forward: batch <= 2 and <= 12 input channels per group (410 of 470 right; always per group: 383);
//   data gradient: <= 20 input channels per group and batch x output pixels <= 1024 (420; 408);
//   weight gradient: <= 36 output channels per group and batch x output pixels <= 2048 (396; 311).
// On torchvision's grouped convolutions at batch 1 and 32 (tests/data/public/h100-conv-2026-11-26,
// never fitted on) the rules name the kernel cuDNN ran for 22, 20 and 23 of 28 shapes (always per
// group: 16, 18, 15). A fitted classification, labelled so in docs/ACCURACY.md.
bool cudnn_grouped_direct(const Graph& g, NodeId n) {
    const Node& node = g.node(n);
    const KernelForm form = traits_of(node.kind).kernel;
    const std::int64_t groups = node.attrs.get_int("groups", 1);
    // y or dy: (batch, C_out, H_out, W_out); the weight (or its gradient): (C_out, C_in / groups, kh, kw)
    const Shape& y = g.tensor(form == KernelForm::conv_forward ? node.outputs[0] : node.inputs[0]).desc.shape;
    const Shape& wt = g.tensor(form == KernelForm::conv_grad_weight ? node.outputs[0] : node.inputs[1]).desc.shape;
    if (y.size() != 4 || wt.size() != 4 || groups <= 0) return false;
    const std::int64_t batch = y[0], pixels = y[0] * y[2] * y[3], in_per_group = wt[1], out_per_group = y[1] / groups;
    switch (form) {
        case KernelForm::conv_forward: return batch <= 2 && in_per_group <= 12;
        case KernelForm::conv_grad_input: return in_per_group <= 20 && pixels <= 1024;
        case KernelForm::conv_grad_weight: return out_per_group <= 36 && pixels <= 2048;
        default: return false;
    }
}

// A grouped convolution (2 or more groups, not depthwise) in eager PyTorch: cuDNN runs it group
// by group, one kernel (and one set of helper kernels) per group, each an implicit GEMM over its
// own C/groups channels. Seen on an H100 with cuDNN 9.19 (tests/data/public/h100-conv-2026-11-27,
// 226 synthetic grouped shapes, every kernel timed): 196 of 226 forward calls and 221 of 226
// backward calls launch their main kernels exactly `groups` times; the other 30 forward shapes ran
// one conv2d_grouped_direct_kernel (a choice of cuDNN's heuristics this model does not make). The
// parts run one after another, so a group's narrow GEMM pays its own tile quantisation and wave
// tail, and each part is one launch of the call's host time (AnalysisOptions::eager_cudnn_group_host_s).
Kernel grouped_conv_per_group(const Kernel& whole, GemmShape s, const Work& w, DType d, const Hardware& hw, const GpuModelOptions& opt,
                              const Alignment& al) {
    const std::int64_t groups = s.batch;
    s.batch = 1;
    const auto share = [groups](std::int64_t v, bool last) { return v / groups + (last ? v % groups : 0); };
    Kernel all = whole;
    all.parts.clear();
    all.work = w;
    // Every group but the last has the same shape and work: its GEMM is chosen once and copied;
    // the last, which takes the remainders of the work's division, is chosen again if it differs.
    const auto group_kernel = [&](bool last) {
        Work part;
        part.matrix_flops = share(w.matrix_flops, last);
        part.vector_flops = share(w.vector_flops, last);
        part.transcendentals = share(w.transcendentals, last);
        part.bytes_read = share(w.bytes_read, last);
        part.bytes_written = share(w.bytes_written, last);
        Kernel k = best_gemm(s, part, d, hw, opt, al.operands && al.output, al.output);
        k.name = whole.name + ".group";
        return k;
    };
    const Kernel first = group_kernel(false);
    all.launch = first.launch;
    all.blocks = first.blocks;
    all.tensor_cores = first.tensor_cores;
    all.parts.assign(static_cast<std::size_t>(groups - 1), first);
    const bool remainder = w.matrix_flops % groups != 0 || w.vector_flops % groups != 0 || w.transcendentals % groups != 0 ||
                           w.bytes_read % groups != 0 || w.bytes_written % groups != 0;
    all.parts.push_back(remainder ? group_kernel(true) : first);
    return all;
}

}  // namespace

bool is_depthwise_conv(const Graph& g, NodeId n) {
    const Node& node = g.node(n);
    const KernelForm form = traits_of(node.kind).kernel;
    if (!is_conv(form)) return false;
    const std::int64_t groups = node.attrs.get_int("groups", 1);
    if (groups <= 1) return false;
    // forward (x, w) -> y; data gradient (dy, w) -> dx; weight gradient (dy, x) -> dw
    if (form != KernelForm::conv_grad_weight && node.inputs.size() < 2) return false;
    const Shape& wt = g.tensor(form == KernelForm::conv_grad_weight ? node.outputs[0] : node.inputs[1]).desc.shape;
    return wt.size() == 4 && wt[0] == groups && wt[1] == 1;
}

namespace {

// A depthwise convolution (groups = input channels = output channels) is no GEMM: each group is
// a 1 x 1 x (kh kw) product, so frameworks run direct kernels, one thread per output element
// (PyTorch's conv_depthwise2d_forward_kernel and conv_depthwise2d_backward_kernel for fp32 NCHW,
// the kernels every depthwise row of tests/data/public/h100-conv-2026-11-26 ran). The weight
// gradient (conv_depthwise2d_grad_weight_kernel) reduces each weight tap over batch and pixels in
// its own block; its kh x kw re-reads of the input and output gradient hit L2, so no DRAM traffic
// is added for them. In eager mode those kernels are bound by the instructions they issue
// (GpuModelOptions::depthwise_forward_slots, fitted on tests/data/public/h200-conv-2026-11-27): the
// streaming bound stays, the issue slots are a second floor.
std::optional<Kernel> depthwise_conv(const Graph& g, NodeId n, const Work& w, DType d, const GpuModelOptions& opt, KernelForm form) {
    const Node& node = g.node(n);
    // forward (x, w) -> y; data gradient (dy, w) -> dx; weight gradient (dy, x) -> dw
    const Shape& wt = form == KernelForm::conv_grad_weight ? g.tensor(node.outputs[0]).desc.shape : g.tensor(node.inputs[1]).desc.shape;
    const Shape& act = form == KernelForm::conv_grad_input ? g.tensor(node.outputs[0]).desc.shape : g.tensor(node.inputs[0]).desc.shape;
    if (!is_depthwise_conv(g, n) || act.size() != 4 || wt.size() != 4) return std::nullopt;
    Work direct;
    direct.vector_flops = w.flops();
    direct.bytes_read = w.bytes_read;
    direct.bytes_written = w.bytes_written;
    const std::int64_t taps = wt[2] * wt[3];
    Kernel k = streaming_kernel(g, n, direct, d);
    if (opt.eager) {
        // one thread per element in blocks of at::cuda::detail::CUDA_NUM_THREADS (128)
        k.launch = LaunchConfig{128, 32, 0};
        const auto t = static_cast<double>(taps);
        if (form == KernelForm::conv_grad_weight) {
            // dy's elements (the outputs of the forward pass) times the taps, a block per channel and tap
            const auto outputs = static_cast<double>(g.tensor(node.inputs[0]).desc.numel());
            k.issue_slots = outputs * t * opt.depthwise_weight_grad_slots_per_tap;
            k.launch = LaunchConfig{512, 32, 0};
            k.blocks = wt[0] * taps;
        } else if (form == KernelForm::conv_grad_input) {
            const std::int64_t inputs = g.tensor(node.outputs[0]).desc.numel();
            k.issue_slots = static_cast<double>(inputs) * (opt.depthwise_data_grad_slots + t * opt.depthwise_data_grad_slots_per_tap);
            k.blocks = ceil_div(inputs, k.launch.threads_per_block);
        } else {
            const std::int64_t outputs = g.tensor(node.outputs[0]).desc.numel();
            k.issue_slots = static_cast<double>(outputs) * (opt.depthwise_forward_slots + t * opt.depthwise_forward_slots_per_tap);
            k.blocks = ceil_div(outputs, k.launch.threads_per_block);
        }
    }
    return k;
}

// A streaming kernel of the given work over `elements` elements (one 16-byte vector per thread).
Kernel streaming_part(const std::string& name, const Work& w, DType d, std::int64_t elements) {
    Kernel k;
    const std::int64_t per_thread = std::max<std::int64_t>(1, 16 / std::max<std::int64_t>(1, dtype_bytes(d)));
    k.launch = LaunchConfig{256, 32, 0};
    k.blocks = std::max<std::int64_t>(1, ceil_div(std::max<std::int64_t>(1, elements), 256 * per_thread));
    k.work = w;
    k.dtype = d;
    k.name = name;
    return k;
}

// A norm's backward split as both runtimes run it: the dx row kernel (its share of the FLOPs,
// writing dx) and a column pass re-reading dy and x for the parameter gradients (the column
// pass's writes are the caller's: ATen writes dweight and dbias there, the project's executor in
// a third kernel).
std::pair<Kernel, Work> norm_grad_split(const Graph& g, NodeId n, const Kernel& k) {
    const Node& node = g.node(n);
    Kernel dx = k;
    dx.name = node.name + ".dx";
    dx.work.bytes_written = g.tensor(node.outputs[0]).desc.bytes();
    dx.work.vector_flops = k.work.vector_flops * 10 / 13;
    Work cols;
    cols.bytes_read = g.tensor(node.inputs[0]).desc.bytes() + g.tensor(node.inputs[1]).desc.bytes();
    cols.vector_flops = k.work.vector_flops - dx.work.vector_flops;
    return {dx, cols};
}

// The kernels ATen launches for an op in eager PyTorch where they differ from the one-kernel
// lowering (gpu-mechanisms notes, from aten/src/ATen/native/cuda/): layer_norm backward runs
// layer_norm_grad_input_kernel (dx, a block per row) and GammaBetaBackward (dweight, dbias: a
// column reduction re-reading dy and x); softmax backward runs grad * output as an elementwise
// kernel, then the row kernel; embedding backward zero-fills the table gradient, sorts the indices
// when there are more than 3072 (cub radix sort: read and write keys and values per pass, four
// passes of 8 bits over the low 32 bits), then scatters the rows of dy.
void eager_parts(const Graph& g, NodeId n, const Hardware&, Kernel& k) {
    const Node& node = g.node(n);
    const DType d = k.dtype;
    const Work w = k.work;
    const EagerSplit split = traits_of(node.kind).eager_split;
    if (split == EagerSplit::layernorm_grad && node.outputs.size() > 1) {
        auto [dx, cols] = norm_grad_split(g, n, k);
        cols.bytes_written = w.bytes_written - dx.work.bytes_written;
        k.parts = {dx, streaming_part(node.name + ".dweight", cols, d, g.tensor(node.inputs[0]).desc.numel())};
    } else if (split == EagerSplit::softmax_grad && k.row) {
        const std::int64_t bytes = g.tensor(node.inputs[0]).desc.bytes(), elements = g.tensor(node.inputs[0]).desc.numel();
        Work mul;
        mul.bytes_read = 2 * bytes;
        mul.bytes_written = bytes;
        mul.vector_flops = elements;
        Kernel row = k;
        row.name = node.name + ".row";
        row.work.vector_flops = std::max<std::int64_t>(0, w.vector_flops - elements);
        k.parts = {streaming_part(node.name + ".mul", mul, d, elements), row};
    } else if (split == EagerSplit::addmm_bias && node.inputs.size() > 2 && k.gemm) {
        // addmm(bias, x, W^T): the bias is expanded and copied into the output (a broadcast copy
        // kernel), then the GEMM runs with beta = 1 and reads that output back in its epilogue.
        const TensorDesc& out = g.tensor(node.outputs[0]).desc;
        Work copy;
        copy.bytes_read = g.tensor(node.inputs[2]).desc.bytes();
        copy.bytes_written = out.bytes();
        Kernel gemm = k;
        gemm.name = node.name + ".gemm";
        gemm.work.bytes_read += out.bytes();
        k.parts = {streaming_part(node.name + ".bias_copy", copy, d, out.numel()), gemm};
    } else if (split == EagerSplit::embedding_grad) {
        const std::int64_t table = g.tensor(node.outputs[0]).desc.bytes(), rows = g.tensor(node.inputs[1]).desc.numel();
        const std::int64_t dy = g.tensor(node.inputs[0]).desc.bytes();
        Work fill;
        fill.bytes_written = table;
        Work scatter;
        scatter.bytes_read = dy + g.tensor(node.inputs[1]).desc.bytes();
        scatter.bytes_written = dy;  // the rows it adds into
        scatter.vector_flops = w.vector_flops;
        k.parts = {streaming_part(node.name + ".zero", fill, d, g.tensor(node.outputs[0]).desc.numel()),
                   streaming_part(node.name + ".scatter", scatter, d, g.tensor(node.inputs[0]).desc.numel())};
        if (rows > 3072) {
            Work sort;
            sort.bytes_read = sort.bytes_written = 4 * rows * 16;  // 4 passes over (key, value) int64 pairs
            k.parts.push_back(streaming_part(node.name + ".sort", sort, DType::int64, rows));
        }
    }
}

// The project's own kernels (ops/cuda/rowwise.cu) where one op runs several: layernorm/rmsnorm
// backward runs the dx row kernel (saving each row's mean and rstd), a column-partial kernel
// re-reading dy and x (dy * x_hat and dy summed over row chunks per column, f32 partials to
// scratch, not counted) and a kernel summing the partials into dweight and dbias; cross-entropy's
// mean/sum writes per-row losses, then one block sums them.
void native_parts(const Graph& g, NodeId n, Kernel& k) {
    const Node& node = g.node(n);
    const DType d = k.dtype;
    const Work w = k.work;
    const NativeSplit split = traits_of(node.kind).native_split;
    if (split == NativeSplit::norm_grad && node.outputs.size() > 1 && k.row) {
        const auto [dx, cols] = norm_grad_split(g, n, k);
        const std::int64_t elements = g.tensor(node.inputs[0]).desc.numel();
        Work sum;
        sum.bytes_written = w.bytes_written - dx.work.bytes_written;
        const std::int64_t params = g.tensor(node.outputs[1]).desc.numel();
        k.parts = {dx, streaming_part(node.name + ".partials", cols, d, elements), streaming_part(node.name + ".sum", sum, d, params)};
    } else if (split == NativeSplit::loss_sum && k.row && node.attrs.get_string("reduction", "mean") != "none") {
        Kernel rows = k;
        rows.name = node.name + ".rows";
        k.parts = {rows, streaming_part(node.name + ".sum", Work{}, DType::f32, 1)};
    }
}

}  // namespace

std::optional<Kernel> lower_to_kernel(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt) {
    if (!hw.gpu) return std::nullopt;
    const Node& node = g.node(n);
    const OpTraits& traits = traits_of(node.kind);
    const Work w = g.work(n);
    if (w.flops() == 0 && w.bytes() == 0) {
        // Reshape is a view. Permute, transpose and split are views at L0 (no compulsory traffic),
        // but a kernel that needs its operand contiguous in the new layout runs a copy, as eager
        // frameworks and the project's executor do: one read and one write of the tensor.
        // Expand is a stride-0 view in eager PyTorch; the project's executor materialises it
        // (ops/cuda/pointwise.cu expand_broadcast_kernel: reads the input, writes every output element).
        const bool materialised_expand = traits.view == ViewKind::broadcast && !opt.eager;
        if (traits.view != ViewKind::unless_copy && !materialised_expand) return std::nullopt;
        Work copy;
        for (TensorId t : node.outputs) {
            copy.bytes_read += materialised_expand ? 0 : g.tensor(t).desc.bytes();
            copy.bytes_written += g.tensor(t).desc.bytes();
        }
        if (materialised_expand) copy.bytes_read = g.tensor(node.inputs[0]).desc.bytes();
        Kernel k = streaming_kernel(g, n, copy, op_compute_dtype(g, n));
        k.name = node.name;
        k.node = n;
        return k;
    }
    const DType d = op_compute_dtype(g, n);
    Kernel k;
    const bool conv = is_conv(traits.kernel);
    const bool matrix = w.matrix_flops > 0 && is_gemm(traits.kernel);
    if (traits.kernel == KernelForm::attention) {
        k = attention_kernels(g, n, hw, opt, d);
    } else if (auto dw = conv ? depthwise_conv(g, n, w, d, opt, traits.kernel) : std::nullopt) {
        k = std::move(*dw);
    } else if (matrix) {
        GemmShape s;
        const auto out = g.tensor(node.outputs[0]).desc.shape;
        s.n = out.back();
        s.m = out.size() >= 2 ? out[out.size() - 2] : 1;
        s.batch = g.tensor(node.outputs[0]).desc.numel() / std::max<std::int64_t>(1, s.m * s.n);
        // linear: rows x out, one GEMM. matmul with one B matrix shared by every batch (a 2-D
        // weight, or batch dims all 1) and A not transposed: the batch folds into M, one GEMM of
        // batch x m rows, as at::matmul folds it (aten/src/ATen/native/LinearAlgebra.cpp,
        // _matmul_impl) and the executor's batch planner does (ops/cuda/gemm.cpp, fold_m): the
        // weight is read once, not once per batch, and a decode step's m = 1 rows fill a tile.
        const Shape& b_shape = g.tensor(node.inputs.size() > 1 ? node.inputs[1] : node.inputs[0]).desc.shape;
        const bool shared_b = traits.kernel == KernelForm::gemm && !node.attrs.get_bool("transpose_a", false) && b_shape.size() >= 2 &&
                              numel(Shape(b_shape.begin(), b_shape.end() - 2)) == 1;
        if (traits.kernel == KernelForm::linear_gemm || shared_b) {
            s.m = g.tensor(node.outputs[0]).desc.numel() / s.n;
            s.batch = 1;
        }
        if (conv) {
            // Convolutions as implicit GEMMs (cuDNN/CUTLASS), one per group: forward and data
            // gradient have M = N x output pixels and N = channels per group; the weight gradient
            // has M = C_out per group and N = C_in per group x kH x kW. K follows from the FLOPs.
            const std::int64_t groups = node.attrs.get_int("groups", 1);
            s.batch = groups;
            s.conv = traits.kernel == KernelForm::conv_forward       ? GemmShape::Conv::forward
                     : traits.kernel == KernelForm::conv_grad_weight ? GemmShape::Conv::weight_grad
                                                                     : GemmShape::Conv::data_grad;
            if (traits.kernel == KernelForm::conv_grad_weight) {
                s.m = out[0] / groups;
                s.n = out[1] * out[2] * out[3];
            } else {
                s.m = out[0] * out[2] * out[3];
                s.n = out[1] / groups;
            }
        }
        s.k = w.matrix_flops / std::max<std::int64_t>(1, 2 * s.batch * s.m * s.n);
        if (traits.kernel == KernelForm::linear_gemm && g.tensor(node.inputs[1]).desc.dtype != d) {
            s.b_scale = static_cast<double>(g.tensor(node.inputs[1]).desc.bytes()) /
                        (static_cast<double>(s.n * s.k) * static_cast<double>(dtype_bytes(d)));
        }
        k = best_gemm(s, w, d, hw, opt);
        const Alignment al = gemm_alignment(g, node, d);
        if (!al.operands || !al.output) {
            k = best_gemm(s, w, d, hw, opt, false, al.output);
        }
        // cuDNN's fp32 forward Winograd kernels: chosen up to the A100 (the public rows' kernel
        // names), not on sm_90 (GpuModelOptions::sm90_fp32_winograd_forward),
        // and only from 32 input channels: below that cuDNN 8.9 ran implicit GEMM in 1,139 of the
        // 1,294 public rows (P100 237 of 320, P4 304 of 328, T4 313 of 325, V100 285 of 321), the
        // Winograd kernels in 129.
        const Shape& xs = g.tensor(node.inputs[0]).desc.shape;
        const bool winograd = (!hw.gpu->compute_capability.at_least(9) || opt.sm90_fp32_winograd_forward) && xs.size() > 1 && xs[1] >= 32;
        if (traits.kernel == KernelForm::conv_forward && !k.tensor_cores && winograd) {
            double best = gpu_kernel_cost(k, hw, opt).time_s;  // costed once, each candidate once
            for (auto wino : {fused_winograd_conv(g, n, hw, d), nonfused_winograd_conv(g, n, hw, opt, d)}) {
                if (!wino) break;  // the same shape rules for both
                if (const double t = gpu_kernel_cost(*wino, hw, opt).time_s; t < best) {
                    best = t;
                    k = std::move(*wino);
                }
            }
        }
        if (conv && opt.eager && opt.cudnn_grouped_per_group && s.batch > 1 && !cudnn_grouped_direct(g, n))
            k = grouped_conv_per_group(k, s, w, d, hw, opt, al);
    } else {
        k = row_kernel(g, n, w, d, opt).value_or(streaming_kernel(g, n, w, d));
        // ReLU-like selects diverge within a warp only at the branch; kernels here are written
        // branch-free (selects), so the default divergence is 0.
    }
    if (opt.eager) {
        eager_parts(g, n, hw, k);
    } else {
        native_parts(g, n, k);
    }
    k.name = node.name;
    k.node = n;
    for (Kernel& part : k.parts) part.node = n;
    return k;
}

namespace {

// Device-memory bytes of a GEMM's operands when each wave's blocks share their panels in L2: the
// concurrent tiles form a swizzled rectangle of wm x wn tiles (wm x wn ~ SMs, the aspect that
// minimises the panels: wm = sqrt(SMs x tn / tm)); each wave reads wm x tm rows of A and wn x tn
// columns of B over all of K.
double wave_footprint_bytes(const GemmShape& s, DType d, double sms) {
    const double gm = std::ceil(static_cast<double>(s.m) / static_cast<double>(s.tile.m));
    const double gn = std::ceil(static_cast<double>(s.n) / static_cast<double>(s.tile.n));
    const double concurrent = std::min(sms, gm * gn * static_cast<double>(s.batch));
    const double per_batch = std::min(concurrent, gm * gn);
    double wm = std::clamp(std::round(std::sqrt(per_batch * static_cast<double>(s.tile.n) / static_cast<double>(s.tile.m))), 1.0, gm);
    const double wn = std::min(gn, std::ceil(per_batch / wm));
    wm = std::min(gm, std::ceil(per_batch / wn));
    const double waves = std::ceil(static_cast<double>(s.tiles) / concurrent);
    const double per_wave = (wm * static_cast<double>(s.tile.m) + wn * static_cast<double>(s.tile.n) * s.b_scale) *
                            static_cast<double>(s.k) * static_cast<double>(dtype_bytes(d)) * (concurrent / per_batch);
    return waves * per_wave;
}

// A composite's parts run one after another: times, traffic and compute add up.
KernelCost composite_cost(const Kernel& k, const Hardware& hw, const GpuModelOptions& opt) {
    KernelCost c;
    c.lower_bound_s = op_roofline(k.work, k.dtype, hw).time_s;
    double longest = -1;
    for (const Kernel& part : k.parts) {
        const KernelCost pc = gpu_kernel_cost(part, hw, opt);
        c.time_s += pc.time_s;
        c.compute_s += pc.compute_s;
        c.memory_s += pc.memory_s;
        c.floor_s += pc.floor_s;
        if (c.traffic.empty())
            c.traffic = pc.traffic;
        else
            for (std::size_t i = 0; i < c.traffic.size() && i < pc.traffic.size(); ++i) {
                c.traffic[i].bytes += pc.traffic[i].bytes;
                c.traffic[i].time_s += pc.traffic[i].time_s;
            }
        if (pc.time_s > longest) {  // the dominant part describes the launch
            longest = pc.time_s;
            c.occupancy = pc.occupancy;
            c.waves = pc.waves;
            c.tail_efficiency = pc.tail_efficiency;
            c.tile_efficiency = pc.tile_efficiency;
            c.bound = pc.bound;
        }
    }
    if (k.transformed) c.time_s = std::max(c.time_s, c.lower_bound_s);
    return c;
}

}  // namespace

std::string describe_launch(const Kernel& k) {
    if (!k.parts.empty()) {
        std::string out;
        for (const Kernel& part : k.parts) out += (out.empty() ? "" : "; ") + describe_launch(part);
        return out;
    }
    if (!k.launch_text.empty()) return k.launch_text;
    if (k.gemm) {
        const GemmShape& s = *k.gemm;
        const char* unit = k.tensor_cores ? "tc" : "simt";
        if (s.tile.m <= 0 || s.tile.n <= 0) return fmt::format("{} blocks {}", unit, k.blocks);
        return fmt::format("{} {}x{} grid {}x{}x{}", unit, s.tile.n, s.tile.m, ceil_div(s.n, s.tile.n), ceil_div(s.m, s.tile.m),
                           s.batch * s.split_k);
    }
    return fmt::format("blocks {} x {} threads", k.blocks, k.launch.threads_per_block);
}

static double warp_schedulers_per_sm(const Hardware& hw) {
    // GP100 (compute capability 6.0) splits its SM into two processing blocks, each with a warp
    // scheduler and 32 FP32 lanes (NVIDIA Tesla P100 whitepaper, "Pascal Streaming Multiprocessor");
    // every other SM since Maxwell into four (Maxwell, GP10x, Volta, Turing, Ampere, Ada and Hopper
    // whitepapers; CUDA C++ Programming Guide, "Compute Capabilities").
    const ComputeCapability cc = hw.gpu->compute_capability;
    return cc.major == 6 && cc.minor == 0 ? 2.0 : 4.0;
}

bool wide_issue_fp32(const Hardware& hw) {
    if (!hw.gpu || !hw.gpu->compute_capability.at_least(7)) return false;  // Maxwell and Pascal dual-issue
    const double lanes_per_sm = vector_ceiling(hw, DType::f32).flop_per_s / (2.0 * hw.gpu->sm_count.value * hw.clock_hz.value);
    return lanes_per_sm >= 127.5;  // 4 sub-partitions of 32 lanes
}

KernelCost gpu_kernel_cost(const Kernel& k, const Hardware& hw, const GpuModelOptions& opt) {
    if (!hw.gpu) throw InputError(hw.name + ": the GPU kernel model needs a gpu spec");
    if (!k.parts.empty()) return composite_cost(k, hw, opt);
    KernelCost c;
    const OpRoofline roof = op_roofline(k.work, k.dtype, hw);
    c.lower_bound_s = roof.time_s;
    const double sms = hw.gpu->sm_count.value;
    const AchievedRates rates = achieved_rates(hw, opt);
    double compute = roof.compute_time_s / rates.clock_ratio;
    if (k.gemm && k.gemm->tile.threads > 0) {
        // SIMT GEMM: the blocks an SM holds share its FP32 lanes; each block's tile runs at the
        // lanes' rate times its micro-tile's FFMA share (register blocking) at the sustained clock.
        const GemmShape& s = *k.gemm;
        c.occupancy = occupancy(*hw.gpu, k.launch);
        const double per_sm_slots = static_cast<double>(std::max<std::int64_t>(1, c.occupancy.blocks_per_sm));
        const double blocks = static_cast<double>(s.tiles * s.split_k);
        c.waves = std::ceil(blocks / (sms * per_sm_slots));
        // The busiest SM runs ceil(blocks / SMs) blocks one after another's share of the lanes.
        const double per_sm_blocks = std::ceil(blocks / sms);
        c.tail_efficiency = blocks / (per_sm_blocks * sms);
        c.tile_efficiency =
            static_cast<double>(s.batch * s.m * s.n) / (static_cast<double>(s.tiles) * static_cast<double>(s.tile.m * s.tile.n));
        const auto [mr, nr] = simt_micro_tile(s.tile);
        const double ffma_share = mr * nr / (mr * nr + opt.simt_fragment_load_cost * (mr + nr));
        double k_per_block = std::ceil(static_cast<double>(s.k) / static_cast<double>(s.split_k));
        // cuDNN 9's data-gradient engines on sm_90 pay a fixed cost per tile (GpuModelOptions).
        const bool sm90_conv = s.conv != GemmShape::Conv::none && hw.gpu->compute_capability.at_least(9);
        if (sm90_conv && s.conv == GemmShape::Conv::data_grad) k_per_block += opt.sm90_conv_data_grad_tile_overhead_k;
        const double tile_flops = 2.0 * static_cast<double>(s.tile.m * s.tile.n) * k_per_block;
        // Chips with 32-lane single-issue partitions keep a share of their doubled lanes; on sm_90,
        // cuDNN 9's fp32 implicit-GEMM convolutions keep a share of that (GpuModelOptions).
        double wide = 1.0;
        if (wide_issue_fp32(hw)) {
            wide = opt.simt_wide_issue_efficiency;
            if (s.conv == GemmShape::Conv::none && (!k.aligned || !k.output_aligned)) wide *= opt.simt_wide_unaligned_efficiency;
        }
        if (sm90_conv)
            wide *= s.conv == GemmShape::Conv::forward     ? opt.sm90_simt_conv_forward_efficiency
                    : s.conv == GemmShape::Conv::data_grad ? opt.sm90_simt_conv_data_grad_efficiency
                                                           : opt.sm90_simt_conv_weight_grad_efficiency;
        // A warp issues on its SM sub-partition's scheduler only: with fewer resident warps than
        // schedulers the other partitions' FP32 lanes idle (a 64-thread 64x64 tile alone on an SM
        // uses half of it).
        const double resident = std::min(static_cast<double>(std::max<std::int64_t>(1, c.occupancy.blocks_per_sm)), per_sm_blocks);
        const double warps = resident * std::ceil(static_cast<double>(k.launch.threads_per_block) / hw.gpu->warp_size.value);
        const double partitions = std::min(1.0, warps / warp_schedulers_per_sm(hw));
        const double per_sm =
            vector_ceiling(hw, k.dtype).flop_per_s / sms * rates.clock_ratio * ffma_share * opt.simt_gemm_efficiency * wide * partitions;
        compute = std::max(per_sm_blocks * tile_flops / per_sm, roof.vector_time_s / rates.clock_ratio);
        if (s.batch > 1) {
            // The epilogue's store rate per SM clock (batched_simt_store_bytes_per_clock).
            const double c_bytes = static_cast<double>(s.batch * s.m * s.n) * static_cast<double>(dtype_bytes(k.dtype));
            const double store_bps = sms * hw.clock_hz.value * rates.clock_ratio * opt.batched_simt_store_bytes_per_clock;
            compute = std::max(compute, c_bytes / store_bps);
        }
    } else if (k.gemm) {
        // One threadblock (tile) per SM at a time: large tensor-core tiles use most of an SM's
        // shared memory and registers. Waves = ceil(tiles / SMs); each wave runs a full tile's
        // padded work at the per-SM rate the chip's best GEMM sustains.
        const GemmShape& s = *k.gemm;
        c.occupancy = occupancy(*hw.gpu, k.launch);
        const double slots = sms;
        const double blocks = static_cast<double>(s.tiles * s.split_k);
        const bool stream_k = opt.stream_k == GpuModelOptions::StreamK::on ||
                              (opt.stream_k == GpuModelOptions::StreamK::auto_ && hw.gpu->compute_capability.at_least(9));
        // Stream-K balances the last partial wave across the SMs; with fewer tiles than SMs there
        // is no full wave to share, and each tile's K loop runs on one SM (split-K, a separate
        // candidate, is how cuBLAS spreads such a GEMM).
        c.waves = stream_k && blocks >= slots ? blocks / slots : std::ceil(blocks / slots);
        const double useful = static_cast<double>(s.batch * s.m * s.n);
        const double padded = static_cast<double>(s.tiles) * static_cast<double>(s.tile.m * s.tile.n);
        c.tile_efficiency = useful / padded;
        c.tail_efficiency = stream_k ? 1.0 : blocks / (c.waves * slots);
        const ComputeCeiling ceiling = k.tensor_cores ? matrix_ceiling(hw, k.dtype) : vector_ceiling(hw, k.dtype);
        const double k_per_block = std::ceil(static_cast<double>(s.k) / static_cast<double>(s.split_k));
        const double tile_flops = 2.0 * static_cast<double>(s.tile.m * s.tile.n) * k_per_block;
        double per_sm = ceiling.flop_per_s / sms * (k.tensor_cores ? rates.matrix_fraction_of(k.dtype) : rates.clock_ratio);
        if (k.tensor_cores && !k.aligned) {
            per_sm *= k.output_aligned ? opt.unaligned_operand_efficiency : opt.unaligned_output_efficiency;
        }
        compute = std::max(c.waves * tile_flops / per_sm, roof.vector_time_s / rates.clock_ratio);
    } else {
        c.occupancy = occupancy(*hw.gpu, k.launch);
        const double slots = sms * static_cast<double>(c.occupancy.blocks_per_sm);
        c.waves = std::ceil(static_cast<double>(k.blocks) / slots);
        c.tail_efficiency = static_cast<double>(k.blocks) / (c.waves * slots);
        compute = roof.compute_time_s / rates.clock_ratio / c.tail_efficiency;
    }
    if (k.issue_slots > 0) {
        // Each warp scheduler issues one warp instruction per clock (warp_schedulers_per_sm: four
        // on every SM since Maxwell but GP100's two): 128 thread instructions per SM-clock (64 on GP100).
        const double issue_rate = sms * warp_schedulers_per_sm(hw) * hw.gpu->warp_size.value * hw.clock_hz.value * rates.clock_ratio;
        const double share = c.tail_efficiency > 0 ? c.tail_efficiency : 1.0;
        compute = std::max(compute, k.issue_slots / issue_rate / share);
    }
    compute /= std::max(1e-9, 1.0 - k.divergence);  // SIMT efficiency
    c.compute_s = compute;
    // Traffic per level: compulsory for streaming kernels. A GEMM block streams its (tm + tn) x K
    // operand panels from L2 into shared memory, so L2 and shared memory see tiles x (tm + tn) x K
    // elements (+ C); device memory sees the compulsory bytes while A and B fit in L2, and a share
    // of the re-reads equal to the share of A + B that does not fit beyond that (capacity-limited
    // reuse: a first-order estimate until calibration measures it).
    double memory = 0;
    const double compulsory = static_cast<double>(k.work.bytes());
    double panels = compulsory;     // operand panels into shared memory
    double l2_panels = compulsory;  // what L2 serves of them (multicast shares one per cluster)
    double operands = compulsory;
    if (k.gemm) {
        const GemmShape& s = *k.gemm;
        const double elt = static_cast<double>(dtype_bytes(k.dtype));
        const double c_bytes = static_cast<double>(s.batch * s.m * s.n) * elt;
        // The cluster shares the narrower tile's operand panel (TMA multicast, sm_90+).
        const double cluster =
            hw.gpu->compute_capability.at_least(9) ? static_cast<double>(std::max<std::int64_t>(1, opt.cluster_size)) : 1.0;
        // Panel widths in elements of the compute dtype (B's scaled by its stored width).
        const double pa = static_cast<double>(s.tile.m), pb = static_cast<double>(s.tile.n) * s.b_scale;
        const double narrow = std::min(pa, pb), wide = std::max(pa, pb);
        panels = static_cast<double>(s.tiles) * (wide + narrow) * static_cast<double>(s.k) * elt + c_bytes;
        l2_panels = static_cast<double>(s.tiles) * (wide + narrow / cluster) * static_cast<double>(s.k) * elt + c_bytes;
        operands = std::max(0.0, compulsory - c_bytes);
        panels = std::max(panels, compulsory);
        l2_panels = std::max(l2_panels, compulsory);
    }
    // A warm per-op timing loop (GpuModelOptions::warm_l2): a streaming working set that fits in L2
    // stays there between calls.
    const MemoryLevel* l2_level = hw.find(MemoryRole::l2);
    const bool warm_resident = opt.warm_l2 && !k.gemm && l2_level != nullptr && compulsory <= l2_level->capacity_bytes.value;
    for (std::size_t i = 0; i < hw.memory.size(); ++i) {
        const MemoryLevel& level = hw.memory[i];
        double bytes = compulsory;
        const bool device = level.role == MemoryRole::device;
        if (k.gemm && !device) bytes = level.role == MemoryRole::l2 ? l2_panels : panels;
        if (k.gemm && device && hw.find(MemoryRole::l2) != nullptr) {
            const double l2 = hw.find(MemoryRole::l2)->capacity_bytes.value;
            if (operands > l2) {
                if (opt.wave_footprint_reuse) {
                    bytes = std::clamp(wave_footprint_bytes(*k.gemm, k.dtype, sms) + (compulsory - operands), compulsory, l2_panels);
                } else {
                    bytes = compulsory + (1.0 - l2 / operands) * (l2_panels - compulsory);
                }
            }
        }
        if (device && warm_resident) bytes = 0;
        double bps = rates.level_bytes_per_s[i];
        if (device && !k.gemm) {
            // Streaming kernels: a fraction of the chip's STREAM-type figure (its achieved DRAM
            // rate); row kernels lose a share of it to the reduction.
            bps *= std::min(1.0, opt.streaming_efficiency);
            if (k.row) bps *= opt.row_kernel_efficiency;
            if (k.latency_bound_row) {
                // Little's law per SM: 1 / rate = 1 / streaming + latency-per-byte / SMs, with the
                // row efficiency above taken at a reference chip of 9 GB/s of DRAM per SM (the
                // middle of the public GPUs: T4 6, V100 10, A100 12.6), so that the two terms fit
                // independently.
                const double per_sm = rates.dram_bytes_per_s / sms, ref = 9e9;
                bps = std::min(rates.dram_bytes_per_s,
                               bps * (1.0 + opt.row_latency_s_per_byte * ref) / (1.0 + opt.row_latency_s_per_byte * per_sm));
            }
            // Fewer blocks than SMs stream with fewer SMs' worth of loads in flight.
            bps *= std::min(1.0, static_cast<double>(k.blocks) / sms);
        }
        const double t = bytes / bps;
        c.traffic.push_back({level.name, bytes, t});
        memory = std::max(memory, t);
    }
    // Split-K: every split writes fp32 partials that a second pass reads and sums; that pass runs
    // after the GEMM, so its traffic does not overlap the math.
    double reduction = 0;
    if (k.gemm && k.gemm->split_k > 1) {
        const double partial = 2.0 * static_cast<double>(k.gemm->split_k * k.gemm->batch * k.gemm->m * k.gemm->n) * 4.0;
        reduction = partial / rates.dram_bytes_per_s;
    }
    c.memory_s = memory + reduction;
    c.time_s = (opt.overlap ? std::max(compute, memory) : compute + memory) + reduction;
    c.bound = compute >= memory ? KernelBound::compute : KernelBound::memory;
    if (opt.launch_floor) {
        // The latency is not hidden behind the kernel's own streaming: the first loads wait for
        // DRAM and the last stores drain while no other work of the kernel runs.
        c.floor_s = opt.min_kernel_s;
        if (!opt.eager && k.gemm && k.tensor_cores) c.floor_s += opt.native_gemm_latency_s;
        if (c.time_s < c.floor_s) c.bound = KernelBound::launch;
        // The norm kernels' dependent chain is one block's: hidden once the kernel streams longer.
        const double chain = opt.eager || !k.row ? 0.0 : (k.norm ? opt.native_norm_latency_s : opt.native_row_latency_s);
        if (c.time_s < chain) {
            c.bound = KernelBound::launch;
            c.time_s = chain;
        }
        c.time_s += c.floor_s;
    }
    // Invariant (issue #15): no kernel runs below its own roofline lower bound. It holds by
    // construction, not by a clamp: every rate above is at most its datasheet peak, every level's
    // traffic at least the compulsory bytes, and a composite's parts carry exactly its work
    // (tests/unit/fidelity_test.cpp checks it over random shapes and every spec).
    return c;
}

}  // namespace roofline
