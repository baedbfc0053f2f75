"""The book's presentation layer: figures, interactive explorers, attention views.

Nothing in :mod:`transformer_lib.components` or :mod:`transformer_lib.pipeline` imports
this package, and ``import transformer_lib`` does not load it; importing this package
itself loads no plotting or widget library. Import from the module that draws what you
need:

==========================  ===============================================================
Module                      What it draws (chapters)
==========================  ===============================================================
``style``                   colour maps, the Okabe-Ito palette, font sizes and the helpers
                            every figure shares (rows are queries, columns are keys), one
                            colour per layer type and per scaled/unscaled score
``architecture``            :func:`plot_architecture`, the paper's Figure 1 (1, 8)
``attention_diagrams``      :func:`plot_attention_diagram`, the paper's Figure 2 (3, 4)
``connectivity``            :func:`plot_connectivity`, who reaches whom in one layer (1)
``projections``             :func:`plot_projections`, X times W^Q, W^K, W^V;
                            :func:`plot_weighted_sum`, weights times values (3)
``head_split``              :func:`plot_head_split`, the split into heads and back (4)
``curves``                  :func:`plot_curves` for measured curves (1, 3, 7, 9, 10, 13);
                            :func:`plot_recurrence_vs_attention` (1);
                            :func:`plot_dot_product_variance`,
                            :func:`plot_softmax_saturation` (3)
``embeddings``              :func:`plot_length_histogram`, :func:`plot_embedding_norms` (2)
``attention_maps``          :func:`plot_attention` (3), :func:`plot_attention_heads` (4, 8),
                            :func:`plot_attention_layers_heads`,
                            :func:`plot_head_importance`, :func:`plot_head_statistics`,
                            :func:`plot_attention_alignment` (11)
``attention_norms``         :func:`plot_norm_weighted_attention`, attention weighted by
                            the size of what each key sends (11)
``positions``               :func:`plot_positional_encoding`, :func:`plot_sinusoids`,
                            :func:`plot_position_similarity`,
                            :func:`plot_position_rotation` (5)
``masks``                   :func:`plot_mask` (6, 12)
``decoder_only``            :func:`plot_loss_mask`, :func:`plot_mask_pair`,
                            :func:`plot_next_token_distribution`,
                            :func:`plot_self_vs_cross_attention` (12)
``decoder_only_diagram``    :func:`plot_decoder_only_diagram`, what it keeps (12)
``layer_norm``              :func:`plot_layer_norm_effect`, :func:`plot_norm_axes` (7)
``families``                :func:`plot_family_masks`, the three families' masks;
                            :func:`plot_paper_vs_modern_layer`, 2017 beside today (14)
``ffn_diagram``             :func:`plot_ffn_block`, the position-wise feed-forward block
                            (7)
``ffn_memories``            :func:`ffn_memories`, a decoder FFN's units read as keys and
                            values (7)
``training_curves``         :func:`plot_lr_schedule`, :func:`plot_label_smoothing`,
                            :func:`plot_training_log` (9)
``beam_search``             :func:`plot_beam_search` (10)
``kv_cache``                :func:`plot_kv_cache` (10)
``explorers``               sliders and text boxes that keep working in the static HTML
                            book: one module per explorer, and ``explorers.frames`` for the
                            live and precomputed machinery (1–6, 9, 11, 12)
``bertviz_views``           bertviz's head and model views, made to work offline (11)
``notebook``                :func:`show_source` (key lines, the whole source in a labelled
                            fold), :func:`setup_notebook`, :func:`markdown_table` for the
                            chapter notebooks
``training_step_exercise``  :func:`check_training_step`, the checker of chapter 9's
                            write-the-training-step exercise
``self_check``              :func:`self_check`, the multiple-choice questions that end
                            every chapter, checked in the page without a kernel
==========================  ===============================================================

Example::

    from transformer_lib.views.attention_maps import plot_attention_heads
    from transformer_lib.views.explorers import attention_explorer
    from transformer_lib.views.self_check import Choice, Question, self_check
"""
