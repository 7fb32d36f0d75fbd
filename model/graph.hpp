#pragma once
// The op graph: nodes are ops, edges are tensors flowing from producer to consumer, stored in a
// Boost.Graph adjacency_list (vertex i is node i). Tensors are named; graph inputs and parameters
// are tensors without a producer. Nodes are appended with their inputs already present, so every
// construction path yields an acyclic graph; verify() re-checks every invariant on demand.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/name_table.hpp"
#include "ops/attrs.hpp"
#include "ops/op_kind.hpp"
#include "ops/tensor.hpp"
#include "ops/work.hpp"

namespace roofline {

using NodeId = std::int32_t;
using TensorId = std::int32_t;
inline constexpr NodeId kNoNode = -1;

enum class TensorRole { input, parameter, activation, optimizer_state };
// Which part of a training step a node belongs to; inference graphs are all forward.
enum class Phase { forward, backward, optimizer };
std::string_view phase_name(Phase p);
std::string_view role_name(TensorRole r);

struct Tensor {
    std::string name;
    TensorDesc desc;
    TensorRole role = TensorRole::activation;
    NodeId producer = kNoNode;  // kNoNode for inputs and parameters
    int output_index = 0;
};

struct Node {
    std::string name;
    OpKind kind{};
    Attrs attrs;
    std::vector<TensorId> inputs;
    std::vector<TensorId> outputs;
    Phase phase = Phase::forward;
    NodeId differentiates = kNoNode;  // for backward nodes: the forward node whose gradient they compute
    NodeId recomputes = kNoNode;      // for recomputed clones (sim/recompute.hpp): the forward node they run again
};

// A graph that is one rank's share of a tensor-parallel model (Megatron-LM's column and row
// splits, Shoeybi et al. 2019): its shapes are already the rank's; after each node named here the
// ranks all-reduce its output (forward), and the same bytes once in backward.
struct TensorParallel {
    int degree = 1;
    std::vector<std::string> all_reduce;  // node names: an all-reduce of the output after each, forward and backward
    // Node names: an all-reduce of the output's gradient in backward only (Megatron's f operator
    // before a column-parallel linear whose block's forward all-reduce is shared with another's:
    // model/doc_builder.hpp TensorParallelSplit::gradient_all_reduce).
    std::vector<std::string> gradient_all_reduce;
    // Sequence parallelism (Korthikanti et al. 2022): an all-gather of the node's output forward
    // (a reduce-scatter of its gradient backward), and a reduce-scatter of the node's input forward
    // (an all-gather backward), of the full [batch, seq, d_model] tensor.
    std::vector<std::string> all_gather, reduce_scatter;
    bool sequence_parallel = false;
    // Cross-entropy over a vocabulary split across the ranks (Megatron's vocab-parallel loss): three
    // all-reduces of one float a token (the maximum logit, the target's logit, the sum of exponents)
    // in forward; node names.
    std::vector<std::string> vocab_parallel_loss;
};

// The model as one rank of a context-parallel group (Megatron-core's context parallelism in its
// all-gather form, as Llama 3 was trained, Dubey et al. 2024 section 3.3.2): each rank holds
// seq / degree tokens of every sequence (two chunks, i and 2 x degree - 1 - i, so that causal
// attention's work is balanced), and attention gathers the keys and values of the whole sequence
// from the group: an all-gather of the named nodes' outputs forward, a reduce-scatter of their
// gradients backward. The gradients of the weights are reduced over the data- and context-parallel
// ranks together.
struct ContextParallel {
    int degree = 1;
    std::vector<std::string> all_gather;  // node names
};

// The model as one rank of an expert-parallel group (GShard, Lepikhin et al. 2020; Megatron-LM's
// MoE): a rank holds experts / degree of each mixture-of-experts layer's experts; the named nodes'
// outputs are all-to-alls among the group (each token copy sent to its expert's rank, the outputs
// sent back), forward and, for their gradients, backward. The group is made of data-parallel
// ranks (degree divides dp).
struct ExpertParallel {
    int degree = 1;
    std::vector<std::string> all_to_all;  // node names
    std::vector<std::string> parameters;  // the experts' weights (their gradients are reduced among the ranks holding them)
    // Non-uniform routing: the graph is the busiest rank's, whose experts run load_factor times the
    // token copies of the mean rank (1: uniform). MFU counts the mean rank's expert work.
    double load_factor = 1;
};

// A graph that is one stage of a pipeline-parallel model (Megatron-LM's equal split of the layers).
struct PipelineStage {
    int stages = 1;
    int stage = 0;   // 0-based
    int layers = 0;  // transformer layers in this stage
    // A probe (ModelOverrides::stage_layers): the stage built with fewer layers than the model gives
    // it; model_layers is the model's whole count (0: not a probe). The layers' node names carry
    // `layer_prefix` and their index as one dotted component ("h7" in "grad.h7.mlp.up.3"); empty
    // when the model does not say.
    int model_layers = 0;
    std::string layer_prefix;
    // The activation this stage receives from the previous one (empty: none, the first stage). Its
    // gradient is computed backward and sent back (Megatron-LM's backward send): a step output.
    std::string input;
    // A tied word embedding split between the first stage (the lookup) and the last (the LM head):
    // the parameter whose copy this stage holds; the two copies' gradients are all-reduced between
    // the two stages every iteration (Megatron-LM's embedding group). Empty: none.
    std::string shared_embedding;
};

// Mixed-precision training policy of a model (dtype_policy in the model file; the command line
// overrides it): fp32 master weights and optimizer state for 16-bit parameters, static loss scale.
struct PrecisionPolicy {
    bool master_weights = true;
    double loss_scale = 0;  // 0: none
};

struct GraphStorage;  // the Boost.Graph adjacency list, kept out of this header (compile time)

class Graph {
public:
    Graph();
    ~Graph();
    Graph(const Graph&);
    Graph& operator=(const Graph&);
    Graph(Graph&&) noexcept;
    Graph& operator=(Graph&&) noexcept;

