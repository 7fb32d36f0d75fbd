#pragma once
// --cluster, --dp, --zero, --bucket-mb (issue #16): the step run data parallel on a cluster.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "cli/routing_args.hpp"
#include "cli/validators.hpp"
#include "ops/error.hpp"
#include "sim/cluster.hpp"
#include "sim/parallel.hpp"

namespace roofline::cli {

// --cp-comm (analyze, plan; search takes a list): how context-parallel ranks exchange keys and values
// (sim/parallel.hpp CpComm): its help and values (`a2a` is Ulysses' alias, Megatron-LM's name for it).
inline const char* const kCpCommHelp =
    "ring (ring attention: key/value blocks passed around the ranks in cp - 1 send/recv steps, each overlapped with the attention "
    "of the block in hand; a rank keeps only its own block; Megatron-LM's default), allgather (the keys and values all-gathered "
    "before attention, their gradients reduce-scattered after it, not overlapped) or ulysses, alias a2a (DeepSpeed-Ulysses, "
    "Megatron-LM's a2a: all-to-alls turn the sequence-sharded queries, keys and values into head-sharded ones of the whole sequence "
    "and the output back, not overlapped; the heads a multiple of tp x cp)";
inline const std::vector<std::string> kCpCommValues{"ring", "allgather", "ulysses", "a2a"};
inline CpComm parse_cp_comm(const std::string& value) {
    if (value == "allgather") return CpComm::all_gather;
    if (value == "ulysses" || value == "a2a") return CpComm::ulysses;
    return CpComm::ring;
}

// --cp-comm with one value (analyze, plan).
inline CLI::Option* add_cp_comm_option(CLI::App* cmd, std::string& value) {
    return cmd->add_option("--cp-comm", value, std::string("with --cp: ") + kCpCommHelp)
        ->check(CLI::IsMember(kCpCommValues))
        ->capture_default_str();
}

struct ParallelArgs {
    std::string cluster;
    int dp = 1;
    int tp = 1;
    int cp = 1;
    std::string cp_comm = "ring";
    int ep = 1;
    RoutingArgs routing;  // --expert-load, --capacity-factor, --pad-to-capacity
    int pp = 1;
    int zero = 0;
    int interleave = 1;
    bool sp = false;
    double bucket_mb = 25;
    std::string grad_buffer = "persistent";
    std::string overlap_grad_reduce = "on";
    std::int64_t global_batch = 0;
    CLI::Option* hw_option = nullptr;       // --hw, to tell an explicit chip from the default
    CLI::Option* cp_comm_option = nullptr;  // --cp-comm, refused without --cp > 1
    std::optional<Cluster> loaded;

