"""The hardware catalog: roofline.hw.list(), roofline.hw.clusters(), roofline.hw.show(name)."""
import json

from . import _roofline
from ._api import cli


def list():  # noqa: A001 - roofline.hw.list() as issue #22 names it, like `roofline hw list`
    """The built-in hardware specs' names (`--hw NAME`), as `roofline hw list` lists them."""
    return _roofline.hardware_names()


def clusters():
    """The built-in clusters' names (`--cluster NAME`)."""
    return _roofline.cluster_names()


def show(name, text=False):
    """A spec (built-in name or spec file) or a cluster: as `roofline hw show NAME --json` prints it
    (a dict: every value with its source, the ridge points), or with text=True its text."""
    if text:
        return cli("hw", "show", str(name))
    return json.loads(cli("hw", "show", str(name), "--json"))
