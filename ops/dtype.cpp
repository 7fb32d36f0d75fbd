#include "ops/dtype.hpp"

namespace roofline {

std::int64_t dtype_bytes(DType t) {
    switch (t) {
        case DType::f64: return 8;
        case DType::f32: return 4;
        case DType::tf32: return 4;  // stored as f32
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::fp8_e4m3: return 1;
        case DType::fp8_e5m2: return 1;
        case DType::int8: return 1;
        case DType::u8: return 1;
        case DType::int32: return 4;
        case DType::int64: return 8;
    }
    return 0;  // unreachable: -Werror=switch makes a missing case a compile error
}

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f64: return "f64";
        case DType::f32: return "f32";
        case DType::tf32: return "tf32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::fp8_e4m3: return "fp8_e4m3";
        case DType::fp8_e5m2: return "fp8_e5m2";
        case DType::int8: return "int8";
        case DType::u8: return "u8";
        case DType::int32: return "int32";
        case DType::int64: return "int64";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType t : kAllDTypes) {
        if (dtype_name(t) == name) return t;
    }
    return std::nullopt;
}

std::string dtype_choices() {
    std::string s;
    for (DType t : kAllDTypes) {
        if (!s.empty()) s += ", ";
        s += dtype_name(t);
    }
    return s;
}

bool is_floating(DType t) {
    switch (t) {
        case DType::f64:
        case DType::f32:
        case DType::tf32:
        case DType::f16:
        case DType::bf16:
        case DType::fp8_e4m3:
        case DType::fp8_e5m2: return true;
        case DType::int8:
        case DType::u8:
        case DType::int32:
        case DType::int64: return false;
    }
    return false;
}

bool is_index(DType t) { return t == DType::int32 || t == DType::int64; }

}  // namespace roofline