    std::string name;
    std::string origin;                        // file or template it was loaded from
    std::string description;                   // the document's "description" (a template's summary of what it built)
    std::map<std::string, std::int64_t> dims;  // symbolic dimensions used (batch, seq, ...)
    DType compute_dtype = DType::f32;          // the dtype policy's compute dtype
    PrecisionPolicy precision;                 // the dtype policy's training settings
    TensorParallel tensor_parallel;            // the model as one rank of a tensor-parallel group
    ContextParallel context_parallel;          // ... and of a context-parallel group
    ExpertParallel expert_parallel;            // ... and of an expert-parallel group
    PipelineStage pipeline;                    // the model as one stage of a pipeline

    TensorId add_input(const std::string& name, TensorDesc desc);
    TensorId add_parameter(const std::string& name, TensorDesc desc);
    TensorId add_optimizer_state(const std::string& name, TensorDesc desc);
    // Infers output descriptors with the op's rule; throws InputError naming the node. Empty
    // output_names: the node's name for one output, "<name>:<i>" for several.
    NodeId add_node(const std::string& name, OpKind kind, const std::vector<TensorId>& inputs, Attrs attrs,
                    const std::vector<std::string>& output_names);
    void mark_output(TensorId t, bool first = false);  // first: ahead of the others (a loss)
    void set_phase(NodeId n, Phase p, NodeId differentiates = kNoNode);
    void set_recomputes(NodeId n, NodeId original);
    // Room for this many nodes and tensors (transforms that rebuild a graph of known size).
    void reserve(std::size_t nodes, std::size_t tensors);

    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<Tensor>& tensors() const { return tensors_; }
    const std::vector<TensorId>& outputs() const { return outputs_; }
    const Node& node(NodeId n) const { return nodes_.at(static_cast<std::size_t>(n)); }
    const Tensor& tensor(TensorId t) const { return tensors_.at(static_cast<std::size_t>(t)); }
    TensorId find_tensor(const std::string& name) const;  // -1 when absent
    NodeId find_node(const std::string& name) const;      // kNoNode when absent

    std::vector<TensorDesc> input_descs(NodeId n) const;
    std::vector<TensorDesc> output_descs(NodeId n) const;
    Work work(NodeId n) const;  // the op rule's count for this node

    // Nodes in dependency order: insertion order, which add_node makes topological (a node's
    // inputs exist before it); verify() re-checks it against Boost's topological_sort.
    std::vector<NodeId> topological_order() const;
    // Consumers of each tensor, from the edge list.
    std::vector<NodeId> consumers(TensorId t) const;
    std::size_t edge_count() const;
    bool edges_acyclic() const;  // Boost topological_sort over the edge list

private:
    TensorId add_tensor(Tensor t);
    std::vector<Node> nodes_;
    std::vector<Tensor> tensors_;
    std::vector<TensorId> outputs_;
    // Name lookups over the names the nodes and tensors already hold, so a name is stored once and
    // a table copies as one block (issue #20).
    NameTable tensor_by_name_;
    NameTable node_by_name_;
    std::unique_ptr<GraphStorage> storage_;
};

// The dtype an op computes in: its first floating-point input (or int8 operand), else f32.
DType op_compute_dtype(const Graph& g, NodeId n);

// Checks every invariant: unique names, producers and edges consistent with node inputs and
// outputs, arity and attributes accepted, stored descriptors equal re-inferred ones, acyclic.
// Throws InputError describing the first violation.
void verify(const Graph& g);

}  // namespace roofline
