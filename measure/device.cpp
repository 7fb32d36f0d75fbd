#include "measure/device.hpp"

#include <cuda_runtime_api.h>

namespace roofline {

DeviceQuery query_cuda_devices() {
    DeviceQuery q;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        q.problem = std::string("no CUDA device (") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")";
        return q;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        q.devices.push_back(CudaDevice{i, p.name, p.major, p.minor, p.multiProcessorCount, static_cast<long long>(p.totalGlobalMem)});
    }
    if (q.devices.empty()) q.problem = "no CUDA device (the runtime reports none)";
    return q;
}

}  // namespace roofline
