#include "reports/units.hpp"

#include <cmath>
#include <fmt/format.h>

namespace roofline {

std::string human_si(double value, const std::string& unit, int precision) {
    static const char* const prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
    int p = 0;
    double v = value;
    while (std::fabs(v) >= 1000.0 && p < 6) {
        v /= 1000.0;
        ++p;
    }
    if (p == 0 && v == std::floor(v)) return fmt::format("{:.0f} {}", v, unit);
    return fmt::format("{:.{}g} {}{}", v, precision, prefixes[p], unit);
}

std::string human_bytes(double bytes) { return human_si(bytes, "B"); }

std::string human_time(double s) {
    if (s == 0) return "0 s";
    if (s < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
    if (s < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
    if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
    return fmt::format("{:.3g} s", s);
}

std::string human_intensity(double x) {
    if (x >= 100) return fmt::format("{:.0f}", x);
    if (x >= 10) return fmt::format("{:.1f}", x);
    return fmt::format("{:.2f}", x);
}

std::string terminal_safe(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            out += fmt::format("\\x{:02x}", c);
        else
            out += ch;
    }
    return out;
}

}  // namespace roofline
