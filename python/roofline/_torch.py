"""roofline.from_torch: a PyTorch module captured as a roofline-model/1 graph.

Two captures, both ending in a torch.fx graph of ATen ops with the shapes and dtypes of the
example inputs; each ATen op then maps to roofline ops (the table _ATEN below):
  export  torch.export.export (torch >= 2.1): the module's ATen graph before decomposition
          (aten.linear, aten.conv2d, aten.layer_norm, aten.scaled_dot_product_attention, ...), each
          node's shape from its FakeTensor value (node.meta["val"]); parameters and buffers are
          named by the graph signature;
  fx      torch.fx's make_fx (torch >= 1.13, Debian 12's python3-torch): the module runs once and
          every ATen op it dispatches is recorded (convolution, addmm of a transposed weight, ...).
capture="auto" (the default) uses export where torch has it and falls back to fx when export
refuses the module (data-dependent control flow, ...); Model.capture says which ran. The
module's parameters keep their state-dict names (conv1.weight, ...); its buffers become inputs.
An op with no mapping becomes an `opaque` node (zero work, its real output shapes) and is listed
in Model.unmapped, or raises with strict=True.

The capture is of inference: the module runs in eval mode (dropout is the identity, batch norm the
per-channel affine of its running statistics, as the ONNX route imports an eval-mode export).
`analyze(model, mode="training")` builds the training step from it with roofline's own autodiff;
the first output must then be the loss: loss="cross_entropy" appends one (targets an int64
input), loss="mean" the mean of the first output.
"""
import operator

from ._api import analyze as _analyze

_DTYPES = {
    "torch.float64": "f64", "torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
    "torch.int64": "int64", "torch.int32": "int32", "torch.int8": "int8", "torch.uint8": "u8", "torch.bool": "u8",
}


class Model:
    """A captured model: its roofline-model/1 document (`doc`), what had no mapping (`unmapped`:
    one dict per op, `node` and `target`), and analyze() as roofline.analyze(model, ...)."""

    def __init__(self, doc, unmapped, capture="fx"):
        self.doc = doc
        self.unmapped = unmapped
        self.capture = capture  # "export" or "fx": which capture built it

    @property
    def name(self):
        return self.doc["name"]

    def model_json(self):
        return self.doc

    def analyze(self, **options):
        return _analyze(self, **options)

    def __repr__(self):
        return (f"<roofline.Model {self.name}: {len(self.doc['nodes'])} nodes, {len(self.doc['parameters'])} parameters, "
                f"{len(self.unmapped)} unmapped, captured by {self.capture}>")


class _Meta:
    """A tensor of the recorded run: shape and roofline dtype."""

    def __init__(self, shape, dtype):
        self.shape = [int(d) for d in shape]
        self.dtype = dtype


def _dtype(torch_dtype):
    name = str(torch_dtype)
    if name not in _DTYPES:
        raise ValueError(f"from_torch: dtype {name} has no roofline dtype ({', '.join(sorted(_DTYPES))})")
    return _DTYPES[name]


class _Builder:
    def __init__(self, name):
        self.doc = {"format": "roofline-model/1", "name": name, "inputs": [], "parameters": [], "nodes": [], "outputs": []}
        self.unmapped = []
        self.names = set()

    def unique(self, base):
        name, i = base, 1
        while name in self.names:
            name, i = f"{base}_{i}", i + 1
        self.names.add(name)
        return name

    def node(self, base, op, inputs, attrs=None, outputs=1):
        """Appends a node; returns its output tensor name (or names when outputs > 1)."""
        name = self.unique(base)
        entry = {"name": name, "op": op, "inputs": list(inputs)}
        names = name if outputs == 1 else [f"{name}:{i}" for i in range(outputs)]
        if outputs != 1:
            # Named explicitly: the loader knows how many outputs split or topk make, not how many
            # an opaque node has.
            entry["outputs"] = list(names)
        if attrs:
            entry["attrs"] = attrs
        self.doc["nodes"].append(entry)
        return names


