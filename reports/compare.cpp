#include "reports/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "model/json_check.hpp"
#include "ops/error.hpp"
#include "reports/units.hpp"

namespace roofline {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const json& need(const json& obj, const std::string& key, const std::string& origin, const std::string& path) {
    if (!obj.is_object() || !obj.contains(key)) json_fail(origin, path, "missing '" + key + "'");
    return obj.at(key);
}

double num(const json& obj, const std::string& key, const std::string& origin, const std::string& path) {
    const json& v = need(obj, key, origin, path);
    if (!v.is_number()) json_fail(origin, path + "/" + key, "expected a number");
    return v.get<double>();
}

double num_or(const json& obj, const std::string& key, double fallback) {
    return obj.is_object() && obj.contains(key) && obj.at(key).is_number() ? obj.at(key).get<double>() : fallback;
}

void check_schema(const json& doc, const std::string& want, const std::string& origin) {
    if (!doc.is_object()) json_fail(origin, "", "expected a JSON object");
    const json& s = need(doc, "schema", origin, "");
    if (!s.is_string() || s.get<std::string>() != want) {
        json_fail(origin, "/schema", "expected \"" + want + "\", got " + s.dump());
    }
}

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Signed error in percent of the measurement.
double error_pct(double predicted, double measured) { return measured > 0 ? (predicted - measured) / measured * 100.0 : 0.0; }

// The predicted traffic of one memory level (the L1 model's when present, else the roofline's).
// The predicted bytes at one memory level of an analyze report's op: `level` by name, or the
// device memory (the first level listed, whatever the spec calls it: hbm, gddr or dram) when empty.
double predicted_level_bytes(const json& op, const std::string& level) {
    for (const json* list : {op.contains("model") ? &op["model"] : nullptr, &op}) {
        if (list == nullptr) continue;
        const char* key = list == &op ? "levels" : "traffic";
        if (!list->contains(key) || !(*list)[key].is_array()) continue;
        for (const json& t : (*list)[key])
            if (level.empty() || t.value("level", "") == level) return t.value("bytes", 0.0);
    }
    return -1;
}

struct Verdict {
    std::string term;    // what the model got most wrong
    std::string detail;  // numbers behind it
};

// The term the model got wrong, from the largest relative discrepancy that the counters show
// (bytes per level, FLOPs) or, failing that, from the bound the model predicted.
Verdict diagnose(const ordered_json& row) {
    const double err = row["time_error_pct"].get<double>();
    const std::string bound = row["predicted_bound"].get<std::string>();
    auto ratio = [&](const char* p, const char* m) -> double {
        if (!row.contains(p) || !row.contains(m)) return 0;
        const double pv = row[p].get<double>(), mv = row[m].get<double>();
        if (pv <= 0 || mv <= 0) return 0;
        return std::fabs(std::log(pv / mv));
    };
    const double hbm = ratio("predicted_hbm_bytes", "measured_dram_bytes");
    const double l2 = ratio("predicted_l2_bytes", "measured_l2_bytes");
    const double fl = ratio("predicted_flops", "measured_flops");
    const double worst = std::max({hbm, l2, fl});
    if (worst > std::log(1.3)) {  // a traffic or FLOP count more than 30% off explains the time
        if (worst == hbm)
            return {"hbm bytes", fmt::format("predicted {} vs measured {}", human_bytes(row["predicted_hbm_bytes"].get<double>()),
                                             human_bytes(row["measured_dram_bytes"].get<double>()))};
        if (worst == l2)
            return {"l2 bytes", fmt::format("predicted {} vs measured {}", human_bytes(row["predicted_l2_bytes"].get<double>()),
                                            human_bytes(row["measured_l2_bytes"].get<double>()))};
        return {"flops", fmt::format("predicted {:.3g} vs measured {:.3g}", row["predicted_flops"].get<double>(),
                                     row["measured_flops"].get<double>())};
    }
    if (bound == "launch")
        return {"launch floor",
                err > 0 ? "the kernel ran faster than the modelled launch floor" : "the kernel took longer than the launch floor"};
    if (bound.rfind("memory", 0) == 0 || bound == "memory")
        return {"achieved bandwidth",
                err > 0 ? "the model assumes less bandwidth than was reached" : "the model assumes more bandwidth than was reached"};
    return {"achieved FLOP/s",
            err > 0 ? "the model assumes a lower rate than was reached" : "the model assumes a higher rate than was reached"};
}

}  // namespace

