"""The commands as functions, and the documents they return. Each function runs the command line's
own command in this process (roofline._roofline.run_cli, the GIL released) with the keyword
arguments as its options, and reads back the JSON document it writes."""
import contextlib
import html
import json
import os
import tempfile

from . import _roofline

# Options that take on|off on the command line: True and False become "on" and "off".
_ON_OFF = {"master_weights", "overlap_grad_reduce", "counters", "check"}


def _flags(options):
    """Keyword arguments as command-line options: hw="a100" -> --hw a100, fuse=True -> --fuse
    (False and None leave the option out), a list or tuple -> one comma-separated value."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if key in _ON_OFF and isinstance(value, bool):
            args += [flag, "on" if value else "off"]
        elif value is None or value is False:
            continue
        elif value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def cli(*args):
    """Runs `roofline ARGS...` in this process and returns what it prints; errors raise
    InputError / DeviceUnavailable with the command line's message. roofline.cli("hw", "list")."""
    code, text = _roofline.run_cli([str(a) for a in args])
    if code != 0:
        raise RuntimeError(f"roofline {' '.join(str(a) for a in args)}: exit code {code}\n{text}")
    return text


@contextlib.contextmanager
def _workdir():
    with tempfile.TemporaryDirectory(prefix="roofline-") as d:
        yield d


def _model_arg(model, workdir):
    """MODEL as the command line takes it: a template name or a file path as is; a roofline-model/1
    document (a dict, or a Model from from_torch) written to a file named after the model."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    doc = model.model_json() if hasattr(model, "model_json") else model
    if not isinstance(doc, dict):
        raise TypeError("model: expected a template name, a file path, a roofline-model/1 dict or a roofline.Model, "
                        f"got {type(model).__name__}")
    name = str(doc.get("name", "model")).replace(os.sep, "_") or "model"
    path = os.path.join(workdir, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def _run_document(command, model_args, options, cls, output="report.json"):
    """Runs COMMAND with -o into a temporary directory; returns cls(JSON text, printed text)."""
    with _workdir() as d:
        positional = [_model_arg(m, d) if i == 0 and command != "compare" else os.fspath(m)
                      for i, m in enumerate(model_args)]
        out = os.path.join(d, output)
        text = cli(*command.split(), *positional, *_flags(options), "-o", out)
        with open(out, encoding="utf-8") as f:
            json_text = f.read()
    return cls(json_text, _without_written(text, out))


def _without_written(text, path):
    """What a command printed, less the line that says where it wrote the temporary JSON file."""
    return "".join(line for line in text.splitlines(True) if not line.rstrip("\n").endswith(" written to " + path))


class Document:
    """A JSON document a command wrote (its `schema` says which): the dict, the text exactly as the
    command line's -o writes it, and its HTML, CSV and Chrome-trace views where it has them."""

    def __init__(self, json_text, text=""):
        self._json_text = json_text
        self.doc = json.loads(json_text)
        self.text = text  # what the command printed (the table of analyze and plan)

    @property
    def schema(self):
        return self.doc.get("schema")

    def __getitem__(self, key):
        return self.doc[key]

    def keys(self):
        return self.doc.keys()

    def to_dict(self):
        return self.doc

    def _write(self, content, path):
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
        return content

    def to_json(self, path=None):
        """The JSON text, byte for byte what `-o FILE` writes; written to path when given."""
        return self._write(self._json_text, path)

    def to_html(self, path=None):
        """The self-contained HTML report (`--html`): charts as inline SVG, nothing fetched."""
        return self._write(_roofline.render(self._json_text, "html"), path)

    def to_csv(self, path=None):
        """One CSV row per kernel (`--csv`)."""
        return self._write(_roofline.render(self._json_text, "csv"), path)

    def to_trace(self, path=None):
        """The Chrome trace (`--trace`; Perfetto, chrome://tracing)."""
        return self._write(_roofline.render(self._json_text, "trace"), path)

    def _repr_html_(self):
        """Jupyter's view: the HTML report in an iframe (its styles and scripts kept apart from the
        notebook's page)."""
        return ('<iframe style="width:100%;height:900px;border:1px solid #ddd" sandbox="allow-scripts" srcdoc="'
                + html.escape(self.to_html(), quote=True) + '"></iframe>')

    def __str__(self):
        return self.text or self._json_text

    def __repr__(self):
        return f"<roofline.{type(self).__name__} {self.schema}>"


