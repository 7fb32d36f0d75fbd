#pragma once
// Element types. tf32 is stored as 32-bit float and computed on tensor cores with a 10-bit mantissa;
// fp8 comes in the two OCP formats. u8 holds masks (dropout, boolean).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace roofline {

enum class DType { f64, f32, tf32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, u8, int32, int64 };

inline constexpr DType kAllDTypes[] = {DType::f64,      DType::f32,  DType::tf32, DType::f16,   DType::bf16, DType::fp8_e4m3,
                                       DType::fp8_e5m2, DType::int8, DType::u8,   DType::int32, DType::int64};

std::int64_t dtype_bytes(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::string dtype_choices();  // "f64, f32, ..." for error messages
bool is_floating(DType t);    // f64 .. fp8_e5m2
bool is_index(DType t);       // int32, int64

}  // namespace roofline
