"""The Python API against the command line (issue #22): the same engine in-process, so every
document must be byte-identical to what the `roofline` executable writes for the same options, and
every error must carry the message the executable prints. ROOFLINE_EXE and ROOFLINE_SOURCE_DIR come
from ctest (python/CMakeLists.txt)."""
import html
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

import roofline

EXE = os.environ["ROOFLINE_EXE"]
SRC = os.environ["ROOFLINE_SOURCE_DIR"]
MLP = os.path.join(SRC, "examples", "two-layer-mlp.json")


def exe(*args, check=True):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def gpt2_training():
    # The example, as `roofline analyze gpt2-small --hw h100-sxm --mode training` runs it.
    return roofline.analyze("gpt2-small", hw="h100-sxm", mode="training")


def test_analyze_writes_the_report_the_command_line_writes(gpt2_training, tmp_path):
    out = tmp_path / "cli.json"
    exe("analyze", "gpt2-small", "--hw", "h100-sxm", "--mode", "training", "-q", "-o", out)
    # Reports are deterministic (docs/report-schema.md): the same options give the same bytes.
    assert gpt2_training.to_json() == out.read_text()
    assert gpt2_training.schema == "roofline-report/1"
    assert gpt2_training["settings"]["mode"] == "training"


def test_report_totals_and_ops_are_the_documents(gpt2_training):
    r = gpt2_training
    assert isinstance(r.ops, list) and all(isinstance(op, dict) for op in r.ops)
    # totals.flops is the exact integer sum of the ops' work (docs/report-schema.md).
    assert r.totals["flops"] == sum(op["work"]["flops"] for op in r.ops)
    assert {op["phase"] for op in r.ops} == {"forward", "backward", "optimizer"}
    # The printed table is analyze's, less the line naming the temporary JSON file.
    assert "gpt2-small (training mode)" in r.text and "written to" not in r.text
    assert "gpt2-small" in repr(r)


def test_keyword_options_become_the_command_line_options(tmp_path):
    r = roofline.analyze("gpt2-small", mode="training", batch=2, seq=128, fuse=True, recompute="selective",
                         master_weights=False)
    out = tmp_path / "cli.json"
    exe("analyze", "gpt2-small", "--mode", "training", "--batch", 2, "--seq", 128, "--fuse", "--recompute", "selective",
        "--master-weights", "off", "-q", "-o", out)
    assert r.to_json() == out.read_text()
    assert r["settings"]["fuse"] is True and r["settings"]["recompute"] == "selective"
    assert r["settings"]["master_weights"] is False
    assert r["model"]["dims"]["batch"] == 2 and r["model"]["dims"]["seq"] == 128


def test_a_model_dict_is_analysed_as_its_file():
    with open(MLP, encoding="utf-8") as f:
        doc = json.load(f)
    from_dict = roofline.analyze(doc, hw="a100-sxm-80gb")
    from_file = roofline.analyze(MLP, hw="a100-sxm-80gb")
    assert from_dict.totals == from_file.totals
    assert from_dict.ops == from_file.ops


def test_html_is_the_command_lines_and_the_notebook_shows_it(gpt2_training, tmp_path):
    out = tmp_path / "cli.html"
    exe("analyze", "gpt2-small", "--hw", "h100-sxm", "--mode", "training", "-q", "--html", out)
    page = gpt2_training.to_html()
    assert page == out.read_text()
    assert '<svg class="roofline"' in page  # the roofline chart (reports/html.hpp)
    # _repr_html_ (what Jupyter calls): the page in an iframe's srcdoc, escaped; unescaped it is the page.
    shown = gpt2_training._repr_html_()
    m = re.fullmatch(r'<iframe [^>]*srcdoc="([^"]*)"></iframe>', shown, re.S)
    assert m, shown[:200]
    assert html.unescape(m.group(1)) == page


def test_csv_and_trace_views(gpt2_training, tmp_path):
    csv_path, trace_path = tmp_path / "r.csv", tmp_path / "r.trace.json"
    exe("analyze", "gpt2-small", "--hw", "h100-sxm", "--mode", "training", "-q", "--csv", csv_path)
    assert gpt2_training.to_csv() == csv_path.read_text()
    written = tmp_path / "py.json"
    gpt2_training.to_json(written)
    assert written.read_text() == gpt2_training.to_json()
    trace = json.loads(gpt2_training.to_trace(trace_path))
    assert trace == json.loads(trace_path.read_text())


def test_to_pandas_has_one_row_per_op(gpt2_training):
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            gpt2_training.to_pandas()
        return
    df = gpt2_training.to_pandas()
    assert len(df) == len(gpt2_training.ops)
    assert int(df["work.flops"].sum()) == gpt2_training.totals["flops"]


