#include "model/graph.hpp"

// Boost's adjacency-list edge iterators (a directed graph's copy walks them) trip GCC 12's
// -Wmaybe-uninitialized (a false positive inside boost/graph/detail/adj_list_edge_iterator.hpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <algorithm>
#include <functional>
#include <iterator>
#include <set>
#include <span>
#include <string_view>
#include <unordered_set>

#include "ops/op_rule.hpp"

namespace roofline {

// Vertex i = node i; one edge per (producer, consumer, tensor) use, in the order of the consumer's
// inputs. Directed, without edge properties: an edge is its target in the producer's out-edge
// vector, the tensor it carries read from the consumer's inputs (issue #20: no allocation an edge).
struct GraphStorage {
    using Adjacency = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
    Adjacency adj;
    // add_node's copy of a node's input descriptors for shape inference, kept between nodes so that
    // their shapes' storage is reused rather than allocated a node at a time.
    std::vector<TensorDesc> inputs;
};

std::string_view role_name(TensorRole r) {
    switch (r) {
        case TensorRole::input: return "input";
        case TensorRole::parameter: return "parameter";
        case TensorRole::activation: return "activation";
        case TensorRole::optimizer_state: return "optimizer_state";
    }
    return "?";
}

std::string_view phase_name(Phase p) {
    switch (p) {
        case Phase::forward: return "forward";
        case Phase::backward: return "backward";
        case Phase::optimizer: return "optimizer";
    }
    return "?";
}

Graph::Graph() : storage_(std::make_unique<GraphStorage>()) {}
Graph::~Graph() = default;
Graph::Graph(const Graph& o)
    : name(o.name),
      origin(o.origin),
      description(o.description),
      dims(o.dims),
      compute_dtype(o.compute_dtype),
      precision(o.precision),
      tensor_parallel(o.tensor_parallel),
      context_parallel(o.context_parallel),
      expert_parallel(o.expert_parallel),
      pipeline(o.pipeline),
      nodes_(o.nodes_),
      tensors_(o.tensors_),
      outputs_(o.outputs_),
      tensor_by_name_(o.tensor_by_name_),
      node_by_name_(o.node_by_name_),
      storage_(std::make_unique<GraphStorage>(*o.storage_)) {}
Graph& Graph::operator=(const Graph& o) {
    if (this != &o) *this = Graph(o);
    return *this;
}
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

TensorId Graph::add_tensor(Tensor t) {
    if (find_tensor(t.name) >= 0) throw InputError("tensor name '" + t.name + "' is defined twice");
    (void)t.desc.bytes();  // overflow check
    const auto id = static_cast<TensorId>(tensors_.size());
    tensor_by_name_.insert(t.name, id);
    tensors_.push_back(std::move(t));
    return id;
}

TensorId Graph::add_input(const std::string& n, TensorDesc desc) {
    check_dims(desc.shape);
    return add_tensor(Tensor{n, std::move(desc), TensorRole::input, kNoNode, 0});
}

TensorId Graph::add_parameter(const std::string& n, TensorDesc desc) {
    check_dims(desc.shape);
    return add_tensor(Tensor{n, std::move(desc), TensorRole::parameter, kNoNode, 0});
}

TensorId Graph::add_optimizer_state(const std::string& n, TensorDesc desc) {
    check_dims(desc.shape);
    return add_tensor(Tensor{n, std::move(desc), TensorRole::optimizer_state, kNoNode, 0});
}

void Graph::set_phase(NodeId n, Phase p, NodeId differentiates) {
    Node& node = nodes_.at(static_cast<std::size_t>(n));
    node.phase = p;
    node.differentiates = differentiates;
}

void Graph::reserve(std::size_t nodes, std::size_t tensors) {
    nodes_.reserve(nodes);
    tensors_.reserve(tensors);
    node_by_name_.reserve(nodes);
    tensor_by_name_.reserve(tensors);
}

void Graph::set_recomputes(NodeId n, NodeId original) { nodes_.at(static_cast<std::size_t>(n)).recomputes = original; }

NodeId Graph::add_node(const std::string& n, OpKind kind, const std::vector<TensorId>& inputs, Attrs attrs,
                       const std::vector<std::string>& given_names) {
    if (find_node(n) != kNoNode) throw InputError("node name '" + n + "' is used twice");
    std::vector<TensorDesc>& in = storage_->inputs;
    if (in.size() < inputs.size()) in.resize(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = tensor(inputs[i]).desc;
    std::vector<TensorDesc> out = infer_outputs(kind, std::span<const TensorDesc>(in.data(), inputs.size()), attrs);
    if (!given_names.empty() && out.size() != given_names.size()) {
        throw InputError(std::string(op_name(kind)) + " produces " + std::to_string(out.size()) + " outputs, " +
                         std::to_string(given_names.size()) + " names given");
    }
    const auto id = static_cast<NodeId>(nodes_.size());
    Node node{n, kind, std::move(attrs), inputs, {}};
    node.outputs.reserve(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        // Given names, else the node's name for one output and "<name>:<i>" for several.
        std::string name = !given_names.empty() ? given_names[i] : out.size() == 1 ? n : n + ":" + std::to_string(i);
        node.outputs.push_back(add_tensor(Tensor{std::move(name), std::move(out[i]), TensorRole::activation, id, static_cast<int>(i)}));
    }
    node_by_name_.insert(n, id);
    nodes_.push_back(std::move(node));
    const auto v = boost::add_vertex(storage_->adj);
    for (TensorId t : inputs) {
        if (tensor(t).producer != kNoNode) {
            boost::add_edge(static_cast<std::size_t>(tensor(t).producer), v, storage_->adj);
        }
    }
    return id;
}

void Graph::mark_output(TensorId t, bool first) {
    (void)tensor(t);
    outputs_.insert(first ? outputs_.begin() : outputs_.end(), t);
}

TensorId Graph::find_tensor(const std::string& n) const {
    return tensor_by_name_.find(n, [this](std::int32_t id) -> const std::string& { return tensors_[static_cast<std::size_t>(id)].name; });
}

NodeId Graph::find_node(const std::string& n) const {
    const std::int32_t id =
        node_by_name_.find(n, [this](std::int32_t i) -> const std::string& { return nodes_[static_cast<std::size_t>(i)].name; });
    return id < 0 ? kNoNode : id;
}

std::vector<TensorDesc> Graph::input_descs(NodeId n) const {
    std::vector<TensorDesc> d;
    for (TensorId t : node(n).inputs) d.push_back(tensor(t).desc);
    return d;
}

std::vector<TensorDesc> Graph::output_descs(NodeId n) const {
    std::vector<TensorDesc> d;
    for (TensorId t : node(n).outputs) d.push_back(tensor(t).desc);
    return d;
}

Work Graph::work(NodeId n) const {
    const Node& nd = node(n);
    return count_work(nd.kind, input_descs(n), output_descs(n), nd.attrs);
}

std::vector<NodeId> Graph::topological_order() const {
    std::vector<NodeId> order(nodes_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<NodeId>(i);
    return order;
}

std::vector<NodeId> Graph::consumers(TensorId t) const {
    std::vector<NodeId> result;
    const Tensor& ten = tensor(t);
    if (ten.producer == kNoNode) {
        // inputs and parameters have no vertex: scan the nodes
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            for (TensorId in : nodes_[i].inputs) {
                if (in == t) {
                    result.push_back(static_cast<NodeId>(i));
                    break;
                }
            }
        }
        return result;
    }
    // A consumer's edges are consecutive (added with it); those that carry t are the ones it reads t by.
    for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(ten.producer), storage_->adj); e != end; ++e) {
        const auto c = static_cast<NodeId>(boost::target(*e, storage_->adj));
        const std::vector<TensorId>& ins = nodes_[static_cast<std::size_t>(c)].inputs;
        if ((result.empty() || result.back() != c) && std::find(ins.begin(), ins.end(), t) != ins.end()) result.push_back(c);
    }
    return result;
}