ordered_json compare_documents(const json& predicted, const std::string& po, const json& measured, const std::string& mo,
                               const CompareOptions& opt) {
    check_schema(predicted, "roofline-report/1", po);
    check_schema(measured, "roofline-measurement/1", mo);
    const json& pmodel = need(predicted, "model", po, "");
    const json& mmodel = need(measured, "model", mo, "");
    const std::string pname = pmodel.value("name", ""), mname = mmodel.value("name", "");
    if (pname != mname)
        throw InputError(po + " describes model '" + pname + "', " + mo + " model '" + mname + "': compare needs the same graph");
    const std::string pmode = predicted.contains("settings") ? predicted["settings"].value("mode", "") : "";
    const std::string mmode = mmodel.value("mode", "");
    if (pmode != mmode)
        throw InputError(po + " is a " + pmode + " analysis, " + mo + " a " + mmode + " measurement: compare needs the same mode");
    if (pmodel.contains("dims") && mmodel.contains("dims") && pmodel["dims"] != mmodel["dims"]) {
        throw InputError(po + " has dims " + pmodel["dims"].dump() + ", " + mo + " " + mmodel["dims"].dump() +
                         ": compare needs the same shapes");
    }

    std::map<std::string, const json*> ops;
    const json& pops = need(predicted, "ops", po, "");
    if (!pops.is_array()) json_fail(po, "/ops", "expected an array");
    for (const json& op : pops) ops[op.value("name", "")] = &op;

    // FLOPs per count of the sm__ops_path_tensor_* metrics. Measured on an H100 SXM (GH100) on
    // 2026-11-23: cuBLASLt's 4096^3 bf16 GEMM counted 137,438,953,472 = 2 x 4096^3 tensor ops, so
    // one op is one FLOP (a multiply-add counts twice). A measurement may record its own factor.
    const double tensor_flops_per_op = num_or(measured.value("counters", json::object()), "tensor_flops_per_op", 1.0);

    ordered_json rows = ordered_json::array();
    std::vector<double> abs_err, signed_err;
    double pred_sum = 0, meas_sum = 0, pred_lb_sum = 0;
    const json& mnodes = need(measured, "nodes", mo, "");
    if (!mnodes.is_array()) json_fail(mo, "/nodes", "expected an array");
    std::size_t unmatched = 0;
    for (std::size_t i = 0; i < mnodes.size(); ++i) {
        const json& n = mnodes[i];
        const std::string path = "/nodes/" + std::to_string(i);
        const std::string name = need(n, "name", mo, path).get<std::string>();
        const auto it = ops.find(name);
        if (it == ops.end()) {
            ++unmatched;
            continue;
        }
        const json& op = *it->second;
        const double measured_s = num(n, "median_s", mo, path);
        if (n.value("kernels", json::array()).empty()) continue;  // views: no kernel ran
        const double lower = num(op, "time_s", po, "/ops/" + name);
        const bool has_model = op.contains("model");
        const double pred = has_model ? num(op["model"], "time_s", po, "/ops/" + name + "/model") : lower;
        ordered_json row;
        row["name"] = name;
        row["op"] = n.value("op", "");
        row["phase"] = n.value("phase", "");
        row["kernels"] = n["kernels"].size();
        row["measured_s"] = measured_s;
        row["measured_p10_s"] = num_or(n, "p10_s", measured_s);
        row["measured_p90_s"] = num_or(n, "p90_s", measured_s);
        row["predicted_s"] = pred;
        row["lower_bound_s"] = lower;
        row["predicted_bound"] = has_model ? op["model"].value("bound", "") : op.value("bound", "");
        row["time_error_pct"] = error_pct(pred, measured_s);
        row["measured_efficiency"] = measured_s > 0 ? lower / measured_s : 0.0;  // roofline bound / measured
        const json& work = op.contains("work") ? op["work"] : json::object();
        const double flops = num_or(work, "flops", 0);
        row["predicted_flops"] = flops;
        const double hbm = predicted_level_bytes(op, ""), l2 = predicted_level_bytes(op, "l2");
        if (hbm >= 0) row["predicted_hbm_bytes"] = hbm;
        if (l2 >= 0) row["predicted_l2_bytes"] = l2;
        if (hbm > 0) row["predicted_intensity"] = flops / hbm;
        // Counters, summed over the node's kernels.
        double dram = 0, l2m = 0, mflops = 0;
        bool counters = false;
        for (const json& k : n["kernels"]) {
            if (!k.contains("derived")) continue;
            counters = true;
            const json& d = k["derived"];
            dram += num_or(d, "dram_read_bytes", 0) + num_or(d, "dram_write_bytes", 0);
            l2m += num_or(d, "l2_bytes", 0);
            mflops += num_or(d, "fp32_flops", 0) + num_or(d, "fp16_flops", 0) + num_or(d, "fp64_flops", 0) +
                      tensor_flops_per_op * num_or(d, "tensor_ops", 0);
        }
        if (counters) {
            row["measured_dram_bytes"] = dram;
            row["measured_l2_bytes"] = l2m;
            row["measured_flops"] = mflops;
            if (dram > 0) row["measured_intensity"] = mflops / dram;
            if (hbm > 0) row["hbm_bytes_error_pct"] = error_pct(hbm, dram);
            if (flops > 0 && mflops > 0) row["flops_error_pct"] = error_pct(flops, mflops);
        }
        const Verdict v = diagnose(row);
        row["wrong_term"] = v.term;
        row["wrong_term_detail"] = v.detail;
        pred_sum += pred;
        meas_sum += measured_s;
        pred_lb_sum += lower;
        if (measured_s >= opt.min_measured_s && measured_s > 0) {
            abs_err.push_back(std::fabs(row["time_error_pct"].get<double>()));
            signed_err.push_back(row["time_error_pct"].get<double>());
        }
        rows.push_back(std::move(row));
    }
    if (rows.empty()) throw InputError(mo + ": no measured node matches a node of " + po + " by name");

    std::vector<std::size_t> idx(rows.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    // Worst offenders: by absolute time discrepancy (seconds), which is what a planner pays for.
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        const double da = std::fabs(rows[a]["predicted_s"].get<double>() - rows[a]["measured_s"].get<double>());
        const double db = std::fabs(rows[b]["predicted_s"].get<double>() - rows[b]["measured_s"].get<double>());
        return da > db;
    });
    ordered_json worst = ordered_json::array();
    for (std::size_t i = 0; i < std::min(opt.worst, idx.size()); ++i) worst.push_back(rows[idx[i]]["name"]);

    std::map<std::string, std::pair<int, double>> by_term;
    for (const auto& r : rows) {
        auto& t = by_term[r["wrong_term"].get<std::string>()];
        ++t.first;
        t.second += std::fabs(r["predicted_s"].get<double>() - r["measured_s"].get<double>());
    }
    ordered_json terms = ordered_json::object();
    for (const auto& [term, v] : by_term) terms[term] = {{"kernels", v.first}, {"abs_error_s", v.second}};

    const json& mstep = need(measured, "step", mo, "");
    const double measured_step = num(mstep, "median_s", mo, "/step");
    const json& totals = need(predicted, "totals", po, "");
    const double predicted_step = num_or(totals, "step_time_s", pred_sum);

    ordered_json out;
    out["schema"] = "roofline-comparison/1";
    out["predicted"] = {{"file", po}, {"hardware", predicted.contains("hardware") ? predicted["hardware"].value("name", "") : ""}};
    out["measured"] = {{"file", mo},
                       {"device", measured.value("device", json::object()).value("name", "")},
                       {"date_utc", measured.value("date_utc", "")},
                       {"counters", measured.value("counters", json::object()).value("collected", false)}};
    out["model"] = {{"name", pname}, {"mode", pmode}};
    // The prediction's hardware spec: the HTML view draws its ceilings under the kernels.
    if (predicted.contains("hardware") && predicted["hardware"].is_object()) out["hardware"] = ordered_json(predicted["hardware"]);
    out["summary"] = {
        {"kernels", rows.size()},
        {"kernels_in_statistics", abs_err.size()},
        {"unmatched_nodes", unmatched},
        {"mape_pct", abs_err.empty() ? 0.0 : [&] { double s = 0; for (double e : abs_err) s += e; return s / static_cast<double>(abs_err.size()); }()},
        {"median_abs_error_pct", percentile(abs_err, 0.5)},
        {"p90_abs_error_pct", percentile(abs_err, 0.9)},
        {"median_signed_error_pct", percentile(signed_err, 0.5)},
        {"predicted_kernel_sum_s", pred_sum},
        {"measured_kernel_sum_s", meas_sum},
        {"kernel_sum_error_pct", error_pct(pred_sum, meas_sum)},
        {"lower_bound_sum_s", pred_lb_sum},
        {"predicted_step_s", predicted_step},
        {"measured_step_s", measured_step},
        {"step_error_pct", error_pct(predicted_step, measured_step)},
        {"by_wrong_term", terms},
        {"worst", worst}};
    out["kernels"] = std::move(rows);
    return out;
}

