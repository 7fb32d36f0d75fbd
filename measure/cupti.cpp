#include "measure/cupti.hpp"

// <cuda.h> and <cudaTypedefs.h> are included for types only (CUcontext, CUdevice, function
// pointer typedefs): nothing here links libcuda; the two driver functions used come through
// cudaGetDriverEntryPointByVersion.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

#include "ops/error.hpp"

namespace roofline {

namespace {

// The kernel activity record of this CUPTI release. The number changes between releases
// (CUpti_ActivityKernel10 in 13.0); later versions only append fields, so reading this prefix of
// a newer record stays valid. Change it here only.
using KernelActivity = CUpti_ActivityKernel10;
static_assert(CUPTI_API_VERSION >= 130000, "measure/cupti.cpp is written against CUPTI 13 (CUpti_ActivityKernel10)");

// ------------------------------------------------------------------------------- errors

std::string result_text(CUptiResult r) {
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return "CUPTI error " + std::to_string(static_cast<int>(r));
    return s;
}

void check_cupti(CUptiResult r, const std::string& call) {
    if (r != CUPTI_SUCCESS) throw CuptiError(call + " failed: " + result_text(r));
}

void check_cuda(cudaError_t e, const std::string& call) {
    if (e != cudaSuccess) throw CuptiError(call + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Counters cannot be read in this process or on this device: profile_kernels turns it into *problem.
class CountersUnavailable : public std::runtime_error {
public:
    explicit CountersUnavailable(const std::string& what) : std::runtime_error(what) {}
};

// Results that mean "no counters here" rather than a bug in this file.
bool means_unavailable(CUptiResult r) {
    switch (r) {
        case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
        case CUPTI_ERROR_NOT_SUPPORTED:
        case CUPTI_ERROR_NOT_COMPATIBLE:
        case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
        case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        case CUPTI_ERROR_INVALID_CHIP_NAME:
        case CUPTI_ERROR_HARDWARE_BUSY:
        case CUPTI_ERROR_DISABLED: return true;
        default: return false;
    }
}

std::string unavailable_hint(CUptiResult r) {
    switch (r) {
        case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
            return "reading GPU performance counters needs root, CAP_SYS_ADMIN or the driver option "
                   "NVreg_RestrictProfilingToAdminUsers=0";
        case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
            return "another profiler (Nsight Compute, Nsight Systems, ...) is attached to this process";
        case CUPTI_ERROR_HARDWARE_BUSY: return "another process is profiling this GPU";
        case CUPTI_ERROR_INVALID_CHIP_NAME: return "this CUPTI release does not know the GPU's chip";
        default: return "the profiler does not support this device or configuration (vGPU, MIG, WSL, ...)";
    }
}

// Checks a call of the counter path: "unavailable" results become CountersUnavailable.
void check_counters(CUptiResult r, const std::string& call) {
    if (r == CUPTI_SUCCESS) return;
    if (means_unavailable(r))
        throw CountersUnavailable("hardware counters are unavailable: " + call + " returned " + result_text(r) + " (" +
                                  unavailable_hint(r) + "); measuring timing only");
    throw CuptiError(call + " failed: " + result_text(r));
}

template <typename Params>
Params params(std::size_t struct_size) {
    Params p = {};
    p.structSize = struct_size;
    return p;
}

// ------------------------------------------------------------------------------- activity

constexpr std::size_t kBufferBytes = std::size_t{4} << 20;  // ~20k kernel records per buffer
constexpr std::align_val_t kBufferAlign{8};                 // CUPTI requires 8-byte aligned buffers

struct RawKernel {
    std::string mangled;
    std::uint64_t start = 0, end = 0;
    std::uint32_t correlation = 0, stream = 0, device = 0;
    int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
    int registers = 0, static_shared = 0, dynamic_shared = 0;
};

// Process-wide: CUPTI's buffer callbacks are global. `claimed` while a tracer is between start()
// and stop(); records are kept only while `collecting`. Never destroyed: CUPTI may deliver a
// buffer from its own thread or at exit.
struct ActivityState {
    std::mutex mutex;
    bool registered = false;
    bool claimed = false;
    bool collecting = false;
    std::vector<RawKernel> kernels;
    std::unordered_map<std::uint32_t, std::uint64_t> tags;  // correlation id -> external id
    std::uint64_t dropped = 0;
    std::uint64_t unreadable_buffers = 0;
};

ActivityState& activity_state() {
    static ActivityState* const state = new ActivityState;
    return *state;
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    void* p = ::operator new(kBufferBytes, kBufferAlign, std::nothrow);
    *buffer = static_cast<std::uint8_t*>(p);
    *size = p != nullptr ? kBufferBytes : 0;  // no buffer: CUPTI drops records and counts them
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer, std::size_t /*size*/, std::size_t valid) {
    if (buffer == nullptr) return;
    std::vector<RawKernel> kernels;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> tags;
    bool unreadable = false;
    try {
        CUpti_Activity* record = nullptr;
        for (;;) {
            const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &record);
            if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
            if (r != CUPTI_SUCCESS) {
                unreadable = true;
                break;
            }
            switch (record->kind) {
                case CUPTI_ACTIVITY_KIND_KERNEL:
                case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
                    const auto* k = reinterpret_cast<const KernelActivity*>(record);
                    RawKernel raw;
                    raw.mangled = k->name != nullptr ? k->name : "<unnamed kernel>";
                    raw.start = k->start;
                    raw.end = k->end;
                    raw.correlation = k->correlationId;
                    raw.stream = k->streamId;
                    raw.device = k->deviceId;
                    raw.grid[0] = k->gridX, raw.grid[1] = k->gridY, raw.grid[2] = k->gridZ;
                    raw.block[0] = k->blockX, raw.block[1] = k->blockY, raw.block[2] = k->blockZ;
                    raw.registers = k->registersPerThread;
                    raw.static_shared = k->staticSharedMemory;
                    raw.dynamic_shared = k->dynamicSharedMemory;
                    kernels.push_back(std::move(raw));
                    break;
                }
                case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
                    const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
                    if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) tags.emplace_back(e->correlationId, e->externalId);
                    break;
                }
                default: break;  // API records: enabled only so that external-correlation records exist
            }
        }
    } catch (...) {  // out of memory: never let an exception into CUPTI's thread
        unreadable = true;
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
    ::operator delete(buffer, kBufferAlign);

    ActivityState& s = activity_state();
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.collecting) return;
    s.dropped += dropped;
    if (unreadable) ++s.unreadable_buffers;
    try {
        s.kernels.insert(s.kernels.end(), std::make_move_iterator(kernels.begin()), std::make_move_iterator(kernels.end()));
        for (const auto& [corr, tag] : tags) s.tags[corr] = tag;
    } catch (...) {
        ++s.unreadable_buffers;
    }
}

