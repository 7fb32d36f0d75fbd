// [gpu] tests: run only where a CUDA device is present; elsewhere they print SKIP and ctest
// reports them as skipped.
#include <catch2/catch.hpp>
#include <cstdio>

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "measure/device.hpp"
#include "measure/gpu_op.hpp"
#include "measure/source_fill.hpp"
#include "model/executor.hpp"
#include "model/graph.hpp"

TEST_CASE("a CUDA device reports a plausible configuration", "[gpu]") {
    const roofline::DeviceQuery q = roofline::query_cuda_devices();
    if (q.devices.empty()) {
        std::printf("SKIP: %s\n", q.problem.c_str());
        return;
    }
    for (const auto& d : q.devices) {
        INFO(d.name);
        // Every GPU the tool targets has compute capability >= 7.5 (T4) and at least one SM.
        CHECK(d.cc_major * 10 + d.cc_minor >= 75);
        CHECK(d.sm_count > 0);
        CHECK(d.global_memory_bytes > 0);
    }
}

// The executor fills its sources on the device (measure/source_fill.cu); the CPU reference
// computes the same values on the host (model/executor.cpp). Expected: byte-identical, for every
// dtype the executor has and for index tensors whose bound comes from their embedding.
TEST_CASE("sources filled on the device equal the host's deterministic values bit for bit", "[gpu]") {
    using namespace roofline;
    const DeviceQuery q = query_cuda_devices();
    if (q.devices.empty()) {
        std::printf("SKIP: %s\n", q.problem.c_str());
        return;
    }
    Graph g;
    g.add_parameter("w32", TensorDesc{{1000, 37}, DType::f32});
    g.add_parameter("w16", TensorDesc{{1000, 37}, DType::f16});
    g.add_parameter("wbf", TensorDesc{{100003}, DType::bf16});
    const TensorId table = g.add_parameter("table", TensorDesc{{50257, 8}, DType::f32});
    const TensorId ids = g.add_input("ids", TensorDesc{{4, 513}, DType::int64});
    g.add_input("mask", TensorDesc{{77}, DType::int32});
    g.add_optimizer_state("m", TensorDesc{{300}, DType::f32});
    g.add_node("embed", OpKind::embedding, {table, ids}, {}, {});
    for (std::uint64_t seed : {1ULL, 7ULL}) {
        for (std::size_t t = 0; t < g.tensors().size(); ++t) {
            const Tensor& ten = g.tensors()[t];
            if (ten.producer != kNoNode) continue;
            INFO(ten.name << " seed " << seed);
            const std::vector<std::byte> want = encode_tensor(deterministic_value(g, static_cast<TensorId>(t), seed));
            void* p = nullptr;
            REQUIRE(cudaMalloc(&p, want.size()) == cudaSuccess);
            REQUIRE(cudaMemset(p, 0xAB, want.size()) == cudaSuccess);  // poisoned: every byte must be written
            if (ten.role == TensorRole::optimizer_state)
                REQUIRE(cudaMemset(p, 0, want.size()) == cudaSuccess);
            else
                fill_source_on_device(p, ten.desc.dtype, ten.desc.numel(), seed, t,
                                      is_floating(ten.desc.dtype) ? 0 : source_index_bound(g, static_cast<TensorId>(t)),
                                      source_scale(g, static_cast<TensorId>(t)), nullptr);
            std::vector<std::byte> got(want.size());
            REQUIRE(cudaMemcpy(got.data(), p, got.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
            cudaFree(p);
            CHECK(got == want);
        }
    }
    // The index tensor draws embedding rows: the bound is the table's row count.
    CHECK(source_index_bound(g, ids) == 50257);
}
