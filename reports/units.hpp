#pragma once
// Human units for display. Data stays in SI units; only what is printed is scaled.
#include <string>

namespace roofline {

std::string human_si(double value, const std::string& unit, int precision = 3);  // 1.23 GFLOP, 4.5 GB/s
std::string human_bytes(double bytes);                                           // SI: 1 GB = 1e9 B
std::string human_time(double seconds);                                          // ns, us, ms, s
std::string human_intensity(double flop_per_byte);                               // "124.1"
// Text for a terminal: control characters other than newline and tab written as \xNN, so that a
// name read from a file cannot move the cursor or change colours.
std::string terminal_safe(const std::string& text);

}  // namespace roofline