// EXTERNAL_CORRELATION first so that API records made right after enabling already get theirs.
constexpr CUpti_ActivityKind kTracedKinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                                               CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};

// Disables every traced kind; returns the first failure.
CUptiResult disable_traced_kinds() {
    CUptiResult first = CUPTI_SUCCESS;
    for (const CUpti_ActivityKind k : kTracedKinds) {
        const CUptiResult r = cuptiActivityDisable(k);
        if (first == CUPTI_SUCCESS) first = r;
    }
    return first;
}

void release_claim() {
    ActivityState& s = activity_state();
    const std::lock_guard<std::mutex> lock(s.mutex);
    s.collecting = false;
    s.claimed = false;
    s.kernels.clear();
    s.tags.clear();
}

std::string demangle(const std::string& mangled) {
    int status = 0;
    char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || d == nullptr) {
        std::free(d);
        return mangled;  // extern "C" kernels and names the demangler does not take
    }
    std::string out(d);
    std::free(d);
    return out;
}

// ------------------------------------------------------------------------------- profiler host

struct HostDeleter {
    void operator()(CUpti_Profiler_Host_Object* h) const {
        auto p = params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
        p.pHostObject = h;
        cuptiProfilerHostDeinitialize(&p);
    }
};
using HostObject = std::unique_ptr<CUpti_Profiler_Host_Object, HostDeleter>;

// A Range Profiler host object for `chip`; availability may be null (offline: all counters).
CUptiResult host_initialize(const std::string& chip, const std::uint8_t* availability, HostObject& out) {
    auto p = params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability;
    const CUptiResult r = cuptiProfilerHostInitialize(&p);
    if (r == CUPTI_SUCCESS) out.reset(p.pHostObject);
    return r;
}

