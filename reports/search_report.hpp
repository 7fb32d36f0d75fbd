#pragma once
// The `roofline search` report: JSON (roofline-search/1), CSV and the terminal table.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/search.hpp"

namespace roofline {

struct SearchSettings {
    std::string model, cluster;
    std::int64_t seq = 0;  // 0: the model's own
    // The routing of the model's experts every configuration is built with (--expert-load,
    // --capacity-factor, --pad-to-capacity): not searched; "" / 0 / false: the model's own.
    std::string expert_load;
    double capacity_factor = 0;
    bool pad_to_capacity = false;
    SearchSpace space;
};

nlohmann::ordered_json search_json(const SearchResult& r, const SearchSettings& s);
std::string search_csv(const SearchResult& r);
std::string render_search(const SearchResult& r, const SearchSettings& s, std::size_t top);

}  // namespace roofline
