"""The built-in model templates: roofline.models.list(), roofline.models.export(name)."""
from ._api import cli, export_model


def list():  # noqa: A001 - like `roofline model list`
    """The text of `roofline model list`: the templates and the Hugging Face presets."""
    return cli("model", "list")


def export(model, **options):
    """A model as its roofline-model/1 document (a dict), as `roofline model export` writes it."""
    return export_model(model, **options)
