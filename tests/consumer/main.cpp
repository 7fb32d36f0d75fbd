// The consumer project's program (tests/consumer/CMakeLists.txt): loads a model file, analyses it on
// a built-in chip with the installed library, and checks the matrix FLOPs against a hand count.
#include <cstdint>
#include <cstdio>

#include "model/model_json.hpp"
#include "reports/report.hpp"
#include "sim/analysis.hpp"
#include "sim/hardware.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: app examples/two-layer-mlp.json\n");
        return 2;
    }
    const roofline::Graph g = roofline::load_model_arg(argv[1]);
    const roofline::Hardware hw = roofline::builtin_hardware("h100-sxm");
    const roofline::Analysis a = roofline::analyze(g, hw);
    const auto doc = roofline::report_json(roofline::ReportContext{g, hw, a});
    const auto matrix = doc["totals"]["matrix_flops"].get<std::int64_t>();
    // examples/two-layer-mlp.json: batch 32, linear 784 -> 256 and 256 -> 10, 2 FLOPs a multiply-add.
    const std::int64_t expected = 2LL * 32 * (784 * 256 + 256 * 10);
    std::printf("two-layer-mlp on %s: %lld matrix FLOPs (expected %lld)\n", hw.name.c_str(), static_cast<long long>(matrix),
                static_cast<long long>(expected));
    return matrix == expected ? 0 : 1;
}