class _Capture:
    """Maps one make_fx graph, node by node, in order."""

    def __init__(self, torch, gm, values, param_names, buffer_names, builder, param_nodes):
        self.torch = torch
        self.values = values  # fx node -> _Meta, tuple of them, or a Python value
        self.b = builder
        self.out = {}  # fx node -> tensor name, or tuple of names / None for multi-output ops
        self.gm = gm
        self.param_names = param_names
        self.buffer_names = buffer_names
        self.folded = {n for n in gm.graph.nodes if n.op == "call_function" and _aten_name(n.target) in ("t", "transpose")
                       and n.users and all(_aten_name(u.target) in ("addmm", "mm") and u.args[-1 if _aten_name(u.target) == "mm" else 2] is n
                                           and len(u.args) >= 2 for u in n.users)
                       and n.args[0] in param_nodes}

    # --- helpers ---------------------------------------------------------------------------------------
    def t(self, arg):
        name = self.out.get(arg)
        if not isinstance(name, str):
            raise _Unmapped(f"{arg} is not a mapped tensor")
        return name

    def meta(self, arg):
        v = self.values[arg]
        if not isinstance(v, _Meta):
            raise _Unmapped(f"{arg} is not a tensor")
        return v

    def is_tensor(self, arg):
        return hasattr(arg, "op") and isinstance(self.values.get(arg), _Meta)

    def reshape(self, n, x, shape):
        if self.meta(x).shape == list(shape):
            return self.t(x)
        return self.b.node(n.name, "reshape", [self.t(x)], {"shape": list(shape)})

    # --- the graph ------------------------------------------------------------------------------------
    def run(self, placeholders, needed, outputs):
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                if n in placeholders:
                    self.out[n] = placeholders[n]
            elif n.op == "output":
                for leaf in outputs:
                    self.b.doc["outputs"].append(self.t(leaf))
            elif n not in needed:
                continue
            elif n.op == "call_function":
                self.call(n)
            else:
                raise _Unmapped(f"fx op {n.op}")

    def call(self, n):
        if n in self.folded:  # nn.Linear's weight transpose, read by the linear node itself
            self.out[n] = None
            return
        if n.target is operator.getitem:
            src = self.out.get(n.args[0])
            if isinstance(src, (tuple, list)):
                self.out[n] = src[n.args[1]]
                return
        key = _aten_name(n.target)
        mapper = _ATEN.get(key)
        value = self.values.get(n)
        try:
            if mapper is None:
                raise _Unmapped(key)
            self.out[n] = mapper(self, n, *n.args, **n.kwargs)
        except _Unmapped:
            self.out[n] = self.opaque(n, key, value)

    def opaque(self, n, key, value):
        metas = [value] if isinstance(value, _Meta) else [v for v in (value or ()) if isinstance(v, _Meta)]
        self.b.unmapped.append({"node": n.name, "target": key})
        if not metas:
            return None
        ins = [self.out[a] for a in _leaves(n.args) if isinstance(self.out.get(a), str)]
        attrs = {"op_type": key, "ranks": [len(m.shape) for m in metas], "dims": [d for m in metas for d in m.shape],
                 "dtypes": ",".join(m.dtype for m in metas)}
        names = self.b.node(n.name, "opaque", ins, attrs, outputs=len(metas))
        if isinstance(value, _Meta):
            return names if isinstance(names, str) else names[0]
        it = iter([names] if isinstance(names, str) else names)
        return tuple(next(it) if isinstance(v, _Meta) else None for v in value)


class _Unmapped(Exception):
    pass


def _aten_name(target):
    """"aten.convolution.default" -> "convolution"; other callables by their name."""
    name = str(target)
    if name.startswith("aten."):
        return name.split(".")[1]
    return getattr(target, "__name__", name)


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        return [x for item in tree for x in _leaves(item)]
    if isinstance(tree, dict):
        return [x for item in tree.values() for x in _leaves(item)]
    return [tree] if hasattr(tree, "op") else []


# --- the ATen table ---------------------------------------------------------------------------------
def _alias(c, n, x, *args, **kwargs):
    return c.t(x)


def _unary(op, **fixed):
    def m(c, n, x, *args, **kwargs):
        return c.b.node(n.name, op, [c.t(x)], dict(fixed) or None)
    return m


def _gelu(c, n, x, approximate="none"):
    return c.b.node(n.name, "gelu", [c.t(x)], {"approximate": "tanh" if approximate == "tanh" else "erf"})


def _binary(op, scalar_op=None, scalar_attr=None, scalar_fn=None):
    """add/sub/mul/div of two tensors, or of a tensor and a Python number (scale, shift)."""
    def m(c, n, a, b, alpha=1):
        if c.is_tensor(a) and c.is_tensor(b):
            if alpha != 1:
                b_name = c.b.node(n.name + "_alpha", "scale", [c.t(b)], {"factor": float(alpha)})
                return c.b.node(n.name, op, [c.t(a), b_name])
            return c.b.node(n.name, op, [c.t(a), c.t(b)])
        if c.is_tensor(a) and scalar_op is not None:
            if isinstance(b, (int, float)) and not isinstance(b, bool):
                value = scalar_fn(float(b) * alpha)
                if value == (1.0 if scalar_op == "scale" else 0.0):
                    return c.t(a)
                return c.b.node(n.name, scalar_op, [c.t(a)], {scalar_attr: value})
        raise _Unmapped(f"{op} of {type(a).__name__} and {type(b).__name__}")
    return m


