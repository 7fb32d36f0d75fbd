#include "reports/trace.hpp"

#include "ops/error.hpp"

namespace roofline {

namespace {

using ojson = nlohmann::ordered_json;

double num(const ojson& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
std::string str(const ojson& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

ojson meta(const char* what, int pid, int tid, const std::string& name) {
    ojson m = {{"name", what}, {"ph", "M"}, {"pid", pid}};
    if (tid >= 0) m["tid"] = tid;
    m["args"] = {{"name", name}};
    return m;
}

ojson event(const std::string& name, const std::string& cat, double start_s, double dur_s, int pid, int tid, ojson args) {
    ojson e;
    e["name"] = name;
    e["cat"] = cat;
    e["ph"] = "X";
    e["ts"] = start_s * 1e6;
    e["dur"] = dur_s * 1e6;
    e["pid"] = pid;
    e["tid"] = tid;
    e["args"] = std::move(args);
    return e;
}

std::string finish(ojson events, ojson other) {
    ojson doc;
    doc["traceEvents"] = std::move(events);
    doc["displayTimeUnit"] = "ns";
    ojson o = {{"generator", "roofline"}};  // the key order of sim/schedule.hpp chrome_trace_json
    for (auto& [k, v] : other.items()) o[k] = v;
    doc["otherData"] = std::move(o);
    return doc.dump() + "\n";
}

const ojson& array_of(const ojson& doc, const char* key, const std::string& schema) {
    if (!doc.contains(key) || !doc[key].is_array()) throw InputError("trace: the " + schema + " document has no \"" + key + "\" array");
    return doc[key];
}

std::string report_trace(const ojson& doc) {
    const ojson& ops = array_of(doc, "ops", "roofline-report/1");
    const ojson totals = doc.value("totals", ojson::object());
    const int streams = static_cast<int>(num(totals, "streams") > 0 ? num(totals, "streams") : 1);
    ojson events = ojson::array();
    for (int st = 0; st < streams; ++st) events.push_back(meta("thread_name", 1, st, "stream " + std::to_string(st)));
    for (const ojson& op : ops) {
        if (!op.contains("schedule"))
            throw InputError("trace: the report has no ops[].schedule (written by an older roofline): run analyze again");
        const ojson& s = op["schedule"];
        const double a = num(s, "start_s"), b = num(s, "end_s");
        if (b <= a) continue;
        events.push_back(event(str(op, "name"), str(op, "phase") + "," + str(op, "family"), a, b - a, 1, static_cast<int>(num(s, "stream")),
                               {{"op", str(op, "op")}, {"phase", str(op, "phase")}}));
    }
    return finish(std::move(events), {{"step_time_s", num(totals, "step_time_s")}, {"critical_path_s", num(totals, "critical_path_s")}});
}

std::string comparison_trace(const ojson& doc) {
    const ojson& ks = array_of(doc, "kernels", "roofline-comparison/1");
    ojson events = ojson::array();
    events.push_back(meta("process_name", 1, -1, "predicted"));
    events.push_back(meta("process_name", 2, -1, "measured"));
    double tp = 0, tm = 0;
    for (const ojson& k : ks) {
        const ojson args = {{"op", str(k, "op")}, {"time_error_pct", num(k, "time_error_pct")}, {"wrong_term", str(k, "wrong_term")}};
        events.push_back(event(str(k, "name"), str(k, "phase"), tp, num(k, "predicted_s"), 1, 0, args));
        events.push_back(event(str(k, "name"), str(k, "phase"), tm, num(k, "measured_s"), 2, 0, args));
        tp += num(k, "predicted_s"), tm += num(k, "measured_s");
    }
    return finish(std::move(events),
                  {{"predicted_kernel_sum_s", tp}, {"measured_kernel_sum_s", tm}, {"layout", "kernels end to end in execution order"}});
}

std::string measurement_trace(const ojson& doc) {
    const ojson& nodes = array_of(doc, "nodes", "roofline-measurement/1");
    ojson events = ojson::array();
    events.push_back(meta("thread_name", 1, 0, "kernels (medians, end to end)"));
    double t = 0;
    for (const ojson& n : nodes) {
        const ojson ks = n.value("kernels", ojson::array());
        for (const ojson& k : ks) {
            const double d = num(k, "median_s");
            events.push_back(event(str(k, "name"), str(n, "phase") + "," + str(n, "op"), t, d, 1, 0,
                                   {{"node", str(n, "name")}, {"p10_s", num(k, "p10_s")}, {"p90_s", num(k, "p90_s")}}));
            t += d;
        }
    }
    const ojson step = doc.value("step", ojson::object());
    return finish(std::move(events),
                  {{"kernel_sum_s", t}, {"step_median_s", num(step, "median_s")}, {"layout", "kernels end to end at their median times"}});
}

}  // namespace

std::string trace_report(const ojson& doc) {
    const std::string schema = doc.is_object() ? str(doc, "schema") : "";
    if (schema == "roofline-report/1") return report_trace(doc);
    if (schema == "roofline-comparison/1") return comparison_trace(doc);
    if (schema == "roofline-measurement/1") return measurement_trace(doc);
    throw InputError("trace: no Chrome trace of schema \"" + schema +
                     "\" (roofline-report/1, roofline-comparison/1 and roofline-measurement/1 have one)");
}

}  // namespace roofline
