#include "reports/search_report.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "reports/units.hpp"

namespace roofline {

namespace {

// A configuration's context-parallel form ("-" without context parallelism).
std::string form_of(const SearchCandidate& c) { return c.cp > 1 ? std::string(cp_comm_name(c.cp_comm)) : "-"; }

// The forms searched, in the space's order (every form when none was given).
std::vector<std::string> forms_of(const SearchSpace& s) {
    std::vector<std::string> names;
    for (const CpComm c : s.cp_comm.empty() ? std::vector<CpComm>{CpComm::ring, CpComm::all_gather, CpComm::ulysses} : s.cp_comm)
        names.emplace_back(cp_comm_name(c));
    return names;
}

std::string forms_text(const SearchSpace& s) {
    std::string t;
    for (const std::string& f : forms_of(s)) t += (t.empty() ? "" : ", ") + f;
    return t;
}

nlohmann::ordered_json candidate_json(const SearchCandidate& c) {
    return {{"tp", c.tp},
            {"cp", c.cp},
            {"cp_comm", form_of(c)},
            {"ep", c.ep},
            {"pp", c.pp},
            {"interleave", c.interleave},
            {"sequence_parallel", c.sp},
            {"dp", c.dp},
            {"micro_batch", c.micro_batch},
            {"micro_batches", c.micro_batches},
            {"recompute", c.recompute},
            {"zero", c.zero},
            {"step_time_s", c.step_time_s},
            {"compute_s", c.compute_s},
            {"exposed_comm_s", c.exposed_comm_s},
            {"bubble_fraction", c.bubble_fraction},
            {"mfu", c.mfu},
            {"tokens_per_s", c.tokens_per_s},
            {"peak_bytes_per_rank", c.peak_bytes},
            {"fits", c.fits}};
}

std::string join(const std::vector<int>& v) {
    std::string s;
    for (const int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

}  // namespace

nlohmann::ordered_json search_json(const SearchResult& r, const SearchSettings& s) {
    nlohmann::ordered_json doc;
    doc["schema"] = "roofline-search/1";
    doc["settings"] = {{"model", s.model},
                       {"cluster", s.cluster},
                       {"gpus", s.space.gpus},
                       {"global_batch", s.space.global_batch},
                       {"seq", s.seq},
                       {"micro_batches", s.space.micro_batches},
                       {"recompute", s.space.recompute},
                       {"zero", s.space.zero},
                       {"interleave", s.space.interleave},
                       {"sequence_parallel", s.space.sequence_parallel},
                       {"context_parallel", s.space.context_parallel.empty() ? std::vector<int>{1} : s.space.context_parallel},
                       {"expert_parallel", s.space.expert_parallel.empty() ? std::vector<int>{1} : s.space.expert_parallel},
                       {"memory_budget_bytes", r.budget_bytes},
                       {"cp_comm", forms_of(s.space)},
                       {"bucket_bytes", s.space.bucket_bytes},
                       {"expert_load", s.expert_load.empty() ? "the model's own" : s.expert_load},
                       {"capacity_factor", s.capacity_factor},
                       {"pad_to_capacity", s.pad_to_capacity},
                       {"not_searched", "expert routing (every configuration is built with the one given)"}};
    std::size_t fitting = 0;
    for (const SearchCandidate& c : r.candidates) fitting += c.fits ? 1 : 0;
    doc["summary"] = {{"enumerated", r.enumerated},           {"invalid", r.invalid},
                      {"analysed", r.candidates.size()},      {"fitting", fitting},
                      {"stages_analysed", r.stages_analysed}, {"invalid_examples", r.invalid_reasons}};
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const SearchCandidate& c : r.candidates) all.push_back(candidate_json(c));
    doc["candidates"] = std::move(all);
    doc["frontier"] = r.frontier;
    return doc;
}

std::string search_csv(const SearchResult& r) {
    std::string out =
        "rank,tp,sp,cp,cp_comm,ep,pp,interleave,dp,micro_batch,micro_batches,recompute,zero,step_time_s,compute_s,exposed_comm_s,"
        "bubble_fraction,"
        "mfu,"
        "tokens_"
        "per_s,"
        "peak_bytes_per_rank,fits\n";
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const SearchCandidate& c = r.candidates[i];
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.6g},{:.6g},{:.9g},{},{}\n", i + 1, c.tp,
                           c.sp ? "on" : "off", c.cp, form_of(c), c.ep, c.pp, c.interleave, c.dp, c.micro_batch, c.micro_batches,
                           c.recompute, c.zero, c.step_time_s, c.compute_s, c.exposed_comm_s, c.bubble_fraction, c.mfu, c.tokens_per_s,
                           c.peak_bytes, c.fits ? "yes" : "no");
    }
    return out;
}

