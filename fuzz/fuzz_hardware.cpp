// libFuzzer target: the roofline-hardware/1 spec loader (parse_hardware: sourced numbers, ranges,
// memory levels and their roles, compute capability, achieved rates against their peaks), then
// every ceiling and ridge the cost model reads from a spec, on arbitrary bytes. Every input must
// end in a Hardware or an InputError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fuzz/fuzz_json.hpp"
#include "ops/dtype.hpp"
#include "ops/error.hpp"
#include "sim/hardware.hpp"
#include "sim/roofline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::optional<nlohmann::json> parsed = fuzz_json(data, size);
    if (!parsed) return 0;
    const nlohmann::json& doc = *parsed;
    try {
        const roofline::Hardware hw = roofline::parse_hardware(doc, "fuzz.json");
        for (const roofline::DType d : {roofline::DType::f32, roofline::DType::bf16, roofline::DType::f16, roofline::DType::fp8_e4m3}) {
            (void)roofline::matrix_ceiling(hw, d);
            (void)roofline::vector_ceiling(hw, d);
        }
        (void)roofline::transcendental_ceiling(hw);
    } catch (const roofline::InputError&) {}
    return 0;
}