def test_bad_model_raises_input_error_with_the_command_lines_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({
        "format": "roofline-model/1", "name": "bad",
        "inputs": [{"name": "x", "shape": [4, 8]}], "parameters": [{"name": "w", "shape": [16, 9]}],
        "nodes": [{"name": "fc", "op": "linear", "inputs": ["x", "w"]}], "outputs": ["fc"]}))
    cli = exe("analyze", bad, "-q", check=False)
    assert cli.returncode == 2
    message = cli.stderr.strip().removeprefix("roofline: error: ")
    assert str(bad) in message and "/nodes/0" in message  # the file and the JSON path of the node
    with pytest.raises(roofline.InputError) as e:
        roofline.analyze(str(bad))
    assert str(e.value) == message
    assert isinstance(e.value, ValueError)


def test_usage_errors_raise_input_error():
    with pytest.raises(roofline.InputError, match="nope"):
        roofline.analyze("gpt2-small", hw="nope")
    with pytest.raises(roofline.InputError, match="--frobnicate"):
        roofline.analyze("gpt2-small", frobnicate=1)
    with pytest.raises(roofline.InputError, match="unknown command 'frobnicate'"):
        roofline.cli("frobnicate")
    with pytest.raises(TypeError, match="model"):
        roofline.analyze(42)


def test_hw_list_and_show_are_the_catalogs():
    names = roofline.hw.list()
    listed = exe("hw", "list").stdout
    assert "h100-sxm" in names and "tpu-v5e" in names
    for name in names + roofline.hw.clusters():
        assert re.search(rf"^\s*{re.escape(name)}\s", listed, re.M), name
    assert roofline.hw.show("h100-sxm") == json.loads(exe("hw", "show", "h100-sxm", "--json").stdout)
    assert roofline.hw.show("dgx-a100", text=True) == exe("hw", "show", "dgx-a100").stdout


def test_plan_and_the_other_commands(tmp_path):
    out = tmp_path / "plan.json"
    p = roofline.plan(MLP, memory_budget="1GiB")
    exe("plan", MLP, "--memory-budget", "1GiB", "-q", "-o", out)
    assert p.to_json() == out.read_text()
    assert p.schema == "roofline-plan/1"
    assert "<svg" in p.to_html()
    assert roofline.models.list() == exe("model", "list").stdout
    exported = roofline.export_model("gpt2-small", batch=2, seq=64)
    assert exported["format"] == "roofline-model/1"
    assert roofline.analyze(exported).totals == roofline.analyze("gpt2-small", batch=2, seq=64).totals


def test_the_gil_is_released_while_a_command_runs():
    # A Python thread keeps running while another thread's command runs in C++: the main thread
    # stamps the time every millisecond, and stamps fall inside the native call's window. With the
    # GIL held through the call none could (a stamp is Python code); the call must last long enough
    # (>= 50 ms, a search of 64 GPUs takes ~0.3 s) for a handful of stamps to be certain.
    window = []

    def work():
        start = time.perf_counter()
        roofline._roofline.run_cli(["search", "gpt2-xl", "--gpus", "64", "--cluster", "dgx-a100", "--global-batch", "512",
                                    "--jobs", "1", "-q"])
        window.append((start, time.perf_counter()))

    worker = threading.Thread(target=work)
    stamps = []
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    start, end = window[0]
    assert end - start >= 0.05
    inside = sum(start < s < end for s in stamps)
    assert inside >= 5, (inside, end - start)


def test_python_m_roofline_is_the_command_line():
    env = dict(os.environ)
    ran = subprocess.run([sys.executable, "-m", "roofline", "--version"], capture_output=True, text=True, env=env)
    assert ran.returncode == 0
    assert ran.stdout == exe("--version").stdout
    bad = subprocess.run([sys.executable, "-m", "roofline", "analyze", "gpt2-small", "--hw", "nope"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr == exe("analyze", "gpt2-small", "--hw", "nope", check=False).stderr
    assert roofline.__version__ in ran.stdout


def test_the_example_notebook_is_cleared_and_runs():
    # examples/roofline.ipynb (README, "Python"): committed without outputs, and its code runs as
    # written, cell by cell in one namespace; a cell that needs pandas or torch runs where they are
    # installed.
    with open(os.path.join(SRC, "examples", "roofline.ipynb"), encoding="utf-8") as f:
        nb = json.load(f)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    have = {}
    for module in ("pandas", "torch"):
        try:
            __import__(module)
            have[module] = True
        except ImportError:
            have[module] = False
    namespace = {}
    for cell in code:
        source = "".join(cell["source"])
        if ("to_pandas" in source and not have["pandas"]) or ("import torch" in source and not have["torch"]):
            continue
        exec(compile(source, "roofline.ipynb", "exec"), namespace)
    assert isinstance(namespace["report"], roofline.Report) and namespace["plan"].schema == "roofline-plan/1"
