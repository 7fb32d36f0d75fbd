#include "measure/gpu_op.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "measure/cuda_session.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/error.hpp"

namespace roofline {

namespace {

template <typename T>
void put(std::vector<std::byte>& b, std::size_t i, T v) {
    std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
T get(const void* p, std::size_t i) {
    T v;
    std::memcpy(&v, static_cast<const std::byte*>(p) + i * sizeof(T), sizeof(T));
    return v;
}

void check_device_dtype(DType d) {
    switch (d) {
        case DType::f32:
        case DType::f16:
        case DType::bf16:
        case DType::int8:
        case DType::u8:
        case DType::int32:
        case DType::int64: return;
        case DType::f64:
        case DType::tf32:
        case DType::fp8_e4m3:
        case DType::fp8_e5m2: break;
    }
    throw InputError("the CUDA executor has no " + std::string(dtype_name(d)) + " tensors (f32, f16, bf16, int8, u8, int32, int64)");
}

// RAII device buffer.
struct DeviceBuffer {
    void* p = nullptr;
    explicit DeviceBuffer(std::size_t bytes) { cuda::check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(p); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

std::vector<std::byte> encode_tensor(const HostTensor& t) {
    check_device_dtype(t.desc.dtype);
    const std::size_t n = t.data.size();
    std::vector<std::byte> b(n * static_cast<std::size_t>(dtype_bytes(t.desc.dtype)));
    for (std::size_t i = 0; i < n; ++i) {
        const double v = t.data[i];
        switch (t.desc.dtype) {
            case DType::f32: put(b, i, static_cast<float>(v)); break;
            case DType::f16: put(b, i, __float2half_rn(static_cast<float>(v))); break;
            case DType::bf16: put(b, i, __float2bfloat16_rn(static_cast<float>(v))); break;
            case DType::int8: put(b, i, static_cast<std::int8_t>(v)); break;
            case DType::u8: put(b, i, static_cast<std::uint8_t>(v)); break;
            case DType::int32: put(b, i, static_cast<std::int32_t>(v)); break;
            case DType::int64: put(b, i, static_cast<std::int64_t>(v)); break;
            default: break;
        }
    }
    return b;
}

HostTensor decode_tensor(const TensorDesc& desc, const void* bytes) {
    check_device_dtype(desc.dtype);
    HostTensor t{desc, std::vector<double>(static_cast<std::size_t>(desc.numel()))};
    for (std::size_t i = 0; i < t.data.size(); ++i) {
        double& v = t.data[i];
        switch (desc.dtype) {
            case DType::f32: v = get<float>(bytes, i); break;
            case DType::f16: v = __half2float(get<__half>(bytes, i)); break;
            case DType::bf16: v = __bfloat162float(get<__nv_bfloat16>(bytes, i)); break;
            case DType::int8: v = get<std::int8_t>(bytes, i); break;
            case DType::u8: v = get<std::uint8_t>(bytes, i); break;
            case DType::int32: v = get<std::int32_t>(bytes, i); break;
            case DType::int64: v = static_cast<double>(get<std::int64_t>(bytes, i)); break;
            default: break;
        }
    }
    return t;
}

GpuOpResult run_op_on_gpu(OpKind k, const std::vector<const HostTensor*>& in, const Attrs& attrs, const std::vector<TensorDesc>& out,
                          bool flash_attention) {
    CudaSession session;
    std::vector<std::unique_ptr<DeviceBuffer>> buffers;
    std::vector<cuda::DeviceTensor> din, dout;
    for (const HostTensor* t : in) {
        const std::vector<std::byte> bytes = encode_tensor(*t);
        buffers.push_back(std::make_unique<DeviceBuffer>(bytes.size()));
        cuda::check(cudaMemcpy(buffers.back()->p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy(input)");
        din.push_back({buffers.back()->p, t->desc});
    }
    for (const TensorDesc& d : out) {
        check_device_dtype(d.dtype);
        const auto bytes = static_cast<std::size_t>(d.bytes());
        buffers.push_back(std::make_unique<DeviceBuffer>(bytes));
        // 0xFF bytes: NaN in every floating dtype, -1 / 255 in integers: an unwritten element shows.
        cuda::check(cudaMemset(buffers.back()->p, 0xFF, bytes), "cudaMemset(poison)");
        dout.push_back({buffers.back()->p, d});
    }
    cuda::LaunchContext ctx = session.context(flash_attention);
    cuda::launch_op(k, din, attrs, dout, ctx);
    session.synchronize();
    cuda::check(cudaGetLastError(), op_name(k).data());
    GpuOpResult r;
    r.notes = ctx.notes;
    for (const cuda::DeviceTensor& t : dout) {
        std::vector<std::byte> host(static_cast<std::size_t>(t.desc.bytes()));
        cuda::check(cudaMemcpy(host.data(), t.data, host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(output)");
        r.outputs.push_back(decode_tensor(t.desc, host.data()));
    }
    session.release_scratch();
    return r;
}

double relative_error(const HostTensor& a, const HostTensor& b) {
    if (a.data.size() != b.data.size()) return std::numeric_limits<double>::infinity();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.data.size(); ++i) {
        if (std::isnan(a.data[i]) != std::isnan(b.data[i])) return std::numeric_limits<double>::infinity();
        if (std::isnan(a.data[i])) continue;
        if (std::isinf(a.data[i]) || std::isinf(b.data[i])) {
            if (a.data[i] != b.data[i]) return std::numeric_limits<double>::infinity();
            continue;
        }
        const double d = a.data[i] - b.data[i];
        num += d * d;
        den += b.data[i] * b.data[i];
    }
    if (den == 0) return num == 0 ? 0 : std::sqrt(num);
    return std::sqrt(num / den);
}

}  // namespace roofline
