// libFuzzer target: the command line (cli/run.cpp: CLI11's parsing, every subcommand's option
// checks and what they run) on arbitrary argument lists. The input is split at newlines into at
// most 24 arguments. Every input must end in exit 0 (success), 2 (bad input) or 3 (no GPU);
// exit 1, "internal error", means an exception escaped as a bug, and aborts. Arguments naming a
// path (a '/') are left out so that outputs stay in the working directory, a fresh temporary one;
// measure and calibrate are left out (they hand over to roofline-gpu).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "cli/run.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    char dir[] = "/tmp/roofline-fuzz-cli-XXXXXX";
    if (mkdtemp(dir) == nullptr || chdir(dir) != 0) std::abort();
    const int null = open("/dev/null", O_WRONLY);  // the tables and help texts: not what is fuzzed
    if (null < 0 || dup2(null, 1) < 0) std::abort();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"roofline"};
    std::string cur;
    for (std::size_t i = 0; i <= size; ++i) {
        if (i == size || data[i] == '\n') {
            args.push_back(cur);
            cur.clear();
            if (args.size() > 25) return -1;
        } else {
            cur.push_back(static_cast<char>(data[i]));
        }
    }
    for (const std::string& a : args) {
        if (a.find('/') != std::string::npos || a.size() > 64 || a == "measure" || a == "calibrate") return -1;
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int code = roofline::cli::run(static_cast<int>(args.size()), argv.data());
    if (code != 0 && code != 2 && code != 3) {
        std::fprintf(stderr, "fuzz_cli: exit %d\n", code);
        std::abort();
    }
    return 0;
}