std::size_t Graph::edge_count() const { return boost::num_edges(storage_->adj); }

bool Graph::edges_acyclic() const {
    std::vector<std::size_t> order;
    try {
        boost::topological_sort(storage_->adj, std::back_inserter(order));
    } catch (const boost::not_a_dag&) {
        return false;
    }
    return true;
}

DType op_compute_dtype(const Graph& g, NodeId n) {
    for (TensorId t : g.node(n).inputs) {
        const DType d = g.tensor(t).desc.dtype;
        if (is_floating(d) || d == DType::int8) return d;
    }
    return DType::f32;
}

namespace {

std::string where(const Graph& g, NodeId n) { return "node '" + g.node(n).name + "'"; }

}  // namespace

void verify(const Graph& g) {
    std::unordered_set<std::string_view> node_names;
    node_names.reserve(g.nodes().size());
    std::size_t expected_edges = 0;
    for (std::size_t i = 0; i < g.nodes().size(); ++i) {
        const auto id = static_cast<NodeId>(i);
        const Node& n = g.node(id);
        if (!node_names.insert(n.name).second) throw InputError("node name '" + n.name + "' is used twice");
        for (TensorId t : n.inputs) {
            if (t < 0 || static_cast<std::size_t>(t) >= g.tensors().size()) {
                throw InputError(where(g, id) + ": input refers to a tensor that does not exist");
            }
            const Tensor& ten = g.tensor(t);
            if (ten.producer != kNoNode) {
                ++expected_edges;
                if (ten.producer >= id) {
                    throw InputError(where(g, id) + ": input '" + ten.name +
                                     "' is produced later (the graph has a cycle or is out of order)");
                }
            } else if (ten.role == TensorRole::activation) {
                throw InputError(where(g, id) + ": activation '" + ten.name + "' has no producer");
            }
        }
        for (std::size_t o = 0; o < n.outputs.size(); ++o) {
            const Tensor& ten = g.tensor(n.outputs[o]);
            if (ten.producer != id || ten.output_index != static_cast<int>(o) || ten.role != TensorRole::activation) {
                throw InputError(where(g, id) + ": output '" + ten.name + "' does not name this node as its producer");
            }
        }
        std::vector<TensorDesc> inferred;
        try {
            inferred = infer_outputs(n.kind, g.input_descs(id), n.attrs);
            (void)g.work(id);
        } catch (const InputError& e) {
            rethrow_with_context(e, where(g, id));
        }
        if (inferred != g.output_descs(id)) {
            throw InputError(where(g, id) + ": stored output descriptors differ from the op's shape inference");
        }
    }
    std::unordered_set<std::string_view> tensor_names;
    tensor_names.reserve(g.tensors().size());
    for (const Tensor& t : g.tensors()) {
        if (!tensor_names.insert(t.name).second) throw InputError("tensor name '" + t.name + "' is defined twice");
    }
    if (g.edge_count() != expected_edges) {
        throw InputError("edge list has " + std::to_string(g.edge_count()) + " edges, node inputs imply " + std::to_string(expected_edges));
    }
    if (!g.edges_acyclic()) throw InputError("the graph has a cycle");
}

}  // namespace roofline

#pragma GCC diagnostic pop
