#pragma once
// --expert-load, --capacity-factor, --pad-to-capacity: one definition for analyze, plan and search.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/validators.hpp"
#include "model/model_json.hpp"

namespace roofline::cli {

// --expert-load, --capacity-factor and --pad-to-capacity (analyze, plan, search): the routing of a
// model's experts (model/moe_routing.hpp), passed to the model as ModelOverrides.
struct RoutingArgs {
    std::string expert_load;     // "" : the model's own
    double capacity_factor = 0;  // 0: the model's own, dropless unless it sets one
    bool pad_to_capacity = false;

    void add_to(CLI::App* cmd) {
        cmd->add_option(
            "--expert-load", expert_load,
            "routing of the experts (a GPT template's, mixtral's, qwen2_moe's) instead of uniform: uniform, zipf:S (expert i gets a share "
            "proportional to 1 / (i + 1)^S) or one share per expert (e.g. 4,2,1,1), or one of those per layer separated by ';' "
            "(e.g. zipf:1.2;uniform;4,2,1,1 for 3 layers); with --ep the busiest rank of every layer is modelled and MFU counts the "
            "mean rank's work");
        cmd->add_option("--capacity-factor", capacity_factor,
                        "expert capacity of the experts (a GPT template's, mixtral's, qwen2_moe's): each takes at most ceil(F x tokens x "
                        "top_k / experts) token "
                        "copies of a sequence, the rest dropped (GShard, Switch Transformer); default dropless")
            ->check(kPositive);
        cmd->add_flag("--pad-to-capacity", pad_to_capacity,
                      "with --capacity-factor: every expert runs its full capacity buffer (zeros where no token came), as GShard, "
                      "Switch and DeepSpeed-MoE dispatch; the all-to-alls carry the whole buffer");
    }
    void apply(ModelOverrides& ov) const {
        ov.expert_load = expert_load;
        if (capacity_factor > 0) ov.capacity_factor = capacity_factor;
        ov.pad_to_capacity = pad_to_capacity;
    }
};

}  // namespace roofline::cli
