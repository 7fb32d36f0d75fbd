#pragma once
// Reverse-mode autodiff: turns a forward graph whose first output is a scalar loss into one
// training-step graph — forward, backward (each op's gradient rule from ops/gradients.cpp, with
// gradient accumulation where a tensor fans out) and the optimizer update — every node tagged with
// its phase and, for backward nodes, the forward node it differentiates. Optimizer::none stops
// after the backward pass (what loss.backward() alone runs): no update nodes, and each parameter's
// gradient becomes a graph output (PyTorch keeps it in .grad), so it is neither dead nor freed early.
#include <string>

#include "model/graph.hpp"

namespace roofline {

enum class Optimizer { sgd, adam, adamw, none };
std::string_view optimizer_name(Optimizer o);

struct TrainingOptions {
    Optimizer optimizer = Optimizer::adamw;
    double lr = 1e-4;
    double momentum = 0.9;       // sgd
    double weight_decay = 0.01;  // adamw: decoupled; adam and sgd: L2 in the gradient
    double loss_scale = 0;       // 0: none; otherwise the loss gradient is seeded with this value
                                 // and the optimizer unscales (static loss scaling, fp16 training)
    bool master_weights = true;  // 16-bit parameters get fp32 master copies and fp32 state
};

Graph build_training_step(Graph forward, const TrainingOptions& opt);  // by value: pass an rvalue to spare the copy

// An exported ONNX inference graph has no loss: training it trains on the mean of its first
// output, a stand-in whose cost is one reduction (README, "ONNX models"). Adds that node and marks
// it as the loss when the graph came from a .onnx file and its first output is a floating tensor
// of rank >= 1; otherwise leaves the graph as it is.
void add_stand_in_loss(Graph& g);

}  // namespace roofline
