#pragma once
// CUDA device discovery through the runtime API (cudart only, no libcuda link). On a machine
// without a driver or GPU this reports why, so that measure and the [gpu] tests can say so.
#include <string>
#include <vector>

namespace roofline {

struct CudaDevice {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    long long global_memory_bytes = 0;
};

struct DeviceQuery {
    std::vector<CudaDevice> devices;
    std::string problem;  // empty when at least one device is usable; otherwise why not
};

DeviceQuery query_cuda_devices();

}  // namespace roofline
