"""A check kit for Transformer implementations, and the tutorial bugs it catches.

Most people who learn the Transformer write one, and the usual bugs of a from-scratch
implementation pass its shape tests: a positional encoding with one frequency, a causal
mask off by one, heads split without the transpose, targets that are not shifted. The kit
checks the properties the paper requires, on any model wrapped in a small
:class:`ModelAdapter`, and says what it measured and which bugs typically break a failed
property.

    from transformer_lib.pipeline.check_kit import run_checks, tiny_model
    report = run_checks(tiny_model("encoder-decoder"))  # or run_checks(ModelAdapter(...))
    print(report)            # a readable text report; a notebook shows a table
    report.passed, report.failures, report.to_dict()

The library's own ``Transformer`` and ``DecoderOnlyTransformer`` and
:class:`TorchTransformerModel` (``torch.nn.Transformer`` with embeddings and an output
layer) have ready-made adapters (:func:`adapt`). :mod:`.planting` plants the tutorial bugs
in the library, one override at a time (``with plant("single_frequency_pe"): ...``), each
with the check that catches it. From the shell: ``python -m transformer_lib check
MODULE:FACTORY`` (:mod:`transformer_lib.pipeline.check_command`).

Modules: ``adapter`` (the contract), ``library`` and ``torch_model`` (ready-made adapters),
``registry`` (the list of checks), ``checks_model``, ``checks_decoding``,
``checks_training`` (the checks), ``runner``, ``results`` (the report), ``planting``,
``bugs_model`` and ``bugs_training`` (the planted bugs).
"""

from .adapter import ARCHS, OPTIONAL_PARTS, LossBatch, ModelAdapter
from .library import adapt, tiny_model
from .planting import PLANTED_BUGS, PlantedBug, check_planted, plant
from .registry import CHECKS
from .results import Cause, CheckReport, CheckResult
from .runner import check_names, run_checks
from .torch_model import TorchTransformerModel, torch_adapter

__all__ = [
    "ARCHS",
    "CHECKS",
    "OPTIONAL_PARTS",
    "PLANTED_BUGS",
    "Cause",
    "CheckReport",
    "CheckResult",
    "LossBatch",
    "ModelAdapter",
    "PlantedBug",
    "TorchTransformerModel",
    "adapt",
    "check_names",
    "check_planted",
    "plant",
    "run_checks",
    "tiny_model",
    "torch_adapter",
]
