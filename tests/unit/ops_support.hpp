#pragma once
// Helpers shared by the op-rule tests (ops_test.cpp, ops_counts_test.cpp).
#include <initializer_list>
#include <utility>
#include <vector>

#include "ops/op_rule.hpp"

namespace test {

// An op's outputs and work, from shape inference then work counting, as a graph does.
struct Ran {
    std::vector<roofline::TensorDesc> out;
    roofline::Work work;
};

inline Ran run_op(roofline::OpKind k, const std::vector<roofline::TensorDesc>& in, const roofline::Attrs& a = roofline::Attrs{}) {
    Ran r;
    r.out = roofline::infer_outputs(k, in, a);
    r.work = roofline::count_work(k, in, r.out, a);
    return r;
}

// Attributes from {name, value} pairs.
inline roofline::Attrs A(std::initializer_list<std::pair<const char*, roofline::AttrValue>> kv) {
    roofline::Attrs a;
    for (const auto& [name, value] : kv) a.set(name, value);
    return a;
}

}  // namespace test
