// The roofline executable's parse_onnx (issue #20): libonnx and protobuf cost every process about 2
// ms of start-up (their relocations and protobuf's descriptor registration), so the executable
// links neither. Its parse_onnx loads the ONNX reader, model/onnx_proto.cpp built as a module
// (kOnnxModule, installed beside the executable), the first time a command reads an ONNX model.
// This definition takes the place of the model library's (CMakeLists.txt: the executable's objects
// come first, so the library's model/onnx_proto.cpp, which holds nothing else, is never linked).
// Only the roofline executable is built with it; the libraries, tests and the Python module read
// ONNX directly.
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <string>

#include "model/onnx_model.hpp"
#include "ops/error.hpp"

namespace roofline {

namespace {

// The module's entry point, loaded once (kept for the process: the models it reads keep no pointer
// into it, but a second model must not load it again).
OnnxReadFn onnx_reader(const std::string& origin) {
    static OnnxReadFn read = nullptr;
    if (read != nullptr) return read;
    std::array<char, 4096> self{};
    const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    std::string path = n > 0 ? std::string(self.data(), static_cast<std::size_t>(n)) : std::string();
    path = path.substr(0, path.find_last_of('/') + 1) + kOnnxModule;
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
        const char* why = dlerror();
        throw InputError(origin + ": cannot load the ONNX reader " + path + " (" + (why != nullptr ? why : "unknown error") +
                         "; it is built with roofline and installed beside it)");
    }
    read = reinterpret_cast<OnnxReadFn>(dlsym(module, kOnnxModuleEntry));
    if (read == nullptr) throw InputError(origin + ": " + path + " has no " + kOnnxModuleEntry + " (a module of another roofline?)");
    return read;
}

}  // namespace

OnnxModel parse_onnx(std::string_view bytes, const std::string& origin) {
    OnnxModel m;
    onnx_reader(origin)(bytes, origin, check_onnx_structure, m);
    return m;
}

}  // namespace roofline