class Report(Document):
    """What `roofline analyze` writes (roofline-report/1, docs/report-schema.md)."""

    @property
    def totals(self):
        return self.doc["totals"]

    @property
    def ops(self):
        """One dict per op, in execution order."""
        return self.doc["ops"]

    @property
    def memory(self):
        return self.doc["memory"]

    def to_pandas(self):
        """The ops as a pandas DataFrame, nested fields flattened to dotted columns (work.flops,
        model.time_s, ...); lists (inputs, outputs, levels) kept as they are."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Report.to_pandas needs pandas (pip install pandas, or apt-get install python3-pandas)") from e
        return pandas.json_normalize(self.ops, sep=".")

    def __repr__(self):
        t = self.totals
        return (f"<roofline.Report {self.doc['model']['name']} on {self.doc['hardware']['name']}: "
                f"{len(self.ops)} ops, {t['flops']:.4g} FLOPs, lower bound {t['time_s']:.4g} s, "
                f"step {t['step_time_s']:.4g} s>")


def analyze(model, **options):
    """roofline analyze MODEL with options as keywords: hw="h100-sxm", mode="training", batch=8,
    seq=1024, dtype="bf16", fuse=True, recompute="selective", runtime="eager", cluster="dgx-a100",
    dp=8, ... (`roofline analyze --help`). MODEL: a template name, a model file (roofline-model/1,
    ONNX, Hugging Face config.json), a roofline-model/1 dict, or a Model from from_torch. Returns a
    Report; raises InputError on bad input."""
    return _run_document("analyze", [model], options, Report)


def plan(model, **options):
    """roofline plan MODEL: every recomputation strategy with fusion off and on, ranked, with the
    Pareto frontier (roofline-plan/1). Options as keywords: memory_budget="40GiB", batch_sweep=True, ..."""
    return _run_document("plan", [model], options, Document)


def search(model, **options):
    """roofline search MODEL: parallel configurations of a training job (gpus=, cluster=, global_batch=, ...)."""
    return _run_document("search", [model], options, Document)


def generate(model, **options):
    """roofline generate MODEL: a prompt and its generated tokens (prompt=, output=, ...)."""
    return _run_document("generate", [model], options, Document)


def serve(model, **options):
    """roofline serve MODEL: a stream of requests with continuous batching (rate=, prompt_len=, output_len=, ...)."""
    return _run_document("serve", [model], options, Document)


def compare(predicted, measured, **options):
    """roofline compare PREDICTED MEASURED: an analyze report against a measure report (file paths)."""
    return _run_document("compare", [predicted, measured], options, Document)


def validate(*paths, **options):
    """roofline validate PATH...: the model against measured latencies (roofline-validation/1)."""
    with _workdir() as d:
        out = os.path.join(d, "validation.json")
        text = cli("validate", *[os.fspath(p) for p in paths], *_flags(options), "-o", out)
        with open(out, encoding="utf-8") as f:
            return Document(f.read(), _without_written(text, out))


def export_model(model, **options):
    """roofline model export MODEL: the model as a roofline-model/1 dict (a template as it expands,
    anything else as its loaded graph with the options applied)."""
    with _workdir() as d:
        out = os.path.join(d, "model.json")
        cli("model", "export", _model_arg(model, d), *_flags(options), "-o", out)
        with open(out, encoding="utf-8") as f:
            return json.load(f)
