#pragma once
// The options generate and serve share: the model, the chip or cluster, the dtype and the
// quantization, and tensor parallelism (one definition, so both simulate the same steps).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "model/inference.hpp"
#include "sim/cluster.hpp"
#include "sim/hardware.hpp"

namespace roofline::cli {

struct InferenceArgs {
    std::string model, hw = "h100-sxm", dtype, cluster_name;
    int tp = 1;
    bool cuda_graphs = false;
    Quantization quant;
    CLI::Option* hw_option = nullptr;

    void add_to(CLI::App* cmd);
    // Resolved after parsing: the cluster (with --cluster), the chip, the dtype override.
    std::optional<Cluster> cluster;
    Hardware hardware;
    std::optional<DType> dtype_override;
    void resolve();  // InputError naming the flag
};

}  // namespace roofline::cli