def _convolution(c, n, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    if transposed or len(c.meta(x).shape) != 4:
        raise _Unmapped("convolution (only 2-d, not transposed)")
    ins = [c.t(x), c.t(w)] + ([c.t(bias)] if bias is not None else [])
    return c.b.node(n.name, "conv2d", ins, {"stride": list(stride), "padding": list(padding), "dilation": list(dilation),
                                            "groups": int(groups)})


def _conv2d(c, n, x, w, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """aten.conv2d, torch.export's form of nn.Conv2d; padding may be "valid" or "same"."""
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0)
        else:  # "same", stride 1: (k - 1) * dilation / 2 each side where that is whole
            k, d = c.meta(w).shape[2:], _pair(dilation)
            total = [(k[i] - 1) * d[i] for i in range(2)]
            if any(t % 2 for t in total):
                raise _Unmapped("conv2d padding='same' with an even kernel (asymmetric padding)")
            padding = [t // 2 for t in total]
    return _convolution(c, n, x, w, bias, _pair(stride), _pair(padding), _pair(dilation), False, (0, 0), groups)


def _batch_norm(c, n, x, weight, bias, mean, var, training, momentum, eps):
    """Eval-mode batch norm, y = x * a + b per channel: two parameters of shape [C, 1, ...] (a and b
    fold weight, bias, the running mean and variance), as the ONNX route imports it."""
    shape = c.meta(x).shape
    if len(shape) < 2:
        raise _Unmapped("native_batch_norm of rank < 2")
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    base = c.b.unique(n.name)
    dtype = c.meta(x).dtype
    for suffix in ("a", "b"):
        c.b.doc["parameters"].append({"name": f"{base}.{suffix}", "shape": per_channel, "dtype": dtype})
    scaled = c.b.node(base + "_mul", "mul", [c.t(x), f"{base}.a"])
    return (c.b.node(base + "_add", "add", [scaled, f"{base}.b"]), None, None)


def _batch_norm_no_training(c, n, x, weight, bias, mean, var, momentum, eps):
    """aten._native_batch_norm_legit_no_training (torch >= 2.1's eval-mode batch norm)."""
    return _batch_norm(c, n, x, weight, bias, mean, var, False, momentum, eps)


def _batch_norm_one(c, n, x, weight, bias, mean, var, training, momentum, eps, cudnn_enabled=True):
    """aten.batch_norm (one output), as torch.export records nn.BatchNorm2d in some versions."""
    if training:
        raise _Unmapped("batch_norm in training mode")
    return _batch_norm(c, n, x, weight, bias, mean, var, False, momentum, eps)[0]


def _layer_norm_one(c, n, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """aten.layer_norm (one output), torch.export's form of nn.LayerNorm."""
    return _layer_norm(c, n, x, normalized_shape, weight, bias, eps)[0]


def _attention(c, n, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """Scaled dot-product attention: roofline's attention op (QK^T, scale-mask-softmax, PV) when
    there is no mask tensor; with one (additive float, or boolean), the same three steps spelled
    out as ops, the mask applied by one elementwise add over the scores, which is what reading it
    costs. Dropout on the probabilities is an inference no-op (the capture is in eval mode)."""
    qs, ks, vs = c.meta(q).shape, c.meta(k).shape, c.meta(v).shape
    if len(qs) < 2 or len(ks) != len(qs) or len(vs) != len(qs) or qs[:-2] != ks[:-2] or ks[:-2] != vs[:-2]:
        raise _Unmapped("scaled_dot_product_attention with grouped or broadcast heads")
    if scale is None:
        scale = 1.0 / qs[-1] ** 0.5
    if attn_mask is None:
        attrs = {"causal": bool(is_causal)}
        if abs(scale - 1.0 / qs[-1] ** 0.5) > 1e-12 * scale:
            attrs["scale"] = float(scale)
        return c.b.node(n.name, "attention", [c.t(q), c.t(k), c.t(v)], attrs)
    if is_causal:
        raise _Unmapped("scaled_dot_product_attention with both a mask and is_causal")
    scores = c.b.node(n.name + "_scores", "matmul", [c.t(q), c.t(k)], {"transpose_b": True})
    scaled = c.b.node(n.name + "_scale", "scale", [scores], {"factor": float(scale)})
    masked = c.b.node(n.name + "_mask", "add", [scaled, c.t(attn_mask)])
    probs = c.b.node(n.name + "_softmax", "softmax", [masked], {"axis": len(qs) - 1})
    return c.b.node(n.name, "matmul", [probs, c.t(v)])


def _sdpa(c, n, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """aten.scaled_dot_product_attention (torch.export keeps F.scaled_dot_product_attention whole)."""
    if enable_gqa:
        raise _Unmapped("scaled_dot_product_attention with enable_gqa")
    return _attention(c, n, q, k, v, attn_mask, dropout_p, is_causal, scale)


def _sdpa_kernel(outputs):
    """make_fx's records of F.scaled_dot_product_attention on torch >= 2: the backend's op, whose
    first output is the attention's (the rest: log-sum-exp, seeds, ... for its backward)."""
    def m(c, n, q, k, v, *args, attn_mask=None, scale=None, **kwargs):
        key = _aten_name(n.target)
        if key == "_scaled_dot_product_efficient_attention":  # (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal)
            attn_mask = args[0] if args else kwargs.get("attn_bias")
            is_causal = args[3] if len(args) > 3 else kwargs.get("is_causal", False)
        else:  # flash, flash_for_cpu: (q, k, v, dropout_p, is_causal, ...)
            is_causal = args[1] if len(args) > 1 else kwargs.get("is_causal", False)
        out = _attention(c, n, q, k, v, attn_mask, 0.0, bool(is_causal), scale)
        return (out,) + (None,) * (outputs - 1)
    return m


def _layer_norm(c, n, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    if len(normalized_shape) != 1:
        raise _Unmapped("native_layer_norm over more than the last dim")
    ins = [c.t(x)] + ([c.t(weight)] if weight is not None else [])
    if bias is not None:
        if weight is None:
            raise _Unmapped("native_layer_norm with a bias and no weight")
        ins.append(c.t(bias))
    return (c.b.node(n.name, "layernorm", ins, {"eps": float(eps)}), None, None)


def _weight_of(c, node):
    """The parameter a t() node transposes (nn.Linear's weight), or None."""
    if hasattr(node, "op") and node.op == "call_function" and _aten_name(node.target) in ("t", "transpose") \
            and c.out.get(node.args[0]) in c.param_names and len(c.meta(node.args[0]).shape) == 2:
        return c.out[node.args[0]]
    return None


def _addmm(c, n, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise _Unmapped("addmm with beta or alpha")
    w = _weight_of(c, b)
    if w is not None:  # nn.Linear: x @ W^T + bias
        return c.b.node(n.name, "linear", [c.t(a), w, c.t(bias)])
    product = c.b.node(n.name + "_mm", "matmul", [c.t(a), c.t(b)])
    return c.b.node(n.name, "add", [product, c.t(bias)])


def _mm(c, n, a, b):
    w = _weight_of(c, b)
    if w is not None:
        return c.b.node(n.name, "linear", [c.t(a), w])
    return c.b.node(n.name, "matmul", [c.t(a), c.t(b)])


def _linear(c, n, x, w, bias=None):
    return c.b.node(n.name, "linear", [c.t(x), c.t(w)] + ([c.t(bias)] if bias is not None else []))


def _view(c, n, x, *args, **kwargs):
    return c.reshape(n, x, c.meta(n).shape)


def _transpose(c, n, x, dim0=0, dim1=1):
    rank = len(c.meta(x).shape)
    if rank < 2:
        return c.t(x)
    return c.b.node(n.name, "transpose", [c.t(x)], {"dim0": int(dim0) % rank, "dim1": int(dim1) % rank})


def _permute(c, n, x, dims):
    rank = len(c.meta(x).shape)
    return c.b.node(n.name, "permute", [c.t(x)], {"perm": [int(d) % rank for d in dims]})


def _expand(c, n, x, size, **kwargs):
    out = c.meta(n).shape
    if c.meta(x).shape == out:
        return c.t(x)
    return c.b.node(n.name, "expand", [c.t(x)], {"shape": out})


def _softmax(c, n, x, dim, half_to_float=False):
    return c.b.node(n.name, "softmax", [c.t(x)], {"axis": int(dim) % len(c.meta(x).shape)})


def _reduce(op):
    def m(c, n, x, dims=None, keepdim=False, **kwargs):
        rank = len(c.meta(x).shape)
        axes = list(range(rank)) if not dims else [int(d) % rank for d in dims]
        return c.b.node(n.name, op, [c.t(x)], {"axes": axes, "keepdim": bool(keepdim)})
    return m


def _adaptive_avg_pool2d(c, n, x, output_size):
    shape = c.meta(x).shape
    if list(output_size) == [1, 1]:
        return c.b.node(n.name, "reduce_mean", [c.t(x)], {"axes": [len(shape) - 2, len(shape) - 1], "keepdim": True})
    h, w = shape[-2:]
    oh, ow = output_size
    if h % oh or w % ow:
        raise _Unmapped("adaptive_avg_pool2d to a size that does not divide the input")
    k = [h // oh, w // ow]
    return c.b.node(n.name, "avg_pool2d", [c.t(x)], {"kernel": k, "stride": k, "padding": [0, 0]})


def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * 2 if len(v) == 1 else v


def _max_pool2d(c, n, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    kernel = _pair(kernel)
    attrs = {"kernel": kernel, "stride": _pair(stride) if stride else kernel, "padding": _pair(padding),
             "dilation": _pair(dilation), "ceil_mode": bool(ceil_mode)}
    pooled = c.b.node(n.name, "max_pool2d", [c.t(x)], attrs)
    return (pooled, None) if _aten_name(n.target) == "max_pool2d_with_indices" else pooled


def _avg_pool2d(c, n, x, kernel, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise _Unmapped("avg_pool2d with divisor_override")
    kernel = _pair(kernel)
    return c.b.node(n.name, "avg_pool2d", [c.t(x)], {"kernel": kernel, "stride": _pair(stride) if stride else kernel,
                                                     "padding": _pair(padding), "ceil_mode": bool(ceil_mode),
                                                     "count_include_pad": bool(count_include_pad)})


def _cat(c, n, tensors, dim=0):
    ins = [c.t(t) for t in tensors]
    if len(ins) == 1:
        return ins[0]
    return c.b.node(n.name, "concat", ins, {"axis": int(dim) % len(c.meta(n).shape)})


def _slice(c, n, x, dim=0, start=None, end=None, step=1):
    shape = c.meta(x).shape
    axis = int(dim) % len(shape)
    lo = 0 if start is None else int(start)
    hi = shape[axis] if end is None else min(int(end), shape[axis])
    if c.meta(n).shape == shape:
        return c.t(x)
    return c.b.node(n.name, "slice", [c.t(x)], {"starts": [lo], "ends": [hi], "axes": [axis], "steps": [int(step)]})


def _select(c, n, x, dim, index):
    shape = c.meta(x).shape
    axis = int(dim) % len(shape)
    i = int(index) % shape[axis]
    picked = c.b.node(n.name + "_slice", "slice", [c.t(x)], {"starts": [i], "ends": [i + 1], "axes": [axis], "steps": [1]})
    return c.b.node(n.name, "reshape", [picked], {"shape": c.meta(n).shape})


def _split(c, n, x, split_size, dim=0):
    shape = c.meta(x).shape
    axis = int(dim) % len(shape)
    if isinstance(split_size, (list, tuple)):
        sizes = [int(s) for s in split_size]
    else:
        sizes = [min(int(split_size), shape[axis] - i) for i in range(0, shape[axis], int(split_size))]
    if len(sizes) == 1:
        return (c.t(x),)
    return tuple(c.b.node(n.name, "split", [c.t(x)], {"axis": axis, "sizes": sizes}, outputs=len(sizes)))


def _pad(c, n, x, pad, mode="constant", value=None):
    """aten.pad / constant_pad_nd: torch's pad lists (begin, end) pairs from the last dim backwards;
    roofline's pad (ONNX order) every dim's begin, then every end."""
    rank = len(c.meta(x).shape)
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) > 2 * rank:
        raise _Unmapped(f"pad of {len(pad)} values for rank {rank}")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if not any(begins) and not any(ends):
        return c.t(x)
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    if mode not in modes:
        raise _Unmapped(f"pad mode {mode}")
    attrs = {"pads": begins + ends, "mode": modes[mode]}
    if mode == "constant" and value:
        attrs["value"] = float(value)
    return c.b.node(n.name, "pad", [c.t(x)], attrs)


def _einsum(c, n, equation, operands):
    """A two-operand einsum as one batched matmul between the permutes and reshapes that line its
    operands up: batch indices (in both operands and the output), contracted (in both, not in the
    output), and each operand's own; as the ONNX route imports Einsum (model/onnx_import.cpp)."""
    eq = equation.replace(" ", "")
    if len(operands) != 2 or "." in eq or "->" not in eq:
        raise _Unmapped("einsum other than two operands with an explicit output and no ellipsis")
    lhs, out = eq.split("->")
    ta, tb = lhs.split(",")
    a, b = operands
    sa, sb = c.meta(a).shape, c.meta(b).shape
    if len(ta) != len(sa) or len(tb) != len(sb) or len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or set(out) - set(ta + tb):
        raise _Unmapped(f"einsum {eq}")
    size = dict(zip(ta, sa))
    size.update(zip(tb, sb))
    batch = [i for i in ta if i in tb and i in out]
    contract = [i for i in ta if i in tb and i not in out]
    a_own = [i for i in ta if i not in tb]
    b_own = [i for i in tb if i not in ta]
    if set(a_own + b_own) - set(out):
        raise _Unmapped(f"einsum {eq}: an index summed within one operand")

    def prod(idx):
        p = 1
        for i in idx:
            p *= size[i]
        return p

    def arrange(name, t, terms, order, shape):
        cur = c.t(t)
        if list(terms) != order:
            cur = c.b.node(f"{n.name}_{name}_permute", "permute", [cur], {"perm": [terms.index(i) for i in order]})
        return c.b.node(f"{n.name}_{name}_reshape", "reshape", [cur], {"shape": shape})

    am = arrange("a", a, ta, batch + a_own + contract, [prod(batch), prod(a_own), prod(contract)])
    bm = arrange("b", b, tb, batch + contract + b_own, [prod(batch), prod(contract), prod(b_own)])
    product = c.b.node(n.name + "_matmul", "matmul", [am, bm])
    natural = batch + a_own + b_own
    y = c.b.node(n.name + "_reshape", "reshape", [product], {"shape": [size[i] for i in natural]})
    if natural != list(out):
        y = c.b.node(n.name, "permute", [y], {"perm": [natural.index(i) for i in out]})
    return y


def _index(c, n, x, indices):
    """x[idx] with one integer index tensor (the others None: whole dims before it), as relative
    position tables are read (swin, maxvit): roofline's gather along that dim, whose output puts
    the index's dims where the indexed dim was, as torch does for a single advanced index."""
    given = [(i, t) for i, t in enumerate(indices) if t is not None]
    if len(given) != 1 or not c.is_tensor(given[0][1]) or c.meta(given[0][1]).dtype not in ("int64", "int32"):
        raise _Unmapped("index with other than one integer index tensor")
    axis, idx = given[0]
    return c.b.node(n.name, "gather", [c.t(x), c.t(idx)], {"axis": axis})


def _index_select(c, n, x, dim, index):
    return c.b.node(n.name, "gather", [c.t(x), c.t(index)], {"axis": int(dim) % len(c.meta(x).shape)})


def _embedding(c, n, weight, indices, *args, **kwargs):
    return c.b.node(n.name, "embedding", [c.t(weight), c.t(indices)])


def _to_copy(c, n, x, *args, **kwargs):
    out, src = c.meta(n).dtype, c.meta(x).dtype
    return c.t(x) if out == src else c.b.node(n.name, "cast", [c.t(x)], {"dtype": out})


def _pow(c, n, x, exponent):
    if not isinstance(exponent, (int, float)):
        raise _Unmapped("pow with a tensor exponent")
    return c.b.node(n.name, "pow", [c.t(x)], {"exponent": float(exponent)})


def _dropout(c, n, x, p, train, *args):
    return c.b.node(n.name, "dropout", [c.t(x)], {"p": float(p)}, outputs=2)[0] if train else c.t(x)


def _native_dropout(c, n, x, p, train):
    if not train:
        return (c.t(x), None)
    y, mask = c.b.node(n.name, "dropout", [c.t(x)], {"p": float(p)}, outputs=2)
    return (y, mask)


_ATEN = {
    "convolution": _convolution, "native_batch_norm": _batch_norm, "native_layer_norm": _layer_norm,
    "conv2d": _conv2d, "_native_batch_norm_legit_no_training": _batch_norm_no_training, "batch_norm": _batch_norm_one,
    "layer_norm": _layer_norm_one, "scaled_dot_product_attention": _sdpa,
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa_kernel(2), "_scaled_dot_product_flash_attention": _sdpa_kernel(9),
    "_scaled_dot_product_efficient_attention": _sdpa_kernel(4),
    "addmm": _addmm, "mm": _mm, "bmm": lambda c, n, a, b: c.b.node(n.name, "matmul", [c.t(a), c.t(b)]),
    "matmul": lambda c, n, a, b: c.b.node(n.name, "matmul", [c.t(a), c.t(b)]), "linear": _linear,
    "relu": _unary("relu"), "relu_": _unary("relu"), "gelu": _gelu, "silu": _unary("silu"), "silu_": _unary("silu"),
    "sigmoid": _unary("sigmoid"), "tanh": _unary("tanh"), "exp": _unary("exp"), "log": _unary("log"),
    "sqrt": _unary("sqrt"), "rsqrt": _unary("rsqrt"), "neg": _unary("neg"), "erf": _unary("erf"), "sin": _unary("sin"),
    "hardswish": _unary("hardswish"), "hardswish_": _unary("hardswish"), "hardsigmoid": _unary("hardsigmoid"),
    "hardtanh": lambda c, n, x, lo=-1.0, hi=1.0: (c.b.node(n.name, "relu6", [c.t(x)]) if (lo, hi) == (0.0, 6.0)
                                                  else _raise(f"hardtanh({lo}, {hi})")),
    "mish": _unary("mish"), "softplus": _unary("softplus"),
    "add": _binary("add", "shift", "offset", lambda v: v), "add_": _binary("add", "shift", "offset", lambda v: v),
    "sub": _binary("sub", "shift", "offset", lambda v: -v),
    "mul": _binary("mul", "scale", "factor", lambda v: v), "mul_": _binary("mul", "scale", "factor", lambda v: v),
    "div": _binary("div", "scale", "factor", lambda v: 1.0 / v), "pow": _pow,
    "maximum": lambda c, n, a, b: c.b.node(n.name, "maximum", [c.t(a), c.t(b)]),
    "view": _view, "_unsafe_view": _view, "_reshape_alias": _view, "reshape": _view, "flatten": _view,
    "unsqueeze": _view, "squeeze": _view, "as_strided": _view, "as_strided_": _view,
    "t": _transpose, "transpose": _transpose, "permute": _permute, "expand": _expand,
    "clone": _alias, "contiguous": _alias, "detach": _alias, "alias": _alias, "lift_fresh_copy": _alias,
    "_softmax": _softmax, "softmax": _softmax,
    "mean": _reduce("reduce_mean"), "sum": _reduce("reduce_sum"), "amax": _reduce("reduce_max"),
    "_adaptive_avg_pool2d": _adaptive_avg_pool2d, "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "max_pool2d_with_indices": _max_pool2d, "max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d,
    "cat": _cat, "slice": _slice, "select": _select, "split": _split, "split_with_sizes": _split,
    "pad": _pad, "constant_pad_nd": lambda c, n, x, pad, value=0: _pad(c, n, x, pad, "constant", value), "einsum": _einsum,
    "index": _index, "index_select": _index_select,
    "embedding": _embedding, "_to_copy": _to_copy, "dropout": _dropout, "native_dropout": _native_dropout,
}


def _raise(why):
    raise _Unmapped(why)


def from_torch(module, example_inputs, *, name=None, loss=None, strict=False, capture="auto"):
    """Captures module(*example_inputs) as a roofline Model (see the module's docstring).

    example_inputs: a tensor or a tuple of tensors, the shapes the model is analysed at.
    loss: None, "cross_entropy" (appends a cross-entropy of the first output against int64
    targets of its shape less the last dim) or "mean" (its mean), for mode="training".
    strict: raise instead of listing ops with no mapping.
    capture: "auto" (torch.export where torch has it, make_fx when export refuses the module),
    "export" or "fx"."""
    import torch

    if capture not in ("auto", "export", "fx"):
        raise ValueError(f"from_torch: capture must be 'auto', 'export' or 'fx', got {capture!r}")
    has_export = hasattr(getattr(torch, "export", None), "export")
    if capture == "export" and not has_export:
        raise ValueError(f"from_torch: capture='export' needs torch.export (torch >= 2.1; this is torch {torch.__version__})")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())

    modes = {m: m.training for m in module.modules()}
    module.eval()
    try:
        captured = None
        if capture == "export" or (capture == "auto" and has_export):
            try:
                captured = _export_capture(torch, module, example_inputs, params)
            except Exception as e:  # torch.export's refusals have many types (UserError, Unsupported, ...)
                if capture == "export":
                    raise ValueError(f"from_torch: torch.export could not capture the module: {e}") from e
        if captured is None:
            captured = _fx_capture(torch, module, example_inputs, params, buffers)
    finally:
        for m, was in modes.items():
            m.train(was)
    gm, values, ordered, outputs, how = captured

    b = _Builder(name or type(module).__name__)
    placeholders = {}
    users = [node for node, (kind, _) in ordered if kind == "input"]
    for node, (kind, key) in ordered:
        meta = values[node]
        if kind == "input":
            key = f"input{users.index(node)}" if len(users) > 1 else "input"
        if not isinstance(meta, _Meta):  # a non-tensor input (an int, None): nothing reads it as a tensor
            continue
        entry = {"name": key, "shape": meta.shape, "dtype": meta.dtype}
        (b.doc["parameters"] if kind == "parameter" else b.doc["inputs"]).append(entry)
        b.names.add(key)
        placeholders[node] = key
    # Only what the outputs depend on (make_fx also records unused ops: detach, empty, ...).
    needed, stack = set(), list(outputs)
    needed.update(outputs)
    while stack:
        n = stack.pop()
        for a in _leaves((n.args, n.kwargs)):
            if a not in needed:
                needed.add(a)
                stack.append(a)
    param_nodes = {node for node, key in placeholders.items() if key in params}
    c = _Capture(torch, gm, values, set(params), set(buffers), b, param_nodes)
    c.run(placeholders, needed, outputs)
    if strict and b.unmapped:
        raise ValueError("from_torch: no roofline op for " + ", ".join(f"{u['target']} (node {u['node']})" for u in b.unmapped))
    _add_loss(b, loss, values, outputs)
    # Parameters and buffers no node reads (batch norm's, replaced by its folded a and b) are left out.
    used = {i for node in b.doc["nodes"] for i in node["inputs"]}
    b.doc["parameters"] = [p for p in b.doc["parameters"] if p["name"] in used]
    b.doc["inputs"] = [i for i in b.doc["inputs"] if i["name"] in used]
    compute = {e["dtype"] for e in b.doc["inputs"] + b.doc["parameters"] if e["dtype"] in ("f64", "f32", "f16", "bf16")}
    if len(compute) == 1:
        b.doc["dtype_policy"] = {"compute": compute.pop()}
    return Model(b.doc, b.unmapped, how)


def _fx_capture(torch, module, example_inputs, params, buffers):
    """make_fx over a functional call with the state as arguments; shapes from running it once.
    Returns (graph module, values, [(placeholder, (kind, name))], output nodes, "fx")."""
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        from torch.func import functional_call
    except ImportError:  # torch 1.13
        from torch.nn.utils.stateless import functional_call

    state = {**params, **buffers}

    def forward(state, *inputs):
        return functional_call(module, state, inputs)

    gm = make_fx(forward)(state, *example_inputs)
    values = _record(torch, gm, [*state.values(), *example_inputs])
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = list(state)
    ordered = [(node, ("parameter" if names[i] in params else "buffer", names[i]) if i < len(names) else ("input", None))
               for i, node in enumerate(ph)]
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return gm, values, ordered, _leaves(out.args[0]), "fx"


def _export_capture(torch, module, example_inputs, params):
    """torch.export.export; shapes from each node's FakeTensor (node.meta["val"]), names from the
    graph signature (parameters and buffers by their state-dict names, lifted constants by theirs).
    Only the user outputs are the model's (a buffer mutation's output is not)."""
    ep = torch.export.export(module, example_inputs)
    gm = ep.graph_module
    values = {n: _summary(torch, n.meta["val"]) for n in gm.graph.nodes if "val" in n.meta}
    kinds = {}
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "PARAMETER":
            kinds[spec.arg.name] = ("parameter", spec.target)
        elif kind in ("BUFFER", "CONSTANT_TENSOR"):
            kinds[spec.arg.name] = ("buffer", spec.target)
        elif kind == "USER_INPUT":
            kinds[spec.arg.name] = ("input", None)
        else:
            raise ValueError(f"from_torch: torch.export input {spec.arg.name} of kind {kind} is not supported")
    ordered = [(n, kinds[n.name]) for n in gm.graph.nodes if n.op == "placeholder"]
    out = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = _leaves(out.args[0])
    specs = ep.graph_signature.output_specs
    user = [leaf for leaf, spec in zip(leaves, specs) if spec.kind.name == "USER_OUTPUT"] if len(specs) == len(leaves) else leaves
    return gm, values, ordered, user, "export"


def _record(torch, gm, args):
    """Runs the captured graph once, keeping each node's output shape and dtype (and Python values)."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            values[n] = _summary(torch, result)
            return result

    with torch.no_grad():
        Recorder(gm).run(*args)
    return values


def _summary(torch, v):
    if isinstance(v, torch.Tensor):
        return _Meta(v.shape, _dtype(v.dtype))
    if isinstance(v, (list, tuple)):
        return tuple(_summary(torch, x) for x in v)
    return v


def _add_loss(b, loss, values, outputs):
    if loss is None:
        return
    if not b.doc["outputs"]:
        raise ValueError("from_torch: loss: the module has no tensor output")
    out = b.doc["outputs"][0]
    shape = values[outputs[0]].shape
    if loss == "cross_entropy":
        b.doc["inputs"].append({"name": "targets", "shape": shape[:-1], "dtype": "int64"})
        name = b.node("loss", "cross_entropy", [out, "targets"])
    elif loss == "mean":
        name = b.node("loss", "reduce_mean", [out], {"axes": list(range(len(shape))), "keepdim": False})
    else:
        raise ValueError(f"from_torch: loss must be None, 'cross_entropy' or 'mean', got {loss!r}")
    b.doc["outputs"].insert(0, name)