std::vector<const char*> c_names(const std::vector<std::string>& metrics) {
    std::vector<const char*> v;
    v.reserve(metrics.size());
    for (const std::string& m : metrics) v.push_back(m.c_str());
    return v;
}

CUptiResult add_metrics(CUpti_Profiler_Host_Object* host, std::vector<const char*>& names) {
    auto p = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    p.pHostObject = host;
    p.ppMetricNames = names.data();
    p.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&p);
}

// The first metric that a fresh host object for `chip` refuses on its own ("" when none does).
std::string first_refused_metric(const std::string& chip, const std::uint8_t* availability, const std::vector<std::string>& metrics) {
    for (const std::string& m : metrics) {
        HostObject host;
        check_cupti(host_initialize(chip, availability, host), "cuptiProfilerHostInitialize(" + chip + ")");
        std::vector<const char*> one{m.c_str()};
        if (add_metrics(host.get(), one) != CUPTI_SUCCESS) return m;
    }
    return "";
}

struct ConfigImage {
    std::vector<std::uint8_t> image;
    std::size_t passes = 0;
};

ConfigImage config_image(CUpti_Profiler_Host_Object* host) {
    ConfigImage c;
    auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host;
    check_cupti(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
    c.image.assign(size.configImageSize, 0);
    auto get = params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    get.pHostObject = host;
    get.configImageSize = c.image.size();
    get.pConfigImage = c.image.data();
    check_cupti(cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
    auto passes = params<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    passes.configImageSize = c.image.size();
    passes.pConfigImage = c.image.data();
    check_cupti(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
    c.passes = passes.numOfPasses;
    return c;
}

// ------------------------------------------------------------------------------- profiler target

// Driver functions by ABI version (cudaTypedefs.h); any driver that runs a CUDA 13 runtime has
// CUDA 12.0's entry points.
constexpr unsigned int kDriverAbi = 12000;

template <typename Fn>
Fn driver_function(const char* symbol, unsigned int abi_version) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, abi_version, cudaEnableDefault, &found);
    check_cuda(e, std::string("cudaGetDriverEntryPointByVersion(") + symbol + ")");
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
        throw CuptiError(std::string("the CUDA driver has no ") + symbol + " (version " + std::to_string(abi_version) + ")");
    return reinterpret_cast<Fn>(fn);
}

struct ProfilerInitGuard {
    bool on = false;
    ~ProfilerInitGuard() {
        if (!on) return;
        auto p = params<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
        cuptiProfilerDeInitialize(&p);
    }
};

struct DeviceRestore {
    int previous = -1;
    ~DeviceRestore() {
        if (previous >= 0) cudaSetDevice(previous);
    }
};

// An enabled Range Profiler on one context: stopped (if started) and disabled on every path.
struct RangeProfilerGuard {
    CUpti_RangeProfiler_Object* object = nullptr;
    bool started = false;
    ~RangeProfilerGuard() {
        if (object == nullptr) return;
        if (started) {
            auto s = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
            s.pRangeProfilerObject = object;
            cuptiRangeProfilerStop(&s);
        }
        auto d = params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
        d.pRangeProfilerObject = object;
        cuptiRangeProfilerDisable(&d);
    }
};

std::string device_chip_name(int device) {
    auto p = params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    p.deviceIndex = static_cast<std::size_t>(device);
    check_cupti(cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName(device " + std::to_string(device) + ")");
    if (p.pChipName == nullptr) throw CuptiError("cuptiDeviceGetChipName returned no name");
    return p.pChipName;
}

void check_device_supported(CUdevice dev, int device) {
    auto p = params<CUpti_Profiler_DeviceSupported_Params>(CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
    p.cuDevice = dev;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    check_counters(cuptiProfilerDeviceSupported(&p), "cuptiProfilerDeviceSupported");
    if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return;
    std::string why;
    const auto note = [&why](CUpti_Profiler_Support_Level level, const char* what) {
        if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED || level == CUPTI_PROFILER_CONFIGURATION_DISABLED)
            why += std::string(why.empty() ? "" : ", ") + what +
                   (level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? " (disabled)" : " (unsupported)");
    };
    note(p.architecture, "the GPU architecture");
    note(p.sli, "SLI");
    note(p.vGpu, "vGPU");
    note(p.confidentialCompute, "confidential computing");
    note(p.cmp, "a CMP device");
    note(p.wsl, "WSL");
    throw CountersUnavailable("hardware counters are unavailable: the CUPTI Range Profiler does not support device " +
                              std::to_string(device) + " (" + (why.empty() ? "reason not reported" : why) + "); measuring timing only");
}

std::vector<std::uint8_t> counter_availability(CUcontext ctx) {
    auto p = params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    p.ctx = ctx;
    check_counters(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
    std::vector<std::uint8_t> image(p.counterAvailabilityImageSize, 0);
    p.pCounterAvailabilityImage = image.data();
    check_counters(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
    return image;
}

struct SessionResult {
    std::vector<std::map<std::string, double>> ranges;  // launch order
    std::size_t dropped = 0;
};

// One Range Profiler session: enable on ctx, counter data for `max_ranges` ranges, SetConfig
// (AutoRange + KernelReplay), Start / workload / Stop until every pass is submitted, decode,
// evaluate every range, disable.
SessionResult run_session(CUcontext ctx, CUpti_Profiler_Host_Object* host, const ConfigImage& config, std::vector<const char*>& names,
                          std::size_t max_ranges, const std::function<void()>& workload) {
    std::vector<std::uint8_t> counter_data;  // outlives the guard below: CUPTI writes it until disabled
    RangeProfilerGuard rp;
    {
        auto p = params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
        p.ctx = ctx;
        check_counters(cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable");
        rp.object = p.pRangeProfilerObject;
    }
    {
        auto p = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
        p.pRangeProfilerObject = rp.object;
        p.pMetricNames = names.data();
        p.numMetrics = names.size();
        p.maxNumOfRanges = max_ranges;
        p.maxNumRangeTreeNodes = static_cast<std::uint32_t>(max_ranges);
        check_counters(cuptiRangeProfilerGetCounterDataSize(&p), "cuptiRangeProfilerGetCounterDataSize");
        counter_data.assign(p.counterDataSize, 0);
    }
    {
        auto p = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
            CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
        p.pRangeProfilerObject = rp.object;
        p.counterDataSize = counter_data.size();
        p.pCounterData = counter_data.data();
        check_counters(cuptiRangeProfilerCounterDataImageInitialize(&p), "cuptiRangeProfilerCounterDataImageInitialize");
    }
    {
        auto p = params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
        p.pRangeProfilerObject = rp.object;
        p.configSize = config.image.size();
        p.pConfig = config.image.data();
        p.counterDataImageSize = counter_data.size();
        p.pCounterDataImage = counter_data.data();
        p.range = CUPTI_AutoRange;          // one range per kernel, named "0", "1", ... in launch order
        p.replayMode = CUPTI_KernelReplay;  // CUPTI replays each kernel for every pass itself
        p.maxRangesPerPass = max_ranges;
        p.numNestingLevels = 1;
        p.minNestingLevel = 1;
        p.passIndex = 0;
        p.targetNestingLevel = 1;
        check_counters(cuptiRangeProfilerSetConfig(&p), "cuptiRangeProfilerSetConfig");
    }
    // Kernel replay submits every pass within one Start/Stop (isAllPassSubmitted = 1 at once);
    // the loop only guards against a CUPTI that wants the range replayed.
    bool all_submitted = false;
    for (std::size_t run = 0; !all_submitted; ++run) {
        if (run > config.passes)
            throw CuptiError("the Range Profiler still wanted passes after " + std::to_string(run) + " runs of the workload (" +
                             std::to_string(config.passes) + " passes expected)");
        auto start = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
        start.pRangeProfilerObject = rp.object;
        check_counters(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
        rp.started = true;
        workload();
        auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
        stop.pRangeProfilerObject = rp.object;
        rp.started = false;
        check_counters(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
        all_submitted = stop.isAllPassSubmitted != 0;
    }
    SessionResult out;
    {
        auto p = params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
        p.pRangeProfilerObject = rp.object;
        check_counters(cuptiRangeProfilerDecodeData(&p), "cuptiRangeProfilerDecodeData");
        out.dropped = p.numOfRangeDropped;
    }
    std::size_t num_ranges = 0;
    {
        auto p = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
        p.pCounterDataImage = counter_data.data();
        p.counterDataImageSize = counter_data.size();
        check_cupti(cuptiRangeProfilerGetCounterDataInfo(&p), "cuptiRangeProfilerGetCounterDataInfo");
        num_ranges = p.numTotalRanges;
    }
    // (launch number from the range name, range values); AutoRange names are "0", "1", ...
    std::vector<std::pair<std::size_t, std::map<std::string, double>>> ranges;
    bool numbered = true;
    std::vector<double> values(names.size());
    for (std::size_t i = 0; i < num_ranges; ++i) {
        auto info =
            params<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
        info.pCounterDataImage = counter_data.data();
        info.counterDataImageSize = counter_data.size();
        info.rangeIndex = i;
        info.rangeDelimiter = "/";
        check_cupti(cuptiRangeProfilerCounterDataGetRangeInfo(&info), "cuptiRangeProfilerCounterDataGetRangeInfo");
        std::size_t launch = i;
        const std::string name = info.rangeName != nullptr ? info.rangeName : "";
        const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), launch);
        if (name.empty() || ec != std::errc() || end != name.data() + name.size()) numbered = false;

        auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
        eval.pHostObject = host;
        eval.pCounterDataImage = counter_data.data();
        eval.counterDataImageSize = counter_data.size();
        eval.rangeIndex = i;
        eval.ppMetricNames = names.data();
        eval.numMetrics = names.size();
        std::fill(values.begin(), values.end(), std::numeric_limits<double>::quiet_NaN());
        eval.pMetricValues = values.data();
        check_cupti(cuptiProfilerHostEvaluateToGpuValues(&eval),
                    "cuptiProfilerHostEvaluateToGpuValues(range " + std::to_string(i) + " '" + name + "')");
        std::map<std::string, double> m;
        for (std::size_t j = 0; j < names.size(); ++j) m[names[j]] = values[j];
        ranges.emplace_back(launch, std::move(m));
    }
    if (numbered) std::stable_sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out.ranges.reserve(ranges.size());
    for (auto& r : ranges) out.ranges.push_back(std::move(r.second));
    return out;
}

constexpr std::size_t kInitialRanges = 256;
constexpr std::size_t kMaxRanges = std::size_t{1} << 16;

std::vector<std::map<std::string, double>> profile_impl(int device, const std::vector<std::string>& metrics,
                                                        const std::function<void()>& workload) {
    DeviceRestore restore;
    if (int current = 0; cudaGetDevice(&current) == cudaSuccess) restore.previous = current;
    if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
        throw DeviceUnavailable("no CUDA device " + std::to_string(device) + " to profile (cudaSetDevice: " + cudaGetErrorName(e) + ")");
    check_cuda(cudaFree(nullptr), "cudaFree(0) (creating the primary context)");
    CUcontext ctx = nullptr;
    if (const CUresult r = driver_function<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", kDriverAbi)(&ctx);
        r != CUDA_SUCCESS || ctx == nullptr)
        throw CuptiError("cuCtxGetCurrent failed (CUresult " + std::to_string(static_cast<int>(r)) + ")");
    CUdevice dev = 0;
    if (const CUresult r = driver_function<PFN_cuDeviceGet_v2000>("cuDeviceGet", kDriverAbi)(&dev, device); r != CUDA_SUCCESS)
        throw CuptiError("cuDeviceGet failed (CUresult " + std::to_string(static_cast<int>(r)) + ")");

    ProfilerInitGuard init;
    {
        auto p = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
        check_counters(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
        init.on = true;
    }
    check_device_supported(dev, device);
    const std::string chip = device_chip_name(device);
    const std::vector<std::uint8_t> availability = counter_availability(ctx);  // outlives `host`

    HostObject host;
    check_counters(host_initialize(chip, availability.data(), host), "cuptiProfilerHostInitialize(" + chip + ")");
    std::vector<const char*> names = c_names(metrics);
    if (add_metrics(host.get(), names) != CUPTI_SUCCESS) {
        if (const std::string bad = first_refused_metric(chip, nullptr, metrics); !bad.empty())
            throw InputError("metric '" + bad + "' is not a valid CUPTI metric on " + chip);
        if (const std::string bad = first_refused_metric(chip, availability.data(), metrics); !bad.empty())
            throw CountersUnavailable("hardware counters are unavailable: metric '" + bad + "' is valid on " + chip +
                                      " but its counters are not available on device " + std::to_string(device) +
                                      "; measuring timing only");
        throw CuptiError("cuptiProfilerHostConfigAddMetrics refused the metric set on " + chip +
                         " although each metric is valid on its own");
    }
    const ConfigImage config = config_image(host.get());

    std::size_t max_ranges = kInitialRanges;
    for (;;) {
        SessionResult s = run_session(ctx, host.get(), config, names, max_ranges, workload);
        // Fewer ranges than room and none dropped: every kernel was profiled.
        if (s.dropped == 0 && s.ranges.size() < max_ranges) return std::move(s.ranges);
        if (max_ranges >= kMaxRanges)
            throw CuptiError("the workload launched more than " + std::to_string(kMaxRanges) + " kernels: too many to profile in one call");
        max_ranges = std::min(kMaxRanges, std::max(max_ranges * 4, (s.ranges.size() + s.dropped) * 2));
    }
}

// ------------------------------------------------------------------------------- metric names

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kSmClock = "sm__cycles_elapsed.avg.per_second";
constexpr const char* kDramRead = "dram__bytes_read.sum";
constexpr const char* kDramWrite = "dram__bytes_write.sum";
constexpr const char* kL2Bytes = "lts__t_bytes.sum";
constexpr const char* kL1Bytes = "l1tex__t_bytes.sum";
constexpr const char* kSharedBytes = "sm__sass_data_bytes_mem_shared.sum";
constexpr const char* kSharedConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum";
constexpr const char* kFfma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
constexpr const char* kFadd = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
constexpr const char* kFmul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
constexpr const char* kDfma = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum";
constexpr const char* kDadd = "sm__sass_thread_inst_executed_op_dadd_pred_on.sum";
constexpr const char* kDmul = "sm__sass_thread_inst_executed_op_dmul_pred_on.sum";
constexpr const char* kHfma = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum";
constexpr const char* kHadd = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum";
constexpr const char* kHmul = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* kSimtRatio = "smsp__average_thread_inst_executed_per_inst_executed.ratio";

// Tensor-path metrics. GH100 counts fp16 sources in one metric (src_fp16_dst_fp32 is invalid
// there); GA100 splits fp16 by accumulator type and has no fp8. The order matters: CUPTI 13.0
// schedules metrics greedily in the order given, and these orders (after the common metrics)
// need 5 passes on each chip where others need 6 (all 24 orders tried offline).
constexpr const char* kTensorGH100[] = {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_src_fp16.sum",
                                        "sm__ops_path_tensor_src_tf32_dst_fp32.sum", "sm__ops_path_tensor_src_fp8.sum"};
constexpr const char* kTensorGA100[] = {"sm__ops_path_tensor_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
                                        "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_src_tf32_dst_fp32.sum"};
// Every tensor metric derive_counters adds up (no name is in both a total and its parts).
constexpr const char* kTensorAll[] = {"sm__ops_path_tensor_src_fp16.sum",          "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
                                      "sm__ops_path_tensor_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
                                      "sm__ops_path_tensor_src_tf32_dst_fp32.sum", "sm__ops_path_tensor_src_fp8.sum"};

}  // namespace

// ============================================================================ KernelTracer

KernelTracer::~KernelTracer() {
    if (!active_) return;
    for (; depth_ > 0; --depth_) {
        std::uint64_t last = 0;
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    }
    disable_traced_kinds();
    release_claim();
}

void KernelTracer::start() {
    if (active_) throw CuptiError("KernelTracer::start: this tracer is already started");
    ActivityState& s = activity_state();
    {
        const std::lock_guard<std::mutex> lock(s.mutex);
        if (s.claimed) throw CuptiError("KernelTracer::start: another KernelTracer is active in this process");
        if (!s.registered) {
            check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
            s.registered = true;
        }
        s.claimed = true;
        s.collecting = false;
    }
    // Drain anything an earlier session left in CUPTI's buffers (discarded: not collecting). Never
    // flushed under the mutex: the completion callback takes it. The result does not matter.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    {
        const std::lock_guard<std::mutex> lock(s.mutex);
        s.kernels.clear();
        s.tags.clear();
        s.dropped = 0;
        s.unreadable_buffers = 0;
        s.collecting = true;
    }
    for (const CUpti_ActivityKind k : kTracedKinds) {
        const CUptiResult r = cuptiActivityEnable(k);
        if (r != CUPTI_SUCCESS) {
            disable_traced_kinds();
            release_claim();
            check_cupti(r, "cuptiActivityEnable(kind " + std::to_string(static_cast<int>(k)) + ")");
        }
    }
    active_ = true;
    depth_ = 0;
}

void KernelTracer::push_tag(std::uint64_t tag) {
    if (!active_) throw CuptiError("KernelTracer::push_tag: the tracer is not started");
    check_cupti(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, tag),
                "cuptiActivityPushExternalCorrelationId");
    ++depth_;
}

void KernelTracer::pop_tag() {
    if (!active_) throw CuptiError("KernelTracer::pop_tag: the tracer is not started");
    if (depth_ == 0) throw CuptiError("KernelTracer::pop_tag: no tag is pushed");
    std::uint64_t last = 0;
    check_cupti(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
                "cuptiActivityPopExternalCorrelationId");
    --depth_;
}

std::vector<KernelRecord> KernelTracer::stop() {
    if (!active_) throw CuptiError("KernelTracer::stop: the tracer is not started");
    CUptiResult pop = CUPTI_SUCCESS;
    for (; depth_ > 0; --depth_) {
        std::uint64_t last = 0;
        const CUptiResult r = cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
        if (pop == CUPTI_SUCCESS) pop = r;
    }
    // Kernel records are complete only once the kernels ran; then hand every buffer back.
    const cudaError_t sync = cudaDeviceSynchronize();
    const CUptiResult flush = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const CUptiResult disable = disable_traced_kinds();
    active_ = false;

    ActivityState& s = activity_state();
    std::vector<RawKernel> raw;
    std::unordered_map<std::uint32_t, std::uint64_t> tags;
    std::uint64_t dropped = 0, unreadable = 0;
    {
        const std::lock_guard<std::mutex> lock(s.mutex);
        raw.swap(s.kernels);
        tags.swap(s.tags);
        dropped = s.dropped;
        unreadable = s.unreadable_buffers;
        s.collecting = false;
        s.claimed = false;
    }
    check_cuda(sync, "cudaDeviceSynchronize (KernelTracer::stop)");
    check_cupti(flush, "cuptiActivityFlushAll");
    check_cupti(disable, "cuptiActivityDisable");
    check_cupti(pop, "cuptiActivityPopExternalCorrelationId");
    if (dropped > 0) throw CuptiError("CUPTI dropped " + std::to_string(dropped) + " activity records: the kernel trace is incomplete");
    if (unreadable > 0)
        throw CuptiError(std::to_string(unreadable) + " CUPTI activity buffers could not be read: the kernel trace is incomplete");

    std::unordered_map<std::string, std::string> names;  // mangled -> demangled
    std::vector<KernelRecord> out;
    out.reserve(raw.size());
    for (RawKernel& k : raw) {
        KernelRecord r;
        auto it = names.find(k.mangled);
        if (it == names.end()) it = names.emplace(k.mangled, demangle(k.mangled)).first;
        r.name = it->second;
        r.start_ns = k.start;
        r.end_ns = k.end;
        r.correlation_id = k.correlation;
        const auto tag = tags.find(k.correlation);
        r.tag = tag != tags.end() ? tag->second : 0;
        r.stream_id = k.stream;
        for (int d = 0; d < 3; ++d) {
            r.grid[d] = k.grid[d];
            r.block[d] = k.block[d];
        }
        r.registers_per_thread = k.registers;
        r.static_shared_bytes = k.static_shared;
        r.dynamic_shared_bytes = k.dynamic_shared;
        r.device_id = k.device;
        out.push_back(std::move(r));
    }
    std::stable_sort(out.begin(), out.end(), [](const KernelRecord& a, const KernelRecord& b) {
        return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.correlation_id < b.correlation_id;
    });
    return out;
}

// ============================================================================ counters

std::vector<std::map<std::string, double>> profile_kernels(int device, const std::vector<std::string>& metrics,
                                                           const std::function<void()>& workload, std::string* problem) {
    if (problem != nullptr) problem->clear();
    if (metrics.empty()) throw InputError("profile_kernels: no metrics requested");
    if (!workload) throw InputError("profile_kernels: no workload");
    try {
        return profile_impl(device, metrics, workload);
    } catch (const CountersUnavailable& e) {
        if (problem == nullptr) throw DeviceUnavailable(e.what());
        *problem = e.what();
        return {};
    }
}

int count_passes(const std::string& chip, const std::vector<std::string>& metrics) {
    if (metrics.empty()) throw InputError("count_passes: no metrics given");
    HostObject host;
    if (const CUptiResult r = host_initialize(chip, nullptr, host); r != CUPTI_SUCCESS) {
        if (r == CUPTI_ERROR_INVALID_CHIP_NAME || r == CUPTI_ERROR_INVALID_PARAMETER)
            throw InputError("CUPTI knows no chip '" + chip + "' (" + result_text(r) + ")");
        check_cupti(r, "cuptiProfilerHostInitialize(" + chip + ")");
    }
    std::vector<const char*> names = c_names(metrics);
    if (add_metrics(host.get(), names) != CUPTI_SUCCESS) {
        if (const std::string bad = first_refused_metric(chip, nullptr, metrics); !bad.empty())
            throw InputError("metric '" + bad + "' is not a valid CUPTI metric on " + chip);
        throw CuptiError("cuptiProfilerHostConfigAddMetrics refused the metric set on " + chip +
                         " although each metric is valid on its own");
    }
    return static_cast<int>(config_image(host.get()).passes);
}

std::vector<std::string> roofline_metrics(const std::string& chip) {
    std::vector<std::string> m = {kDuration, kSmClock,   kDramRead, kDramWrite, kL2Bytes, kL1Bytes, kSharedBytes, kSharedConflicts,
                                  kFfma,     kFadd,      kFmul,     kDfma,      kDadd,    kDmul,    kHfma,        kHadd,
                                  kHmul,     kOccupancy, kSimtRatio};
    if (chip == "GH100")
        m.insert(m.end(), std::begin(kTensorGH100), std::end(kTensorGH100));
    else if (chip == "GA100")
        m.insert(m.end(), std::begin(kTensorGA100), std::end(kTensorGA100));
    else
        throw InputError("no roofline metric set for chip '" + chip + "' (known: GA100, GH100)");
    return m;
}

std::string chip_name(int device) {
    int count = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
        throw DeviceUnavailable(std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(e) + ")");
    if (device < 0 || device >= count)
        throw DeviceUnavailable("no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " present)");
    ProfilerInitGuard init;
    auto p = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    check_cupti(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
    init.on = true;
    return device_chip_name(device);
}

KernelCounters derive_counters(const std::map<std::string, double>& values) {
    const auto count = [&values](const char* metric) {
        const auto it = values.find(metric);
        return it != values.end() ? it->second : 0.0;
    };
    const auto known = [&values](const char* metric) {
        const auto it = values.find(metric);
        return it != values.end() ? it->second : std::numeric_limits<double>::quiet_NaN();
    };
    KernelCounters c;
    c.dram_read_bytes = count(kDramRead);
    c.dram_write_bytes = count(kDramWrite);
    c.l2_bytes = count(kL2Bytes);
    c.l1_bytes = count(kL1Bytes);
    c.shared_bytes = count(kSharedBytes);
    c.fp32_flops = 2 * count(kFfma) + count(kFadd) + count(kFmul);
    c.fp16_flops = 4 * count(kHfma) + 2 * count(kHadd) + 2 * count(kHmul);
    c.fp64_flops = 2 * count(kDfma) + count(kDadd) + count(kDmul);
    for (const char* t : kTensorAll) c.tensor_ops += count(t);
    c.achieved_occupancy = known(kOccupancy) / 100.0;
    c.simt_efficiency = known(kSimtRatio) / 32.0;
    c.sm_clock_hz = known(kSmClock);
    return c;
}

}  // namespace roofline
