#include "sim/eager_host.hpp"

#include <nlohmann/json.hpp>

#include "model/graph.hpp"
#include "model/json_check.hpp"
#include "model/model_json.hpp"
#include "ops/error.hpp"
#include "sim/analysis.hpp"

namespace roofline {

namespace {

using nlohmann::json;

// A host time in seconds: positive, finite, and between 0.1 us and 10 ms: outside, a unit slip
// (microseconds written as seconds) rather than a machine.
double seconds(const json& doc, const char* key, const std::string& origin) {
    const std::string p = std::string("/") + key;
    const json& v = doc.at(key);
    if (!v.is_number()) json_fail(origin, p, "expected a number of seconds, got " + std::string(v.type_name()));
    const double s = v.get<double>();
    if (!(s >= 1e-7 && s <= 1e-2))
        json_fail(origin, p, "expected seconds between 1e-7 and 1e-2, got " + v.dump() + ": check the unit (seconds, not microseconds)");
    return s;
}

std::string text(const json& doc, const char* key, const std::string& origin) {
    const json& v = doc.at(key);
    if (!v.is_string()) json_fail(origin, std::string("/") + key, "expected a string, got " + std::string(v.type_name()));
    return v.get<std::string>();
}

// The model's dispatcher steps for one call of `kind` that launches one kernel (eager_host_steps):
// counted on a one-node graph, so that a change to the count changes the derivation with it.
int steps_of(OpKind kind) {
    Graph g;
    std::vector<TensorId> in;
    Attrs attrs;
    if (kind == OpKind::conv2d) {
        in = {g.add_input("x", {{1, 4, 8, 8}, DType::f32}), g.add_parameter("w", {{4, 4, 3, 3}, DType::f32})};
        attrs.set("padding", std::vector<std::int64_t>{1, 1});
    } else {
        in = {g.add_input("x", {{1, 1}, DType::f32}), g.add_input("y", {{1, 1}, DType::f32})};
    }
    const NodeId n = g.add_node("probe", kind, in, attrs, {});
    return eager_host_steps(g, n, 1);
}

}  // namespace

EagerHost load_eager_host(const std::string& path) {
    const json doc = read_json_file(path);
    if (!doc.is_object()) json_fail(path, "", "expected a roofline-host/1 object");
    json_only_keys(doc,
                   {"format", "name", "description", "measured", "add_call_s", "conv_call_s", "timed_add_s", "backward_call_s",
                    "conv_backward_call_s"},
                   path, "");
    for (const char* key : {"format", "name", "add_call_s"})
        if (!doc.contains(key)) json_fail(path, std::string("/") + key, "missing (required)");
    if (text(doc, "format", path) != "roofline-host/1")
        json_fail(path, "/format", "expected \"roofline-host/1\", got " + doc.at("format").dump());
    EagerHost h;
    h.origin = path;
    h.name = text(doc, "name", path);
    if (h.name.empty()) json_fail(path, "/name", "must not be empty");
    if (doc.contains("description")) h.description = text(doc, "description", path);
    if (doc.contains("measured") && !doc.at("measured").is_object())
        json_fail(path, "/measured",
                  "expected an object (date, tool, framework, CPU, GPU), got " + std::string(doc.at("measured").type_name()));
    h.add_call_s = seconds(doc, "add_call_s", path);
    if (doc.contains("conv_call_s")) {
        h.conv_call_s = seconds(doc, "conv_call_s", path);
        if (*h.conv_call_s < h.add_call_s)
            json_fail(path, "/conv_call_s", "is less than /add_call_s: a convolution's dispatch includes an add's steps and more");
    }
    if (doc.contains("timed_add_s")) {
        h.timed_add_s = seconds(doc, "timed_add_s", path);
        if (*h.timed_add_s < h.add_call_s)
            json_fail(path, "/timed_add_s", "is less than /add_call_s: a timed call includes the call's dispatch");
    }
    if (doc.contains("backward_call_s")) {
        h.backward_call_s = seconds(doc, "backward_call_s", path);
        if (*h.backward_call_s < h.add_call_s)
            json_fail(path, "/backward_call_s", "is less than /add_call_s: a backward call includes one op's dispatch");
    }
    if (doc.contains("conv_backward_call_s")) {
        h.conv_backward_call_s = seconds(doc, "conv_backward_call_s", path);
        if (*h.conv_backward_call_s < h.add_call_s)
            json_fail(path, "/conv_backward_call_s", "is less than /add_call_s: a backward call includes one op's dispatch");
        if (h.backward_call_s && *h.conv_backward_call_s < *h.backward_call_s)
            json_fail(path, "/conv_backward_call_s",
                      "is less than /backward_call_s: a convolution's backward call runs what the multiply's does and two cuDNN calls");
    }
    return h;
}

void apply_eager_host(const EagerHost& host, AnalysisOptions& opt) {
    const int add_steps = steps_of(OpKind::add);
    opt.eager_op_host_s = host.add_call_s / add_steps;
    // The probe's nn.Conv2d has a bias: ATen's cuDNN path runs cudnn_convolution, then
    // output.add_(reshape_bias(...)) (aten/src/ATen/native/Convolution.cpp, ConvBackend::Cudnn):
    // the add_, the reshape view and the add's launch, an add's three steps (add_call_s).
    const double conv_steps_s = steps_of(OpKind::conv2d) * opt.eager_op_host_s;
    if (host.conv_call_s) opt.eager_cudnn_host_s = std::max(0.0, *host.conv_call_s - conv_steps_s - host.add_call_s);
    if (host.timed_add_s) opt.eager_timing_host_s = *host.timed_add_s - host.add_call_s;
    if (host.backward_call_s) opt.eager_backward_call_host_s = *host.backward_call_s - host.add_call_s;
    // The probe's convolution backward call runs what backward_call_s's does (the engine's start
    // and one gradient op: here the bias gradient, a sum over batch and pixels, as many steps as
    // the multiply's gradient) plus cuDNN's data- and weight-gradient calls, each with a
    // convolution's dispatcher steps and cuDNN's own host work.
    if (host.conv_backward_call_s && host.backward_call_s)
        opt.eager_cudnn_backward_host_s = std::max(0.0, (*host.conv_backward_call_s - *host.backward_call_s) / 2.0 - conv_steps_s);
}

}  // namespace roofline