    void add_to(CLI::App* cmd, CLI::Option* hw) {
        hw_option = hw;
        cmd->add_option("--cluster", cluster,
                        "run on this cluster (a built-in name, see `roofline hw list`, or a roofline-cluster/1 file): its chip is the "
                        "hardware, its fabric and network carry the collectives");
        cmd->add_option("--dp", dp, "data-parallel ranks (needs --cluster): gradients reduced in buckets overlapped with backward")
            ->check(kPositive)
            ->capture_default_str();
        cmd->add_option(
               "--tp", tp,
               "tensor-parallel ranks (needs --cluster; GPT templates, the Hugging Face llama family, gpt2, opt, falcon, phi): Megatron's "
               "column/row splits, an all-reduce after "
               "each attention and MLP block, forward and backward, inside a node")
            ->check(kPositive)
            ->capture_default_str();
        cmd->add_option("--cp", cp,
                        "context-parallel ranks (needs --cluster; GPT templates, the Hugging Face llama family, gpt2, opt, falcon, phi, "
                        "bert, roberta): each holds 1/cp of every sequence, attention reads the keys and values of the whole sequence "
                        "(--cp-comm); gradients reduced over dp x cp ranks")
            ->check(kPositive)
            ->capture_default_str();
        cp_comm_option = add_cp_comm_option(cmd, cp_comm);
        cmd->add_option("--ep", ep,
                        "expert-parallel ranks (needs --cluster and --dp a multiple; GPT templates with \"experts\", mixtral, qwen2_moe): "
                        "each holds "
                        "experts / ep of every MoE layer, tokens sent to their experts' ranks and back by all-to-alls")
            ->check(kPositive)
            ->capture_default_str();
        routing.add_to(cmd);
        cmd->add_option("--pp", pp,
                        "pipeline stages (needs --cluster; GPT templates, the Hugging Face llama family, gpt2, opt, falcon, phi): an equal "
                        "share of the "
                        "layers a stage, 1F1B over the "
                        "micro-batches of --global-batch")
            ->check(kPositive)
            ->capture_default_str();
        cmd->add_flag(
            "--sp", sp,
            "sequence parallelism with --tp (GPT templates, the Hugging Face llama family, gpt2, opt, falcon, phi): layernorm, dropout and "
            "residual activations sharded by "
            "sequence, each all-reduce replaced by an all-gather and a reduce-scatter");
        cmd->add_option("--interleave", interleave,
                        "virtual stages per device with --pp (interleaved 1F1B): the bubble shrinks by V, the sends grow by V")
            ->check(kPositive)
            ->capture_default_str();
        cmd->add_option("--zero", zero, "ZeRO stage with --dp: 1 shards optimizer state, 2 also gradients, 3 also parameters")
            ->check(CLI::Range(0, 3))
            ->capture_default_str();
        cmd->add_option("--global-batch", global_batch,
                        "samples per iteration over all data-parallel ranks: each rank accumulates gradients over global / (batch x "
                        "dp) micro-batches (--batch is the micro-batch) before one reduction and one optimizer step")
            ->check(kPositive);
        cmd->add_option("--bucket-mb", bucket_mb, "gradient bucket size in MiB (PyTorch DDP's default)")
            ->check(kPositive)
            ->capture_default_str();
        cmd->add_option("--grad-buffer", grad_buffer,
                        "with --cluster: persistent (Megatron-LM's main_grad buffer, every gradient held through the step) or "
                        "transient (PyTorch's zero_grad(set_to_none=True): a gradient exists from backward to the update)")
            ->check(CLI::IsMember({"persistent", "transient"}))
            ->capture_default_str();
        cmd->add_option("--overlap-grad-reduce", overlap_grad_reduce,
                        "with --dp: on (gradient buckets reduced beside backward, as PyTorch DDP and Megatron-LM's "
                        "--overlap-grad-reduce do) or off (every reduction after the last backward)")
            ->check(CLI::IsMember({"on", "off"}))
            ->capture_default_str();
    }
    bool wanted() const {
        return !cluster.empty() || dp > 1 || tp > 1 || cp > 1 || ep > 1 || pp > 1 || zero > 0 || global_batch > 0 || interleave > 1 || sp;
    }
    // The cluster, checked against --hw; InputError naming the flag when the flags disagree.
    const Cluster* resolve(const std::string& hw) {
        if (cp_comm_option != nullptr && cp_comm_option->count() > 0 && cp <= 1)
            throw InputError("--cp-comm " + cp_comm + ": needs --cp > 1 (how context-parallel ranks exchange keys and values)");
        if (!wanted()) return nullptr;
        if (cluster.empty())
            throw InputError(dp > 1           ? "--dp " + std::to_string(dp) + ": name the cluster the ranks run on with --cluster"
                             : tp > 1         ? "--tp " + std::to_string(tp) + ": name the cluster the ranks run on with --cluster"
                             : cp > 1         ? "--cp " + std::to_string(cp) + ": name the cluster the ranks run on with --cluster"
                             : ep > 1         ? "--ep " + std::to_string(ep) + ": name the cluster the ranks run on with --cluster"
                             : pp > 1         ? "--pp " + std::to_string(pp) + ": name the cluster the stages run on with --cluster"
                             : zero > 0       ? "--zero: needs --cluster and --dp"
                             : interleave > 1 ? "--interleave: needs --cluster and --pp"
                             : sp             ? "--sp: needs --cluster and --tp"
                                              : "--global-batch: needs --cluster");
        loaded = resolve_cluster(cluster);
        if (hw_option != nullptr && hw_option->count() > 0 && hw != loaded->chip)
            throw InputError("--hw " + hw + " and --cluster " + loaded->name + " disagree: the cluster's GPUs are " + loaded->chip +
                             " (leave --hw out)");
        return &*loaded;
    }
    ParallelOptions options() const {
        ParallelOptions o;
        o.dp = dp;
        o.zero = zero;
        o.bucket_bytes = bucket_mb * 1024 * 1024;
        o.global_batch = global_batch;
        o.interleave = interleave;
        o.persistent_gradients = grad_buffer == "persistent";
        o.overlap_grad_reduce = overlap_grad_reduce == "on";
        o.cp_comm = parse_cp_comm(cp_comm);
        return o;
    }
};

}  // namespace roofline::cli
