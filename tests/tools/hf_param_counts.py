#!/usr/bin/env python3
"""Independent parameter counts for the Hugging Face fixtures of tests/data/hf/ (the numbers
tests/unit/hf_families_test.cpp checks exactly).

Each config.json is instantiated as its transformers model class on the meta device
(accelerate.init_empty_weights: no memory, no weights) and its parameters counted with
model.num_parameters() (tied weights once). Not run by ctest; rerun by hand:

    python3 -m venv --system-site-packages /tmp/venv-hf     # Debian's python3-torch 1.13
    /tmp/venv-hf/bin/pip install transformers==4.40.2 accelerate==0.27.2
    /tmp/venv-hf/bin/python tests/tools/hf_param_counts.py [--real] [folder ...]

--real builds the models with real (random) weights on the CPU instead: for small models, and for
BERT's and DeBERTa-v2's MLM heads, whose decoder bias the meta device unties (counting it twice).

transformers 4.40.2 is the first release that knows qwen2_moe and still runs on torch 1.13; phi3
needs 4.41.2 (same command with transformers==4.41.2; it gives the same counts for the others).
"""
import json
import os
import sys

import transformers
from accelerate import init_empty_weights

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "hf")


def count(folder, real=False):
    with open(os.path.join(DATA, folder, "config.json")) as f:
        cfg_dict = json.load(f)
    cfg = transformers.AutoConfig.for_model(**cfg_dict)
    arch = (cfg_dict.get("architectures") or [None])[0]
    arch = {"T5WithLMHeadModel": "T5ForConditionalGeneration"}.get(arch, arch)  # the old name of the class
    cls = getattr(transformers, arch) if arch else transformers.AutoModelForCausalLM
    if real:
        model = cls(cfg) if arch else cls.from_config(cfg)
    else:
        with init_empty_weights():
            model = cls(cfg) if arch else cls.from_config(cfg)
    # from_pretrained ties the output embedding to the input one; a bare constructor under
    # init_empty_weights leaves them apart, so tie as loading would.
    model.tie_weights()
    return type(model).__name__, model.num_parameters()


def main(argv):
    real = "--real" in argv
    argv = [a for a in argv if a != "--real"]
    folders = argv or sorted(d for d in os.listdir(DATA) if os.path.isfile(os.path.join(DATA, d, "config.json")))
    print(f"transformers {transformers.__version__}")
    for folder in folders:
        try:
            cls, n = count(folder, real)
            print(f"{folder:32s} {cls:36s} {n:>16,d}")
        except Exception as e:  # a family this transformers does not know
            print(f"{folder:32s} error: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
