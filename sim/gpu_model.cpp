#include "sim/gpu_model.hpp"

#include <algorithm>
#include <cmath>

#include "ops/op_rule.hpp"

namespace roofline {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Tiles cuBLAS/CUTLASS kernels use for tensor-core GEMMs on sm_80/sm_90 (CUTLASS default
// threadblock shapes), largest first.
const GemmTile kTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};

// Launch of a GEMM threadblock: 256 threads, the operand tiles double-buffered in shared memory
// (two stages of (tm + tn) x 32 elements), registers as CUTLASS kernels of that size use.
// Capped at what one block may use on the chip (fewer pipeline stages on smaller SMs).
LaunchConfig gemm_launch(const GemmTile& t, DType d, const Hardware& hw) {
    const std::int64_t stage_bytes = (t.m + t.n) * 32 * dtype_bytes(d);
    const auto max_smem = static_cast<std::int64_t>(hw.gpu->max_shared_memory_per_block_bytes.value);
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
    std::vector<std::int64_t> splits = {1, 2, 4, 8, 16};
    if (opt.split_k) splits = {*opt.split_k};
    else if (opt.gemm_tile) splits = {1};
    for (const GemmTile& t : kTiles) {
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
            if (!best || cost.time_s < best->time_s) {
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
std::optional<Kernel> row_kernel(const Graph& g, NodeId n, const Work& w, DType d) {
    const Node& node = g.node(n);
    switch (node.kind) {
        case OpKind::softmax: case OpKind::softmax_grad: case OpKind::layernorm: case OpKind::layernorm_grad:
        case OpKind::rmsnorm: case OpKind::rmsnorm_grad: case OpKind::cross_entropy: case OpKind::cross_entropy_grad:
        case OpKind::reduce_sum: case OpKind::reduce_mean: case OpKind::reduce_max:
            break;
        default:
            return std::nullopt;
    }
    const Shape& x = g.tensor(node.inputs[0]).desc.shape;
    if (x.empty()) return std::nullopt;
    if (node.kind == OpKind::reduce_sum || node.kind == OpKind::reduce_mean || node.kind == OpKind::reduce_max) {
        const auto axes = node.attrs.get_ints("axes", {});
        const auto last = static_cast<std::int64_t>(x.size()) - 1;
        if (axes.size() != 1 || (axes[0] != -1 && axes[0] != last)) return std::nullopt;  // not a row reduction
    } else if (node.attrs.get_int("axis", -1) != -1 && node.attrs.get_int("axis", -1) != static_cast<std::int64_t>(x.size()) - 1) {
        return std::nullopt;
    }
    const std::int64_t len = std::max<std::int64_t>(1, x.back());
    const std::int64_t rows = std::max<std::int64_t>(1, g.tensor(node.inputs[0]).desc.numel() / len);
    Kernel k;
    k.work = w;
    k.dtype = d;
    if (len <= 1024) {
        k.launch = LaunchConfig{128, 112, 0};
        k.blocks = ceil_div(rows, 4);
    } else {
        k.launch = LaunchConfig{512, 64, 2048};
        k.blocks = rows;
    }
    return k;
}

// Materialised attention as frameworks run it unfused: S = scale * Q K^T (a batched GEMM),
// P = softmax(mask(S)) (a row-wise kernel reading and writing S), O = P V (a batched GEMM).
Kernel attention_kernels(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt, DType d) {
    const Node& node = g.node(n);
    const Shape& q = g.tensor(node.inputs[0]).desc.shape;
    const Shape& kk = g.tensor(node.inputs[1]).desc.shape;
    const Shape& v = g.tensor(node.inputs[2]).desc.shape;
    const std::int64_t sq = q[q.size() - 2], dq = q.back(), sk = kk[kk.size() - 2], dv = v.back();
    const std::int64_t batch = g.tensor(node.outputs[0]).desc.numel() / std::max<std::int64_t>(1, sq * dv);
    const std::int64_t elt = dtype_bytes(d);
    const std::int64_t scores = batch * sq * sk;
    Kernel all;
    all.work = g.work(n);
    all.dtype = d;
    // QK^T
    Work w1;
    w1.matrix_flops = 2 * scores * dq;
    w1.bytes_read = g.tensor(node.inputs[0]).desc.bytes() + g.tensor(node.inputs[1]).desc.bytes();
    w1.bytes_written = scores * elt;
    Kernel k1 = best_gemm(GemmShape{batch, sq, sk, dq, {}, 0, 1}, w1, d, hw, opt);
    k1.name = node.name + ".qk";
    // mask + softmax over rows of sk, in place of S
    Work w2;
    w2.vector_flops = 5 * scores;  // scale, mask select, max, subtract, sum / divide
    w2.transcendentals = scores;
    w2.bytes_read = scores * elt;
    w2.bytes_written = scores * elt;
    Kernel k2;
    k2.work = w2;
    k2.dtype = d;
    k2.launch = LaunchConfig{256, 32, 0};
    k2.blocks = std::max<std::int64_t>(1, ceil_div(scores, 256 * std::max<std::int64_t>(1, 16 / elt)));
    k2.name = node.name + ".softmax";
    // PV
    Work w3;
    w3.matrix_flops = 2 * scores * dv;
    w3.bytes_read = scores * elt + g.tensor(node.inputs[2]).desc.bytes();
    w3.bytes_written = g.tensor(node.outputs[0]).desc.bytes();
    Kernel k3 = best_gemm(GemmShape{batch, sq, dv, sk, {}, 0, 1}, w3, d, hw, opt);
    k3.name = node.name + ".pv";
    all.parts = {k1, k2, k3};
    all.launch = k1.launch;
    all.blocks = k1.blocks;
    all.tensor_cores = k1.tensor_cores;
    return all;
}

}  // namespace

std::optional<Kernel> lower_to_kernel(const Graph& g, NodeId n, const Hardware& hw, const GpuModelOptions& opt) {
    if (!hw.gpu) return std::nullopt;
    const Node& node = g.node(n);
    const Work w = g.work(n);
    if (w.flops() == 0 && w.bytes() == 0) {
        // Reshape is a view. Permute, transpose and split are views at L0 (no compulsory traffic),
        // but a kernel that needs its operand contiguous in the new layout runs a copy, as eager
        // frameworks and the project's executor do: one read and one write of the tensor.
        if (node.kind != OpKind::permute && node.kind != OpKind::transpose && node.kind != OpKind::split) return std::nullopt;
        Work copy;
        for (TensorId t : node.outputs) {
            copy.bytes_read += g.tensor(t).desc.bytes();
            copy.bytes_written += g.tensor(t).desc.bytes();
        }
        Kernel k = streaming_kernel(g, n, copy, op_compute_dtype(g, n));
        k.name = node.name;
        k.node = n;
        return k;
    }
    const DType d = op_compute_dtype(g, n);
    Kernel k;
    const bool conv = node.kind == OpKind::conv2d || node.kind == OpKind::conv2d_grad_input || node.kind == OpKind::conv2d_grad_weight;
    const bool matrix = w.matrix_flops > 0 && (node.kind == OpKind::matmul || node.kind == OpKind::linear || conv);
    if (node.kind == OpKind::attention) {
        k = attention_kernels(g, n, hw, opt, d);
    } else if (matrix) {
        GemmShape s;
        const auto out = g.tensor(node.outputs[0]).desc.shape;
        s.n = out.back();
        s.m = out.size() >= 2 ? out[out.size() - 2] : 1;
        s.batch = g.tensor(node.outputs[0]).desc.numel() / std::max<std::int64_t>(1, s.m * s.n);
        if (node.kind == OpKind::linear) {  // rows x out, one GEMM
            s.m = g.tensor(node.outputs[0]).desc.numel() / s.n;
            s.batch = 1;
        }
        if (conv) {
            // Convolutions as implicit GEMMs (cuDNN/CUTLASS), one per group: forward and data
            // gradient have M = N x output pixels and N = channels per group; the weight gradient
            // has M = C_out per group and N = C_in per group x kH x kW. K follows from the FLOPs.
            const std::int64_t groups = node.attrs.get_int("groups", 1);
            s.batch = groups;
            if (node.kind == OpKind::conv2d_grad_weight) {
                s.m = out[0] / groups;
                s.n = out[1] * out[2] * out[3];
            } else {
                s.m = out[0] * out[2] * out[3];
                s.n = out[1] / groups;
            }
        }
        s.k = w.matrix_flops / std::max<std::int64_t>(1, 2 * s.batch * s.m * s.n);
        k = best_gemm(s, w, d, hw, opt);
        const Alignment al = gemm_alignment(g, node, d);
        if (!al.operands || !al.output) {
            k = best_gemm(s, w, d, hw, opt, false, al.output);
        }
    } else {
        k = row_kernel(g, n, w, d).value_or(streaming_kernel(g, n, w, d));
        // ReLU-like selects diverge within a warp only at the branch; kernels here are written
        // branch-free (selects), so the default divergence is 0.
    }
    k.name = node.name;
    k.node = n;
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
    const double per_wave = (wm * static_cast<double>(s.tile.m) + wn * static_cast<double>(s.tile.n)) * static_cast<double>(s.k) *
                            static_cast<double>(dtype_bytes(d)) * (concurrent / per_batch);
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
        if (c.traffic.empty()) c.traffic = pc.traffic;
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
    return c;
}

}  // namespace

KernelCost gpu_kernel_cost(const Kernel& k, const Hardware& hw, const GpuModelOptions& opt) {
    if (!hw.gpu) throw InputError(hw.name + ": the GPU kernel model needs a gpu spec");
    if (!k.parts.empty()) return composite_cost(k, hw, opt);
    KernelCost c;
    const OpRoofline roof = op_roofline(k.work, k.dtype, hw);
    c.lower_bound_s = roof.time_s;
    const double sms = hw.gpu->sm_count.value;
    double compute = roof.compute_time_s;
    if (k.gemm) {
        // One threadblock (tile) per SM at a time: large tensor-core tiles use most of an SM's
        // shared memory and registers. Waves = ceil(tiles / SMs); each wave runs a full tile's
        // padded work at the per-SM peak.
        const GemmShape& s = *k.gemm;
        c.occupancy = occupancy(*hw.gpu, k.launch);
        const double slots = sms;
        const double blocks = static_cast<double>(s.tiles * s.split_k);
        const bool stream_k = opt.stream_k == GpuModelOptions::StreamK::on ||
                              (opt.stream_k == GpuModelOptions::StreamK::auto_ && std::stod(hw.gpu->compute_capability) >= 9.0);
        c.waves = stream_k ? blocks / slots : std::ceil(blocks / slots);
        const double useful = static_cast<double>(s.batch * s.m * s.n);
        const double padded = static_cast<double>(s.tiles) * static_cast<double>(s.tile.m * s.tile.n);
        c.tile_efficiency = useful / padded;
        c.tail_efficiency = stream_k ? 1.0 : blocks / (c.waves * slots);
        const ComputeCeiling ceiling = k.tensor_cores ? matrix_ceiling(hw, k.dtype) : vector_ceiling(hw, k.dtype);
        const double k_per_block = std::ceil(static_cast<double>(s.k) / static_cast<double>(s.split_k));
        const double tile_flops = 2.0 * static_cast<double>(s.tile.m * s.tile.n) * k_per_block;
        double per_sm = ceiling.flop_per_s / sms;
        if (k.tensor_cores && !k.aligned) {
            per_sm *= k.output_aligned ? opt.unaligned_operand_efficiency : opt.unaligned_output_efficiency;
        }
        compute = std::max(c.waves * tile_flops / per_sm, roof.vector_time_s);
    } else {
        c.occupancy = occupancy(*hw.gpu, k.launch);
        const double slots = sms * static_cast<double>(c.occupancy.blocks_per_sm);
        c.waves = std::ceil(static_cast<double>(k.blocks) / slots);
        c.tail_efficiency = static_cast<double>(k.blocks) / (c.waves * slots);
        compute = roof.compute_time_s / c.tail_efficiency;
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
        const double cluster = std::stod(hw.gpu->compute_capability) >= 9.0 ? static_cast<double>(std::max<std::int64_t>(1, opt.cluster_size)) : 1.0;
        const double narrow = static_cast<double>(std::min(s.tile.m, s.tile.n)), wide = static_cast<double>(std::max(s.tile.m, s.tile.n));
        panels = static_cast<double>(s.tiles) * (wide + narrow) * static_cast<double>(s.k) * elt + c_bytes;
        l2_panels = static_cast<double>(s.tiles) * (wide + narrow / cluster) * static_cast<double>(s.k) * elt + c_bytes;
        operands = std::max(0.0, compulsory - c_bytes);
        panels = std::max(panels, compulsory);
        l2_panels = std::max(l2_panels, compulsory);
    }
    for (std::size_t i = 0; i < hw.memory.size(); ++i) {
        const MemoryLevel& level = hw.memory[i];
        double bytes = compulsory;
        if (k.gemm && i > 0) bytes = i == 1 ? l2_panels : panels;
        if (k.gemm && i == 0 && hw.memory.size() > 1) {
            const double l2 = hw.memory[1].capacity_bytes.value;
            if (operands > l2) {
                if (opt.wave_footprint_reuse) {
                    bytes = std::clamp(wave_footprint_bytes(*k.gemm, k.dtype, sms) + (compulsory - operands), compulsory, l2_panels);
                } else {
                    bytes = compulsory + (1.0 - l2 / operands) * (l2_panels - compulsory);
                }
            }
        }
        const double t = bytes / level.bytes_per_s.value;
        c.traffic.push_back({level.name, bytes, t});
        memory = std::max(memory, t);
    }
    // Split-K: every split writes fp32 partials that a second pass reads and sums; that pass runs
    // after the GEMM, so its traffic does not overlap the math.
    double reduction = 0;
    if (k.gemm && k.gemm->split_k > 1) {
        const double partial = 2.0 * static_cast<double>(k.gemm->split_k * k.gemm->batch * k.gemm->m * k.gemm->n) * 4.0;
        reduction = partial / hw.device_memory().bytes_per_s.value;
    }
    c.memory_s = memory + reduction;
    c.time_s = (opt.overlap ? std::max(compute, memory) : compute + memory) + reduction;
    c.bound = compute >= memory ? "compute" : "memory";
    if (opt.launch_floor) {
        // The latency is not hidden behind the kernel's own streaming: the first loads wait for
        // DRAM and the last stores drain while no other work of the kernel runs.
        c.floor_s = opt.min_kernel_s;
        if (c.time_s < c.floor_s) c.bound = "launch";
        c.time_s += c.floor_s;
    }
    return c;
}

}  // namespace roofline
