// Google Benchmark: `roofline validate` on the committed public measurements (issue #15: the whole
// public set without leave-one-out in under 2 s on the project's 2-core machine). Figures are in
// docs/PERFORMANCE.md ("validate").
#include <benchmark/benchmark.h>

#include "reports/validate.hpp"

namespace {

const std::string kPublic = std::string(ROOFLINE_SOURCE_DIR) + "/tests/data/public/neusight";

// Reading the CSVs (112,000 op rows and the end-to-end rows) and building the cases.
void BM_ValidateLoad(benchmark::State& state) {
    const roofline::ValidateOptions opt;
    for (auto _ : state) {
        const roofline::MeasurementSet set = roofline::load_measurements({kPublic}, opt);
        benchmark::DoNotOptimize(set.cases.size());
    }
}

// The whole run: load, predict every case with the compiled-in terms, statistics, the document.
void BM_ValidatePublic(benchmark::State& state) {
    roofline::ValidateOptions opt;
    opt.threads = static_cast<unsigned>(state.range(0));
    std::size_t cases = 0;
    for (auto _ : state) {
        const auto doc = roofline::run_validation(roofline::load_measurements({kPublic}, opt), opt);
        cases = doc["summary"]["cases"].get<std::size_t>();
        benchmark::DoNotOptimize(doc.size());
    }
    state.counters["cases"] = static_cast<double>(cases);
}

}  // namespace

BENCHMARK(BM_ValidateLoad)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ValidatePublic)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

BENCHMARK_MAIN();
