// libFuzzer target: raw calibration files (roofline-calibration/1, `calibrate --raw`): the measured
// values merged into the built-in h100-sxm spec (calibrated_spec), the result loaded as a hardware
// spec (parse_hardware), and the calibration table (render_calibration). Every input must end in
// a spec and a table, or an InputError; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "fuzz/fuzz_json.hpp"
#include "ops/error.hpp"
#include "sim/calibration.hpp"
#include "sim/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::optional<nlohmann::json> parsed = fuzz_json(data, size);
    if (!parsed) return 0;
    static const nlohmann::json base = roofline::resolve_hardware_json("h100-sxm");
    try {
        const nlohmann::json spec = roofline::calibrated_spec(base, *parsed);
        (void)roofline::parse_hardware(spec, "calibrated.json");
        (void)roofline::render_calibration(*parsed, "h100-sxm");
    } catch (const roofline::InputError&) {}
    return 0;
}
