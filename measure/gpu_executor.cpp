#include "measure/gpu_executor.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "measure/cuda_session.hpp"
#include "measure/cupti.hpp"
#include "measure/gpu_op.hpp"
#include "measure/source_fill.hpp"
#include "model/arena_plan.hpp"
#include "model/executor.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/error.hpp"
#include "ops/op_rule.hpp"

namespace roofline {

namespace {

constexpr std::int64_t kAlign = 256;  // cudaMalloc's own alignment: vector loads stay aligned

// Median and the 10th/90th percentiles (nearest rank) of a sample.
struct Spread {
    double median = 0, p10 = 0, p90 = 0;
};
Spread spread_of(std::vector<double> v) {
    Spread s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto q = [&](double f) { return v[static_cast<std::size_t>(std::lround(f * static_cast<double>(v.size() - 1)))]; };
    s.median = v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    s.p10 = q(0.1);
    s.p90 = q(0.9);
    return s;
}

// Per-dtype tolerance on the relative error norm of a node's output against the CPU reference
// run in f32 on the same inputs. f32: the GPU sums in another order (tree reductions, GEMM
// K-splits); ~sqrt(n) ulp growth over rows of 1e4..1e5 elements stays far under 1e-4. 16-bit
// outputs: a few roundings of the output and of intermediates stored in the dtype (attention
// scores), ~4 ulp: bf16 (unit roundoff 3.9e-3) 1.6e-2, f16 (4.9e-4) 5e-3. Observed on an H100
// (2026-11-23, GPT-2 small training step in bf16, 1106 nodes checked): at most 2.3e-3.
double tolerance_for(DType d) {
    switch (d) {
        case DType::f16: return 5e-3;
        case DType::bf16: return 1.6e-2;
        default: return 1e-4;
    }
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

struct Arena {
    void* base = nullptr;
    ~Arena() {
        if (base != nullptr) cudaFree(base);
    }
};

// Tag of a launch for the Activity records: repetition in the high half, node + 1 in the low.
std::uint64_t tag_of(int rep, NodeId n) { return (static_cast<std::uint64_t>(rep) << 32) | static_cast<std::uint64_t>(n + 1); }

class GraphRun {
public:
    GraphRun(const Graph& g, const MeasureOptions& opt) : g_(g), opt_(opt), session_(opt.device) {
        allocate();
        fill_sources();
    }

    // Enqueues the whole graph once; tagger (may be null) wraps each node's launches.
    void enqueue(KernelTracer* tracer, int rep) {
        for (const NodeId n : g_.topological_order()) {
            const Node& node = g_.node(n);
            if (traits_of(node.kind).view == ViewKind::always) continue;  // a view: aliases its input
            std::vector<cuda::DeviceTensor> in, out;
            for (const TensorId t : node.inputs) in.push_back(dev_[static_cast<std::size_t>(t)]);
            for (const TensorId t : node.outputs) out.push_back(dev_[static_cast<std::size_t>(t)]);
            cuda::LaunchContext ctx = session_.context(opt_.flash_attention);
            if (tracer != nullptr) tracer->push_tag(tag_of(rep, n));
            try {
                cuda::launch_op(node.kind, in, node.attrs, out, ctx);
            } catch (const InputError& e) {
                if (tracer != nullptr) tracer->pop_tag();
                throw InputError("node '" + node.name + "': " + e.what());
            }
            if (tracer != nullptr) tracer->pop_tag();
            if (rep == 0 && notes_.size() < g_.nodes().size()) notes_.resize(g_.nodes().size());
            if (rep == 0 && tracer == nullptr) notes_[static_cast<std::size_t>(n)] = ctx.notes;
        }
    }

    void synchronize_and_release() { session_.release_scratch(); }

    HostTensor download(TensorId t) const {
        const cuda::DeviceTensor& d = dev_[static_cast<std::size_t>(t)];
        std::vector<std::byte> host(static_cast<std::size_t>(d.desc.bytes()));
        cuda::check(cudaMemcpy(host.data(), d.data, host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(download)");
        return decode_tensor(d.desc, host.data());
    }

    CudaSession& session() { return session_; }
    std::int64_t arena_bytes() const { return arena_bytes_; }
    std::int64_t live_peak_bytes() const { return live_peak_bytes_; }
    const std::vector<std::string>& notes(NodeId n) const {
        static const std::vector<std::string> none;
        return static_cast<std::size_t>(n) < notes_.size() ? notes_[static_cast<std::size_t>(n)] : none;
    }

private:
    void allocate() {
        const auto& ts = g_.tensors();
        const ArenaPlan plan = plan_arena(g_, g_.topological_order(), opt_.reuse_memory ? ArenaMode::reuse : ArenaMode::keep_all, kAlign);
        arena_bytes_ = plan.bytes;
        live_peak_bytes_ = plan.live_peak_bytes;
        std::size_t free_b = 0, total_b = 0;
        cuda::check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        if (static_cast<std::size_t>(arena_bytes_) > free_b) {
            throw InputError("the graph's tensors need " + std::to_string(arena_bytes_) + " bytes of device memory, " +
                             std::to_string(free_b) + " are free: use a smaller batch or sequence" +
                             (opt_.reuse_memory ? "" : ", or --memory reuse"));
        }
        cuda::check(cudaMalloc(&arena_.base, static_cast<std::size_t>(std::max<std::int64_t>(arena_bytes_, 1))), "cudaMalloc(arena)");
        dev_.resize(ts.size());
        for (std::size_t t = 0; t < ts.size(); ++t) {
            dev_[t].desc = ts[t].desc;
            dev_[t].data = static_cast<std::byte*>(arena_.base) + plan.offset[t];  // views share their base's slot
        }
    }

    // deterministic_value's values, written on the device (measure/source_fill.hpp).
    void fill_sources() {
        const auto& ts = g_.tensors();
        for (std::size_t t = 0; t < ts.size(); ++t) {
            if (ts[t].producer != kNoNode) continue;
            const TensorDesc& d = ts[t].desc;
            if (ts[t].role == TensorRole::optimizer_state) {
                cuda::check(cudaMemset(dev_[t].data, 0, static_cast<std::size_t>(d.numel() * dtype_bytes(d.dtype))), "cudaMemset(source)");
                continue;
            }
            const std::int64_t bound = is_floating(d.dtype) ? 0 : source_index_bound(g_, static_cast<TensorId>(t));
            fill_source_on_device(dev_[t].data, d.dtype, d.numel(), opt_.seed, static_cast<std::uint64_t>(t), bound,
                                  source_scale(g_, static_cast<TensorId>(t)), nullptr);
        }
        cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(sources)");
    }

    const Graph& g_;
    MeasureOptions opt_;
    CudaSession session_;
    Arena arena_;
    std::int64_t arena_bytes_ = 0, live_peak_bytes_ = 0;
    std::vector<cuda::DeviceTensor> dev_;
    std::vector<std::vector<std::string>> notes_;
};

NodeCheck check_node(const Graph& g, NodeId n, const GraphRun& run, double max_flops) {
    NodeCheck c;
    const Node& node = g.node(n);
    const Work w = g.work(n);
    const double flops = static_cast<double>(w.matrix_flops + w.vector_flops + w.transcendentals);
    if (flops > max_flops) {
        c.status = "skipped";
        c.reason = "more than " + std::to_string(static_cast<long long>(max_flops)) + " FLOPs for the CPU reference";
        return c;
    }
    std::vector<HostTensor> inputs;
    for (const TensorId t : node.inputs) inputs.push_back(run.download(t));
    std::vector<const HostTensor*> in;
    for (const HostTensor& h : inputs) in.push_back(&h);
    const std::vector<HostTensor> expected = run_reference(node.kind, in, node.attrs, g.output_descs(n), RefPrecision::f32);
    c.status = "ok";
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        const HostTensor got = run.download(node.outputs[i]);
        const double tol = tolerance_for(got.desc.dtype);
        const double err = relative_error(got, expected[i]);
        if (err > c.error || std::isnan(err)) c.error = err;
        c.tolerance = std::max(c.tolerance, tol);
        if (!(err <= tol)) c.status = "fail";
    }
    return c;
}

std::map<std::string, std::string> device_facts(int device) {
    cudaDeviceProp p{};
    cuda::check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    int driver = 0, runtime = 0, clock_khz = 0, mem_clock_khz = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
    cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device);
    return {{"name", p.name},
            {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
            {"sm_count", std::to_string(p.multiProcessorCount)},
            {"memory_bytes", std::to_string(p.totalGlobalMem)},
            {"l2_bytes", std::to_string(p.l2CacheSize)},
            {"driver_version", std::to_string(driver)},
            {"runtime_version", std::to_string(runtime)},
            {"max_sm_clock_hz", std::to_string(static_cast<long long>(clock_khz) * 1000)},
            {"max_memory_clock_hz", std::to_string(static_cast<long long>(mem_clock_khz) * 1000)},
            {"chip", chip_name(device)}};
}

}  // namespace

Measurement measure_graph(const Graph& g, const MeasureOptions& opt) {
    Measurement m;
    m.options = opt;
    m.date_utc = utc_now();
    m.device = device_facts(opt.device);
    if (opt.reuse_memory && opt.check) {
        throw InputError(
            "checking against the CPU reference needs every tensor kept (--memory keep-all); use --check off with --memory reuse");
    }
    GraphRun run(g, opt);
    m.arena_bytes = run.arena_bytes();
    m.live_peak_bytes = run.live_peak_bytes();

    // Warm-up (also records the launch notes) and the correctness check on its results.
    for (int r = 0; r < std::max(1, opt.warmup); ++r) run.enqueue(nullptr, 0);
    run.synchronize_and_release();

    const auto order = g.topological_order();
    std::vector<NodeMeasurement> nodes(g.nodes().size());
    for (const NodeId n : order) {
        const Node& node = g.node(n);
        NodeMeasurement& nm = nodes[static_cast<std::size_t>(n)];
        nm.node = n;
        nm.name = node.name;
        nm.op = std::string(op_name(node.kind));
        nm.phase = std::string(phase_name(node.phase));
        nm.dtype = std::string(dtype_name(op_compute_dtype(g, n)));
        nm.notes = run.notes(n);
        if (traits_of(node.kind).view == ViewKind::always) {
            nm.check = {"skipped", 0, 0, "a view: no kernel"};
        } else if (opt.check) {
            nm.check = check_node(g, n, run, opt.check_max_flops);
            if (nm.check.status == "fail") ++m.failed_checks;
        } else {
            nm.check = {"skipped", 0, 0, "--check off"};
        }
    }

    // Timed repetitions. The step is timed by device events around whole-graph runs with no
    // tracing: CUPTI's Activity API with runtime/driver records (needed to tag kernels with their
    // node) adds host time to every launch, and a step of small kernels is host-bound, so a step
    // timed under it is the tracer's, not the executor's. The per-kernel times come from a second
    // set of repetitions under the tracer (kernel durations are device timestamps, which the host
    // overhead does not change); that set's step is kept as step.traced_median_s.
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    cuda::check(cudaEventCreate(&e0), "cudaEventCreate");
    cuda::check(cudaEventCreate(&e1), "cudaEventCreate");
    const auto timed_run = [&](KernelTracer* tracer, int r) {
        cuda::check(cudaEventRecord(e0, run.session().stream()), "cudaEventRecord");
        run.enqueue(tracer, r);
        cuda::check(cudaEventRecord(e1, run.session().stream()), "cudaEventRecord");
        run.synchronize_and_release();
        float ms = 0;
        cuda::check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        return static_cast<double>(ms) * 1e-3;
    };
    std::vector<double> step_times, traced_times;
    for (int r = 0; r < opt.repetitions; ++r) step_times.push_back(timed_run(nullptr, 1));
    std::vector<KernelRecord> records;
    {
        KernelTracer tracer;
        tracer.start();
        for (int r = 0; r < opt.repetitions; ++r) traced_times.push_back(timed_run(&tracer, r));
        records = tracer.stop();
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    const Spread step = spread_of(step_times);
    m.step_median_s = step.median;
    m.step_p10_s = step.p10;
    m.step_p90_s = step.p90;
    m.step_traced_median_s = spread_of(traced_times).median;

    // Group records by (node, repetition), in launch (start) order.
    std::map<NodeId, std::vector<std::vector<const KernelRecord*>>> by_node;
    for (const KernelRecord& k : records) {
        if (k.tag == 0) continue;
        const auto n = static_cast<NodeId>((k.tag & 0xffffffffu) - 1);
        const auto rep = static_cast<std::size_t>(k.tag >> 32);
        auto& reps = by_node[n];
        if (reps.size() <= rep) reps.resize(rep + 1);
        reps[rep].push_back(&k);
    }
    for (const NodeId n : order) {
        NodeMeasurement& nm = nodes[static_cast<std::size_t>(n)];
        const auto it = by_node.find(n);
        if (it == by_node.end()) continue;
        const auto& reps = it->second;
        std::vector<double> totals;
        std::size_t nk = 0;
        for (const auto& r : reps) nk = std::max(nk, r.size());
        std::vector<std::vector<double>> per_kernel(nk);
        for (const auto& r : reps) {
            double total = 0;
            for (std::size_t i = 0; i < r.size(); ++i) {
                const double d = static_cast<double>(r[i]->end_ns - r[i]->start_ns) * 1e-9;
                per_kernel[i].push_back(d);
                total += d;
            }
            totals.push_back(total);
        }
        const Spread s = spread_of(totals);
        nm.median_s = s.median;
        nm.p10_s = s.p10;
        nm.p90_s = s.p90;
        const auto& first = reps.front();
        for (std::size_t i = 0; i < nk && i < first.size(); ++i) {
            KernelMeasurement km;
            const KernelRecord& k = *first[i];
            km.name = k.name;
            for (int d = 0; d < 3; ++d) {
                km.grid[d] = k.grid[d];
                km.block[d] = k.block[d];
            }
            km.registers = k.registers_per_thread;
            km.shared_bytes = k.static_shared_bytes + k.dynamic_shared_bytes;
            const Spread ks = spread_of(per_kernel[i]);
            km.median_s = ks.median;
            km.p10_s = ks.p10;
            km.p90_s = ks.p90;
            nm.kernels.push_back(std::move(km));
        }
        m.kernel_sum_s += nm.median_s;
    }

    // Counters: one more run under the Range Profiler (kernel replay), joined in launch order.
    if (opt.counters) {
        m.metrics = roofline_metrics(m.device["chip"]);
        std::string problem;
        const auto values = profile_kernels(
            opt.device, m.metrics,
            [&] {
                run.enqueue(nullptr, 1);
                run.synchronize_and_release();
            },
            &problem);
        m.counters_problem = problem;
        if (problem.empty()) {
            std::size_t i = 0;
            for (const NodeId n : order) {
                for (KernelMeasurement& km : nodes[static_cast<std::size_t>(n)].kernels) {
                    if (i < values.size()) km.counters = values[i];
                    ++i;
                }
            }
            if (i != values.size()) {
                m.counters_problem = "the profiled run launched " + std::to_string(values.size()) + " kernels, the timed run " +
                                     std::to_string(i) + ": counters not joined";
                for (const NodeId n : order)
                    for (KernelMeasurement& km : nodes[static_cast<std::size_t>(n)].kernels) km.counters.clear();
            }
        }
    } else {
        m.counters_problem = "not requested (--counters off)";
    }
    m.scratch_peak_bytes = static_cast<std::int64_t>(run.session().peak_scratch_bytes());
    for (const NodeId n : order) m.nodes.push_back(std::move(nodes[static_cast<std::size_t>(n)]));
    return m;
}

nlohmann::json measurement_to_json(const Graph& g, const Measurement& m, const std::string& mode) {
    using nlohmann::json;
    json nodes = json::array();
    for (const NodeMeasurement& n : m.nodes) {
        json kernels = json::array();
        for (const KernelMeasurement& k : n.kernels) {
            json kj = {{"name", k.name},
                       {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                       {"block", {k.block[0], k.block[1], k.block[2]}},
                       {"registers_per_thread", k.registers},
                       {"shared_bytes", k.shared_bytes},
                       {"median_s", k.median_s},
                       {"p10_s", k.p10_s},
                       {"p90_s", k.p90_s}};
            if (!k.counters.empty()) {
                kj["counters"] = k.counters;
                const KernelCounters c = derive_counters(k.counters);
                kj["derived"] = {{"dram_read_bytes", c.dram_read_bytes},
                                 {"dram_write_bytes", c.dram_write_bytes},
                                 {"l2_bytes", c.l2_bytes},
                                 {"l1_bytes", c.l1_bytes},
                                 {"shared_bytes", c.shared_bytes},
                                 {"fp32_flops", c.fp32_flops},
                                 {"fp16_flops", c.fp16_flops},
                                 {"fp64_flops", c.fp64_flops},
                                 {"tensor_ops", c.tensor_ops},
                                 {"achieved_occupancy", c.achieved_occupancy},
                                 {"simt_efficiency", c.simt_efficiency},
                                 {"sm_clock_hz", c.sm_clock_hz}};
            }
            kernels.push_back(std::move(kj));
        }
        json check = {{"status", n.check.status}};
        if (n.check.status != "skipped") {
            check["error"] = n.check.error;
            check["tolerance"] = n.check.tolerance;
        } else {
            check["reason"] = n.check.reason;
        }
        nodes.push_back({{"node", n.node},
                         {"name", n.name},
                         {"op", n.op},
                         {"phase", n.phase},
                         {"dtype", n.dtype},
                         {"median_s", n.median_s},
                         {"p10_s", n.p10_s},
                         {"p90_s", n.p90_s},
                         {"kernels", std::move(kernels)},
                         {"notes", n.notes},
                         {"check", std::move(check)}});
    }
    json dims = json::object();
    for (const auto& [k, v] : g.dims) dims[k] = v;
    return json{
        {"schema", "roofline-measurement/1"},
        {"tool", {{"name", "roofline"}}},
        {"date_utc", m.date_utc},
        {"device", m.device},
        {"model", {{"name", g.name}, {"origin", g.origin}, {"mode", mode}, {"dims", dims}, {"dtype", dtype_name(g.compute_dtype)}}},
        {"options",
         {{"warmup", m.options.warmup},
          {"repetitions", m.options.repetitions},
          {"flash_attention", m.options.flash_attention},
          {"check", m.options.check},
          {"memory", m.options.reuse_memory ? "reuse" : "keep-all"},
          {"recompute", m.options.recompute},
          {"seed", m.options.seed}}},
        {"counters",
         {{"collected", m.counters_problem.empty()},
          {"problem", m.counters_problem},
          {"metrics", m.metrics},
          // sm__ops_path_tensor_* counts FLOPs: checked on GH100 (2026-11-23) against a
          // cuBLASLt 4096^3 GEMM, 2 x 4096^3 ops exactly.
          {"tensor_flops_per_op", 1.0}}},
        {"step",
         {{"median_s", m.step_median_s},
          {"p10_s", m.step_p10_s},
          {"p90_s", m.step_p90_s},
          {"kernel_sum_s", m.kernel_sum_s},
          {"timing", "untraced"},  // files without this key timed the step under the tracer
          {"traced_median_s", m.step_traced_median_s}}},
        {"memory", {{"arena_bytes", m.arena_bytes}, {"live_peak_bytes", m.live_peak_bytes}, {"scratch_peak_bytes", m.scratch_peak_bytes}}},
        {"checks", {{"failed", m.failed_checks}}},
        {"nodes", std::move(nodes)}};
}

}  // namespace roofline