std::string render_search(const SearchResult& r, const SearchSettings& s, std::size_t top) {
    std::size_t fitting = 0;
    for (const SearchCandidate& c : r.candidates) fitting += c.fits ? 1 : 0;
    std::string o = fmt::format(
        "{} on {} GPUs of {}, global batch {}: {} configurations (tp x cp {{{}}} x ep {{{}}} x pp x dp x micro-batch {{{}}} x recompute x "
        "ZeRO "
        "{{{}}} x interleave {{{}}}), "
        "{} invalid, {} analysed ({} distinct stages), {} not built (a smaller micro-batch already did not fit), {} fit {} per rank\n",
        s.model, s.space.gpus, s.cluster, s.space.global_batch, r.enumerated,
        join(s.space.context_parallel.empty() ? std::vector<int>{1} : s.space.context_parallel),
        join(s.space.expert_parallel.empty() ? std::vector<int>{1} : s.space.expert_parallel), join(s.space.micro_batches),
        join(s.space.zero), join(s.space.interleave), r.invalid, r.candidates.size(), r.stages_analysed, r.pruned, fitting,
        human_bytes(static_cast<double>(r.budget_bytes)));
    if (!s.expert_load.empty() || s.capacity_factor > 0)
        o += fmt::format("  every configuration's experts routed {}{}{}\n",
                         s.expert_load.empty() ? "as the model routes them" : s.expert_load,
                         s.capacity_factor > 0 ? fmt::format(", capacity factor {}", s.capacity_factor) : "",
                         s.pad_to_capacity ? ", padded to capacity" : "");
    if (std::any_of(s.space.context_parallel.begin(), s.space.context_parallel.end(), [](int c) { return c > 1; }))
        o += fmt::format("  context parallelism exchanges keys and values by each of {} (column cp-comm)\n", forms_text(s.space));
    for (const std::string& why : r.invalid_reasons) o += "  invalid, e.g. " + why + "\n";
    o += "\n";
    o += fmt::format(
        "{:>4} {:>3} {:>3} {:>3} {:<9} {:>3} {:>3} {:>2} {:>4} {:>3} {:>4} {:<9} {:>4} {:>10} {:>6} {:>10} {:>7} {:>8} {:>10} {:>4}\n",
        "rank", "tp", "sp", "cp", "cp-comm", "ep", "pp", "v", "dp", "mb", "m", "recompute", "zero", "step", "MFU", "tokens/s", "bubble",
        "exposed", "peak/rank", "fits");
    const std::set<std::size_t> frontier(r.frontier.begin(), r.frontier.end());
    const std::size_t n = top == 0 ? r.candidates.size() : std::min(top, r.candidates.size());
    for (std::size_t i = 0; i < n; ++i) {
        const SearchCandidate& c = r.candidates[i];
        o += fmt::format(
            "{:>4} {:>3} {:>3} {:>3} {:<9} {:>3} {:>3} {:>2} {:>4} {:>3} {:>4} {:<9} {:>4} {:>10} {:>5.1f}% {:>10.4g} {:>6.1f}% {:>8} "
            "{:>10} {:>4}{}\n",
            i + 1, c.tp, c.sp ? "on" : "off", c.cp, form_of(c), c.ep, c.pp, c.interleave, c.dp, c.micro_batch, c.micro_batches, c.recompute,
            c.zero, human_time(c.step_time_s), 100 * c.mfu, c.tokens_per_s, 100 * c.bubble_fraction, human_time(c.exposed_comm_s),
            human_bytes(static_cast<double>(c.peak_bytes)), c.fits ? "yes" : "no", frontier.count(i) ? "  *" : "");
    }
    if (n < r.candidates.size()) o += fmt::format("... {} more (--top N|all)\n", r.candidates.size() - n);
    o += "* on the (peak memory, step time) Pareto frontier\n";
    return o;
}

}  // namespace roofline
