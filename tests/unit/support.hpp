#pragma once
// Helpers shared by the unit tests: paths to fixtures and running the roofline executable.
#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "model/graph.hpp"

namespace test {

// The built-in hardware catalog (sim/hardware/*.json): catalog_test.cpp checks that
// builtin_hardware_names() is exactly these.
inline const std::vector<std::string> kGpuSpecs = {"h100-sxm",
                                                   "h100-pcie",
                                                   "h200",
                                                   "a100-sxm-40gb",
                                                   "a100-sxm-80gb",
                                                   "a100-pcie-40gb",
                                                   "a100-pcie-80gb",
                                                   "v100-pcie-32gb",
                                                   "v100-sxm-32gb",
                                                   "p100-pcie-16gb",
                                                   "p4",
                                                   "t4",
                                                   "a10",
                                                   "l4",
                                                   "rtx-4090"};
inline const std::vector<std::string> kTpuSpecs = {"tpu-v4", "tpu-v5e", "tpu-v5p"};

// A file's bytes (empty when it cannot be read).
inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Elements of the graph's parameter tensors (what the checkpoint holds, for one rank under a split).
inline std::int64_t parameter_count(const roofline::Graph& g) {
    std::int64_t n = 0;
    for (const roofline::Tensor& t : g.tensors()) n += t.role == roofline::TensorRole::parameter ? t.desc.numel() : 0;
    return n;
}

inline std::string source_path(const std::string& rel) { return std::string(ROOFLINE_SOURCE_DIR) + "/" + rel; }
inline std::string tmp_path(const std::string& name) { return std::string(ROOFLINE_TEST_TMP) + "/" + name; }

struct CliResult {
    int code = -1;
    std::string out;  // stdout and stderr together
};

// Runs a shell command line, its output and exit code.
inline CliResult run_cli_command(const std::string& cmd) {
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

// Runs `roofline ARGS` through the shell (arguments are already quoted by the caller).
inline CliResult run_cli(const std::string& args) { return run_cli_command(std::string("'") + ROOFLINE_EXE + "' " + args + " 2>&1"); }

// The same from a working directory (quoted here).
inline CliResult run_cli_in(const std::string& dir, const std::string& args) {
    return run_cli_command(std::string("cd '") + dir + "' && '" + ROOFLINE_EXE + "' " + args + " 2>&1");
}

}  // namespace test
