"""roofline from Python: the hierarchical roofline and kernel model of a deep-learning graph on a
GPU or TPU, the same engine and options as the `roofline` command line, run in this process.

    import roofline
    report = roofline.analyze("gpt2-small", hw="h100-sxm", mode="training")
    report.totals["flops"], report.ops[0]["bound"]
    report.to_pandas()          # one row per op (needs pandas)
    report                      # in a notebook: the HTML report with its roofline chart

Every command of the CLI has a function here (analyze, plan, search, generate, serve, compare,
validate, export_model), or runs as roofline.cli("measure", ...). Bad input raises
roofline.InputError (a ValueError) with the command line's message, naming the file, JSON path or
node; roofline.from_torch(module, example_inputs) captures a PyTorch module as a model.
"""
from ._roofline import DeviceUnavailable, InputError
from ._roofline import version as __version__
from ._api import Document, Report, analyze, cli, compare, export_model, generate, plan, search, serve, validate
from . import hw, models
from ._torch import Model, from_torch

__all__ = [
    "Document", "Report", "Model", "InputError", "DeviceUnavailable",
    "analyze", "plan", "search", "generate", "serve", "compare", "validate", "export_model", "cli",
    "from_torch", "hw", "models", "__version__",
]
