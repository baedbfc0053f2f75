"""Interactive explorers: move a slider or type a sentence and watch attention change.

Every explorer comes in two versions that look alike:

* **live**, when a Python kernel runs (Jupyter, Colab): each control calls back into
  Python, which recomputes and redraws, so any value and any sentence works;
* **static**, for the HTML book, which has no kernel: a finite set of states is computed
  when the book is built, each one a small PNG, stacked in a ``widgets.Stack``. The
  controls are tied to the stack's ``selected_index`` with ``widgets.jslink``, so the
  browser switches frames by itself. Two or three controls use nested stacks.

Both are assembled by :mod:`~transformer_lib.views.explorers.frames`, and
:func:`static_mode` chooses the version: the book build sets ``TRANSFORMER_BOOK_STATIC=1``.
Every explorer also takes ``static=True`` or ``static=False`` to force one. Static explorers
carry the CSS class ``static-explorer``, live ones ``live-explorer``.

==========================================  ==========================================
Chapter                                     Explorer (module)
==========================================  ==========================================
1 Why attention?                            :func:`layer_cost_explorer` (``layer_cost``)
2 Tokens and embeddings                     :func:`bpe_merges_explorer` (``bpe_merges``),
                                            :func:`embedding_scale_explorer`
                                            (``embedding_scale``)
3 Scaled dot-product attention              :func:`temperature_explorer` (``temperature``)
4 Multi-head attention                      :func:`head_explorer` (``heads``)
5 Positional encoding                       :func:`positional_encoding_explorer`
                                            (``positions``)
6 Masks                                     :func:`mask_explorer` (``masks``)
7 Feed-forward and layer norm               :func:`norm_warmup_explorer` (``norm_warmup``)
8 The encoder–decoder                       :func:`parameter_explorer` (``parameters``)
9 Training                                  :func:`lr_schedule_explorer` (``lr_schedule``),
                                            :func:`training_snapshots_explorer`
                                            (``training_snapshots``)
10 Decoding and evaluation                  :func:`beam_explorer` (``beam``)
11 Inside the trained model                 :func:`attention_explorer` (``attention``),
                                            :func:`head_ablation_explorer` (``ablation``)
12 Decoder-only                             :func:`sampling_explorer` (``sampling``)
13 Where to go next                         :func:`kv_cache_explorer` (``kv_cache``)
==========================================  ==========================================

The explorers of chapters 4 and 11 share ``model_runs`` (a sentence through the model, heads
switched off) and ``head_grid`` (attention maps drawn with Pillow, fast enough for live
redraws).

A live explorer is an ``ipywidgets.VBox`` with a few extra attributes, handy in tests and
for readers who want to drive it from code: ``controls`` (name → widget), ``image`` (the
``widgets.Image`` it draws into), ``message`` (a ``widgets.HTML`` for notes and input
problems), ``update()`` (redraw from the current control values) and ``last_error()`` (the
exception behind the last "Could not update" message, if any). A static explorer has
``controls``, ``stack`` (the outer ``widgets.Stack``), ``frame_count`` and ``links`` (the
``jslink`` widgets).

Importing this package loads neither ipywidgets nor matplotlib: ipywidgets is imported when
an explorer is built, matplotlib when a figure is drawn. Figures follow
:mod:`transformer_lib.views.style`: rows are queries, columns are keys, colour-blind-safe
maps.
"""

from .ablation import head_ablation_explorer
from .attention import attention_explorer
from .beam import beam_explorer
from .bpe_merges import bpe_merges_explorer
from .embedding_scale import embedding_scale_explorer
from .frames import KERNEL_NOTE, STATIC_ENV_VAR, figure_to_png, static_mode
from .heads import head_explorer
from .kv_cache import kv_cache_explorer
from .layer_cost import layer_cost_explorer
from .lr_schedule import lr_schedule_explorer
from .masks import mask_explorer
from .model_runs import EXAMPLE_SENTENCES
from .norm_warmup import norm_warmup_explorer
from .parameters import parameter_explorer
from .positions import positional_encoding_explorer
from .sampling import sampling_explorer
from .temperature import temperature_explorer
from .training_snapshots import training_snapshots_explorer

__all__ = [
    "EXAMPLE_SENTENCES",
    "KERNEL_NOTE",
    "STATIC_ENV_VAR",
    "attention_explorer",
    "beam_explorer",
    "bpe_merges_explorer",
    "embedding_scale_explorer",
    "figure_to_png",
    "head_ablation_explorer",
    "head_explorer",
    "kv_cache_explorer",
    "layer_cost_explorer",
    "lr_schedule_explorer",
    "mask_explorer",
    "norm_warmup_explorer",
    "parameter_explorer",
    "positional_encoding_explorer",
    "sampling_explorer",
    "static_mode",
    "temperature_explorer",
    "training_snapshots_explorer",
]