std::string render_comparison(const ordered_json& cmp, std::size_t top) {
    const auto& s = cmp["summary"];
    std::string o = fmt::format("{} ({}): predicted on {} vs measured on {} ({})\n", cmp["model"]["name"].get<std::string>(),
                                cmp["model"]["mode"].get<std::string>(), cmp["predicted"]["hardware"].get<std::string>(),
                                cmp["measured"]["device"].get<std::string>(), cmp["measured"]["date_utc"].get<std::string>());
    o += fmt::format("kernels {}  per-kernel time error: median {:.1f}%  p90 {:.1f}%  MAPE {:.1f}%  (median signed {:+.1f}%)\n",
                     s["kernels"].get<std::size_t>(), s["median_abs_error_pct"].get<double>(), s["p90_abs_error_pct"].get<double>(),
                     s["mape_pct"].get<double>(), s["median_signed_error_pct"].get<double>());
    o += fmt::format("step: predicted {}  measured {}  error {:+.1f}%   kernel sum: predicted {}  measured {}  error {:+.1f}%\n",
                     human_time(s["predicted_step_s"].get<double>()), human_time(s["measured_step_s"].get<double>()),
                     s["step_error_pct"].get<double>(), human_time(s["predicted_kernel_sum_s"].get<double>()),
                     human_time(s["measured_kernel_sum_s"].get<double>()), s["kernel_sum_error_pct"].get<double>());
    o += fmt::format("\n{:<28} {:<14} {:>10} {:>10} {:>8}  {}\n", "worst offenders", "op", "predicted", "measured", "error", "wrong term");
    std::map<std::string, const ordered_json*> by_name;
    for (const auto& r : cmp["kernels"]) by_name[r["name"].get<std::string>()] = &r;
    std::size_t shown = 0;
    for (const auto& w : s["worst"]) {
        if (top > 0 && shown++ >= top) break;
        const ordered_json& r = *by_name.at(w.get<std::string>());
        std::string name = r["name"].get<std::string>();
        if (name.size() > 28) name = name.substr(0, 25) + "...";
        o += fmt::format("{:<28} {:<14} {:>10} {:>10} {:>+7.0f}%  {}{}\n", name, r["op"].get<std::string>(),
                         human_time(r["predicted_s"].get<double>()), human_time(r["measured_s"].get<double>()),
                         r["time_error_pct"].get<double>(), r["wrong_term"].get<std::string>(),
                         r["wrong_term_detail"].get<std::string>().empty() ? "" : ": " + r["wrong_term_detail"].get<std::string>());
    }
    return o;
}

}  // namespace roofline
