#pragma once
// `roofline hw show CLUSTER` and the clusters of `roofline hw list` (issue #16): the cluster's
// sourced figures and what collectives cost on it.
#include <nlohmann/json.hpp>
#include <string>

#include "sim/cluster.hpp"

namespace roofline {

std::string render_cluster(const Cluster& c);
std::string render_cluster_list();
nlohmann::ordered_json cluster_json(const Cluster& c);

}  // namespace roofline
