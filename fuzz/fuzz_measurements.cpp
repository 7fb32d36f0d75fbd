// libFuzzer target: the measurement loaders of `roofline validate` (the public per-op and
// end-to-end CSV layouts and `measure` JSON, chosen by the first byte) and the prediction of
// every case read, on arbitrary bytes. Every input must end in predictions or an InputError
// naming the file and row; anything else is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "ops/error.hpp"
#include "reports/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static const char* const names[] = {"linear.csv",    "bmm.csv",    "add.csv",        "softmax.csv",
                                        "layernorm.csv", "conv2d.csv", "end_to_end.csv", "measure.json"};
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("roofline-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::filesystem::path file = dir / names[data[0] % (sizeof names / sizeof names[0])];
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
    }
    roofline::ValidateOptions opt;
    opt.max_rows = 8;  // a few cases a file keep the fuzzer fast; the reader sees every row
    opt.threads = 1;
    try {
        roofline::MeasurementSet set = roofline::load_measurements({file.string()}, opt);
        roofline::predict_measurements(set, opt);
    } catch (const roofline::InputError&) {}
    std::filesystem::remove(file);
    return 0;
}
