#pragma once
// Helpers shared by the unit tests: paths to fixtures and running the roofline executable.
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace test {

inline std::string source_path(const std::string& rel) { return std::string(ROOFLINE_SOURCE_DIR) + "/" + rel; }
inline std::string tmp_path(const std::string& name) { return std::string(ROOFLINE_TEST_TMP) + "/" + name; }

struct CliResult {
    int code = -1;
    std::string out;  // stdout and stderr together
};

// Runs `roofline ARGS` through the shell (arguments are already quoted by the caller).
inline CliResult run_cli(const std::string& args) {
    CliResult r;
    const std::string cmd = std::string("'") + ROOFLINE_EXE + "' " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

}  // namespace test
