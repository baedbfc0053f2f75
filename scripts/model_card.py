"""Write ``data/MODEL_CARD.md`` and the README's "shipped models" paragraph from the data.

Every number in them comes from the shipped files: the checkpoints' own training state,
``data/averaging.json`` and ``data/head_to_head.json`` (both measured by their scripts),
the corpus split computed here, and translations made here by the shipped models. So
the card cannot drift from the models: ``tests/test_model_card.py`` renders both again
and compares.

    python scripts/model_card.py           # rewrite both
    python scripts/model_card.py --check   # exit 1 if either is out of date
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CARD = ROOT / "data" / "MODEL_CARD.md"
README = ROOT / "README.md"
README_START = "<!-- shipped-models: written by scripts/model_card.py -->"
README_END = "<!-- /shipped-models -->"

EXAMPLES = (
    "Tom is lazy.",
    "I am tired.",
    "We have to go now.",
    "She doesn't like coffee.",
    "Can you help me?",
    "My brother bought a new car yesterday.",
    "The children are playing in the garden.",
    "The cat is sleeping on the sofa.",
    "Where is the station?",
    "Mary is reading a book in the garden.",
)
LONG = "Although it was raining heavily, the children played football in the park all afternoon."
OUTSIDE = "Tom is lean and tall."


def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def _split_facts() -> dict:
    from transformer_lib.pipeline.corpus import (
        find_corpus,
        pair_groups,
        read_pairs,
        split_overlap,
        split_pairs,
    )

    pairs, _ = read_pairs(find_corpus())
    splits = split_pairs(pairs)
    groups = pair_groups(pairs)
    sizes: dict[int, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    old = split_pairs(pairs, by="english")
    train_de = {de for _, de in old["train"]}
    leaked = sum(de in train_de for _, de in old["test"])
    return {
        "lines": len(pairs),
        "splits": {k: len(v) for k, v in splits.items()},
        "test_sources": len({en for en, _ in splits["test"]}),
        "groups": len(sizes),
        "largest_group": max(sizes.values()),
        "overlap": sum(len(v) for sides in split_overlap(splits).values() for v in sides.values()),
        "old_test": len(old["test"]),
        "old_leaked": leaked,
        "test": splits["test"],
        "valid": splits["valid"],
    }


def _training(state: dict) -> dict:
    from transformer_lib.pipeline.training import split_log

    train, val = split_log(state["log"])
    speeds = [e["tokens_per_s"] for e in train if e.get("tokens_per_s")]
    cfg = state["training_config"]
    return {
        "steps": state["step"],
        "epochs": state.get("epoch", 0),  # complete passes over the training data
        "tokens_m": state["tokens_seen"] / 1e6,
        "cpu_min": state["cpu_s"] / 60,
        "wall_min": state["elapsed_s"] / 60,
        "median_speed": statistics.median(speeds),
        "min_speed": min(speeds),
        "max_speed": max(speeds),
        "train_loss": train[-1]["loss"],
        "val_loss": val[-1]["val_loss"],
        "val_ppl": val[-1]["val_ppl"],
        "final_lr": train[-1]["lr"],
        "warmup": cfg["warmup"],
        "factor": cfg["lr_factor"],
        "max_tokens": cfg["max_tokens"],
        "averaged": [e["step"] for e in state.get("averaged_from", [])],
    }


def _both(outputs: tuple[str, str]) -> str:
    """``"X" (greedy and beam)``, or ``"X" (greedy) and "Y" (beam 4)`` when they differ."""
    greedy, beam = outputs
    if greedy == beam:
        return f'"{greedy}" (greedy and beam 4)'
    return f'"{greedy}" (greedy) and "{beam}" (beam 4)'


def _reflow(markdown: str, width: int = 90) -> str:
    """Refill plain paragraphs and list items; tables, code, quotes and headings as given."""
    import textwrap

    out, in_code = [], False
    for block in markdown.split("\n\n"):
        lines = block.split("\n")
        if block.count("```") % 2:
            in_code = not in_code
            out.append(block)
            continue
        if in_code or lines[0].startswith(("|", "```", "    ", ">", "#", "<")):
            out.append(block)
            continue
        items, current = [], []
        for line in lines:  # list items start a new piece
            if line.startswith("- ") and current:
                items.append(current)
                current = []
            current.append(line.strip())
        items.append(current)
        filled = []
        for item in items:
            text = " ".join(item)
            indent = "  " if text.startswith("- ") else ""
            filled.append(textwrap.fill(text, width, subsequent_indent=indent,
                                        break_on_hyphens=False, break_long_words=False))  # fmt: skip
        out.append("\n".join(filled))
    return "\n\n".join(out)


def _shipped_lm(data: Path, name: str, load) -> tuple[Path, dict, object, dict]:
    """A small language model's checkpoint ``data/<name>.pt``: its path, the JSON written
    with it, the model (``load`` reads it) and its training state."""
    path = data / f"{name}.pt"
    r = json.loads((data / f"{name}.json").read_text(encoding="utf-8"))
    model, ckpt = load(path)
    return path, r, model, ckpt["state"]


def _lm_table(header: list[str], baselines: dict[str, str], cells) -> str:
    """A Markdown table: the model's row, then a row per baseline (name: label); ``cells``
    gives a row's numbers from its name."""
    labels = {"model": "**the model**", **baselines}
    return "\n".join(
        [
            _row(*header),
            _row(*["---"] * len(header)),
            *[_row(label, *cells(name)) for name, label in labels.items()],
        ]
    )


def _file_facts(r: dict, path: Path) -> str:
    """The parameters and the size of a small model's file, up to "Load it with"."""
    return f"""{_n(r["parameters"])} parameters; the file is {path.stat().st_size / 1e6:.1f} MB (fp32
weights, config, tokenizer sha256 and the training log). Load it with"""


def _training_recipe(name: str, r: dict, st: dict, dropout: float) -> str:
    """The command that trained a small model and its recipe, from its training state."""
    tc = st["training_config"]
    return f"""```bash
python scripts/{name}_train.py    # writes data/{name}.pt and data/{name}.json
```

for {_n(st["step"])} steps of {tc["batch"]} sentences ({r["training"]["epochs"]:.0f} passes),
Adam (β2 0.98), peak learning rate {tc["lr"]:g} after {tc["warmup"]} warm-up steps, cosine
decay to a tenth, dropout {dropout}, gradient norm clipped at 1.0, seed {tc["seed"]}, in
{st["cpu_s"] / 60:.1f} CPU-minutes (one torch thread)."""


def _masked_lm_section(data: Path) -> str:
    """The card's part on chapter 14's masked language model, from its checkpoint and the
    JSON that ``scripts/masked_lm_train.py`` wrote with it."""
    from transformer_lib.pipeline.masked_lm import load_masked_lm

    path, r, model, st = _shipped_lm(data, "masked_lm", load_masked_lm)
    c, t = model.config, r["test"]

    def pct(name: str, key: str) -> str:
        return f"{100 * t[name][key]:.1f} %"

    table = _lm_table(
        ["guess", "top-1, all tokens", "top-5, all tokens", "top-1, words", "top-5, words"],
        {
            "bigram": "bigram: the tokens that most often follow the left neighbour",
            "unigram": "unigram: the most frequent training tokens",
        },
        lambda name: [
            pct(name, k) for k in ("top1_acc", "top5_acc", "word_top1_acc", "word_top5_acc")
        ],
    )
    return f"""## The masked language model (`data/masked_lm.pt`)

Chapter 14's encoder-only (BERT-style) model, which restores a hidden token: the library's
encoder stack, {c.n_encoder_layers} post-LN layers (d_model {c.d_model}, {c.n_heads} heads,
d_ff {c.d_ff}) with only a padding mask, so that every position reads the whole sentence
both ways; sinusoidal positions; the output layer tied to the embedding. Its vocabulary is
the shipped tokenizer's {c.vocab_size - 1:,} tokens plus `[MASK]` (id {model.mask_id:,});
{_file_facts(r, path)}
`transformer_lib.pipeline.masked_lm.load_masked_lm()`.

It read the {_n(st["train_sentences"])} distinct English sentences of the same training
split (the German side is not used), each between `<bos>` and `<eos>`, and was trained by

{_training_recipe("masked_lm", r, st, c.dropout)} Each step draws new masks with
`mask_tokens` (BERT's rule: 15 % of the tokens picked, of those 80 % `[MASK]`, 10 % a random
token, 10 % kept), and the loss is the cross-entropy at the picked positions only.

Measured on the {_n(t["sentences"])} distinct English sentences of the test split, each of
their {_n(t["model"]["tokens"])} tokens hidden behind `[MASK]` once, alone
([`masked_lm.json`](masked_lm.json)); "words" are the {_n(t["model"]["word_tokens"])} tokens
that hold a letter (punctuation left out), where each baseline guesses among such tokens
only:

{table}

It fills one token at a time from its context, and it has read nothing but these short,
everyday English sentences; a word of several tokens needs as many `[MASK]`s, and it does
not write text. It was not fine-tuned for any task, and nothing was measured beyond the
table above."""


def _english_lm_section(data: Path) -> str:
    """The card's part on chapter 12's English language model, from its checkpoint and the
    JSON that ``scripts/english_lm_train.py`` wrote with it."""
    from transformer_lib.pipeline.english_lm import load_english_lm

    path, r, model, st = _shipped_lm(data, "english_lm", load_english_lm)
    c, ppl, n = model.config, r["perplexity"], r["samples"]["counts"]
    table = _lm_table(
        ["model", "perplexity, validation", "perplexity, test"],
        {
            "bigram": f"bigram, interpolated with the unigram (λ = {ppl['bigram_lambda']:g})",
            "unigram": "unigram, add-one smoothing",
        },
        lambda name: [f"{ppl['valid'][name]:.2f}", f"{ppl['test'][name]:.2f}"],
    )
    return f"""## The English language model (`data/english_lm.pt`)

Chapter 12's small causal language model of English: the library's
`DecoderOnlyTransformer`, {c.n_decoder_layers} post-LN blocks (d_model {c.d_model},
{c.n_heads} heads, d_ff {c.d_ff}) under a causal mask, sinusoidal positions, the output layer
tied to the embedding, the shipped tokenizer's {c.vocab_size:,} tokens;
{_file_facts(r, path)}
`transformer_lib.pipeline.english_lm.load_english_lm()`, sample with `write_sentences()`.

Unlike the decoder-only translator, whose loss covers only the German, it was trained as GPT
is: each sequence is `<bos> sentence <eos>` and every next-token prediction counts. It read
the {_n(st["train_sentences"])} distinct English sentences of the same training split (the
German side is not used) and was trained by

{_training_recipe("english_lm", r, st, c.dropout)}

Perplexity per token (the sentence's tokens and `<eos>`) on the
{_n(ppl["valid"]["sentences"])} and {_n(ppl["test"]["sentences"])} distinct English sentences
of the validation and test splits ([`english_lm.json`](english_lm.json)), against two
baselines counted on the same training sentences (the bigram's weight picked on the
validation split):

{table}

Of {sum(n.values())} sentences it sampled from `<bos>` (temperature 0.7, top-p 0.9, seeds 0
to {sum(n.values()) - 1}, stored in the JSON), {n["train"]} are verbatim sentences of the
training split, {n["held-out"]} are sentences of the validation or test split, and
{n["new"]} occur nowhere in the corpus. Whether the new ones are grammatical was not
measured. It writes one short, everyday sentence and stops; it knows nothing beyond such
sentences, was not trained to follow instructions, and nothing was measured beyond the
numbers above."""


def _row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def render() -> tuple[str, str]:
    """The model card and the README paragraph, from the shipped files."""
    import torch

    from transformer_lib import count_parameters, load_pretrained
    from transformer_lib.pipeline.corpus import SHIPPED_CORPUS, corpus_sha256
    from transformer_lib.pipeline.objectives import noam_lr
    from transformer_lib.pipeline.pretrained import DEFAULT_CHECKPOINT, DEFAULT_DECODER_ONLY

    torch.set_num_threads(1)
    data = ROOT / "data"
    h2h = json.loads((data / "head_to_head.json").read_text(encoding="utf-8"))
    avg = json.loads((data / "averaging.json").read_text(encoding="utf-8"))
    ed_m, do_m = h2h["models"]["encoder-decoder"], h2h["models"]["decoder-only"]
    translator = load_pretrained(DEFAULT_CHECKPOINT)
    gpt = load_pretrained(DEFAULT_DECODER_ONLY)
    c = translator.config
    tr, dt = _training(translator.training_state), _training(gpt.training_state)
    s = _split_facts()
    sha = corpus_sha256(SHIPPED_CORPUS)
    size_mb = DEFAULT_CHECKPOINT.stat().st_size / 1e6
    gpt_mb = DEFAULT_DECODER_ONLY.stat().st_size / 1e6
    mlm = json.loads((data / "masked_lm.json").read_text(encoding="utf-8"))
    mlm_mb = (data / "masked_lm.pt").stat().st_size / 1e6
    elm = json.loads((data / "english_lm.json").read_text(encoding="utf-8"))
    elm_mb = (data / "english_lm.pt").stat().st_size / 1e6
    elm_ppl = elm["perplexity"]["test"]
    peak = noam_lr(tr["warmup"], c.d_model, tr["warmup"], tr["factor"])
    greedy, beam = ed_m["greedy"], ed_m["beam4"]
    sig = greedy["signatures"]

    def both(text: str) -> tuple[str, str]:
        return translator.translate(text), translator.translate(text, beam=4)

    examples = [(e, *both(e)) for e in EXAMPLES]
    station, garden = both("Where is the station?"), both("Mary is reading a book in the garden.")
    sofa = both("The cat is sleeping on the sofa.")
    long_out, lean = both(LONG), both(OUTSIDE)
    avg_steps = f"{tr['averaged'][0]:,}–{tr['averaged'][-1]:,}"
    last, mean = avg["last_checkpoint"], avg["averaged"]

    card = f"""# Model card: the book's tiny English→German Transformer (`data/model.pt`)

A small encoder–decoder Transformer ("Attention Is All You Need", Vaswani et al., 2017),
built with `transformer_lib` and trained on a 2-core CPU in {tr["cpu_min"]:.0f} CPU-minutes,
from the corpus that ships in `data/`. It is the translator used in chapters 9–11 of the
book. It is a teaching model: it translates short, everyday sentences like the ones it
was trained on, and little else. Its decoder-only counterpart, `data/decoder_only.pt`,
chapter 12's small English language model, `data/english_lm.pt`, and chapter 14's small
masked language model, `data/masked_lm.pt`, are described at the end.

```python
from transformer_lib import load_pretrained

translator = load_pretrained()  # data/model.pt, with its tokenizer inside
translator.translate("Tom is lazy.")  # {examples[0][1]!r}
translator.translate(["I am tired.", "It's raining."], beam=4)
```

```bash
python -m transformer_lib translate "Tom is lazy."
python -m transformer_lib evaluate --split test --beam 4
```

This card is written by `scripts/model_card.py` from the shipped files, and a test
checks that it is current.

## Data and licence

Trained on English–German sentence pairs from the **Tatoeba Project**
(<https://tatoeba.org>), as distributed by <https://www.manythings.org/anki/>
(`deu-eng.zip`, file `deu.txt`):

> Sentence pairs from the Tatoeba Project (tatoeba.org), CC-BY 2.0 FR,
> via manythings.org/anki (deu-eng). Sentence authors are listed on tatoeba.org.

Licence: CC-BY 2.0 France. The weights are a derived work and carry the same
attribution; see [ATTRIBUTION.md](ATTRIBUTION.md). The exact corpus file ships as
`data/deu.txt.gz` ({_n(s["lines"])} lines, sha256 of the decompressed file
`{sha[:8]}…{sha[-7:]}`: short sentences, English 1–7 words), so the run below can be
repeated from the repository alone.

**The split.** `transformer_lib.pipeline.corpus.split_pairs` (valid 2.5 %, test 2.5 %)
keeps every sentence in one split. Tatoeba often gives one German sentence to several
English ones ("Get out!" and "Leave immediately." are both "Raus!"), and lists near-copies
that differ only in case or final punctuation ("Get out!" and "Get out."), so pairs that share an English *or* a German sentence, after
Unicode NFC, case-folding and stripping the final punctuation, form one group
({_n(s["groups"])} groups, the largest {s["largest_group"]} pairs), and each whole group goes
to one split by a SHA-256 hash of its smallest normalised English sentence. The result:
**{_n(s["splits"]["train"])} training pairs**, {_n(s["splits"]["valid"])} validation pairs,
and a test split of {_n(s["splits"]["test"])} pairs covering {_n(s["test_sources"])} distinct
English sentences. No normalised English or German sentence of the validation or test split
occurs in training, nor one of the test split in validation ({s["overlap"]} shared; a test
checks it), and the tokenizer was trained on the training split only. (The book's earlier
split hashed the English sentence alone: {s["old_leaked"]} of its {_n(s["old_test"])} test
pairs had a German reference that was, verbatim, a training target.)

## Model

| | |
| --- | --- |
| Architecture | post-LN encoder–decoder Transformer, sinusoidal positions, tied source/target/output embeddings (§3.4) |
| Config | `TransformerConfig.tiny({c.vocab_size})`: d_model {c.d_model}, {c.n_heads} heads, d_ff {c.d_ff}, {c.n_encoder_layers} encoder + {c.n_decoder_layers} decoder layers, dropout {c.dropout}, max_len {c.max_len} |
| Parameters | {_n(count_parameters(translator.model))} (tied weights counted once) |
| Tokenizer | shared English+German BPE, {_n(c.vocab_size)} tokens, specials `<pad>` `<unk>` `<bos>` `<eos>` `<sep>` (`data/tokenizer.json`, embedded in the checkpoint with its sha256; `<sep>` is used by the decoder-only model only) |
| File | `data/model.pt`, {size_mb:.1f} MB: fp32 weights (the average of the last {len(tr["averaged"])} checkpoints), config, tokenizer, training state and log; no optimiser state. Loads with `torch.load(..., weights_only=True)` |

## Training

Trained with the library's own command line, from the shipped corpus and a fixed seed,
then averaged as in §6.1 of the paper. Every setting of the recipe is given on the
command line, so the run does not depend on the defaults, which the command line
chooses from the budget (chapter 9):

```bash
python -m transformer_lib.pipeline.tokenizer      # rebuilds data/tokenizer.json exactly
python -m transformer_lib train --preset tiny --max-steps 7000 --threads 1 --seed 0 \\
    --max-tokens 2048 --schedule noam --lr-factor 1.0 --warmup 400 --eval-every 500 \\
    --checkpoint-every 250 --keep-checkpoints 5 \\
    --snapshot-at 0,50,100,200,400,700,1000,1500,2500,4000,7000 --out runs/shipped
python -m transformer_lib average runs/shipped --last 5 --out data/model.pt
python scripts/averaging_effect.py runs/shipped --last 5 --out data/averaging.json
```

| | |
| --- | --- |
| Objective | label-smoothed loss, ε = 0.1 (§5.4), padding ignored |
| Optimiser | Adam, β1 0.9, β2 0.98, ε 1e-9 (§5.3); gradient norm clipped at 1.0 |
| Schedule | Noam (§5.3, Eq. 3), factor {tr["factor"]:g}, warm-up {tr["warmup"]} steps: peak {peak:.1e} at step {tr["warmup"]}, {tr["final_lr"]:.1e} at step {_n(tr["steps"])} |
| Batches | token budget {_n(tr["max_tokens"])} padded tokens per batch, length-bucketed (§5.1) |
| Steps | {_n(tr["steps"])} ({tr["epochs"]} complete passes over the {_n(s["splits"]["train"])} training pairs and part of the next; {tr["tokens_m"]:.1f} M source + target tokens) |
| Averaging | the last {len(tr["averaged"])} checkpoints, steps {avg_steps}, 250 apart (`average`; the paper averages the last 5 of its base models, written 10 minutes apart) |
| Time | **{tr["cpu_min"]:.1f} CPU-minutes** (one torch thread); {tr["wall_min"]:.1f} minutes of wall clock, because the 2-core machine was shared with other jobs |
| Throughput | median {_n(tr["median_speed"])} tokens/s (source + target, padding excluded); logged speeds ranged from {_n(round(tr["min_speed"], -2))} to {_n(round(tr["max_speed"], -2))} tokens/s as the machine's load changed |
| Hardware | 2-core x86-64 virtual machine, CPU only, 1 torch thread, shared with other jobs |
| Software | torch {translator.checkpoint.get("torch_version", torch.__version__)}, recorded in the checkpoint |
| Final losses | training {tr["train_loss"]:.2f}, validation {tr["val_loss"]:.2f} (label-smoothed KL); validation perplexity {tr["val_ppl"]:.2f} (before averaging) |

The full training log (loss, learning rate, tokens/s, validation loss every 500 steps) is
in [`training_log.json`](training_log.json), and also inside the checkpoint
(`checkpoint["state"]["log"]`). [`attention_snapshots.json`](attention_snapshots.json)
holds the greedy translation and every cross-attention head for three of the book's
example sentences at 11 points of the run (steps 0 to {_n(tr["steps"])}, before
averaging); chapter 9 shows them.

Rerunning the commands above on the same torch version and thread count retraces the
same batches, dropout masks and weights (an interrupted and resumed run is bit-identical
to an uninterrupted one; a test checks this). Other CPUs or thread counts give slightly
different numbers.

## Evaluation

Measured with `python -m transformer_lib evaluate --split test [--beam 4]` on the shipped
file (recorded in `head_to_head.json` by `scripts/head_to_head.py`): every distinct English
test sentence is translated once and scored with sacreBLEU against **all** its German
references ({_n(h2h["test_split"]["sources"])} sentences, {_n(h2h["test_split"]["references"])} references).

| Decoding | BLEU | chrF |
| --- | --- | --- |
| greedy | **{greedy["bleu"]:.2f}** | {greedy["chrf"]:.2f} |
| beam search, beam 4, length penalty α = 0.6 | **{beam["bleu"]:.2f}** | {beam["chrf"]:.2f} |

sacreBLEU signatures: BLEU `{sig.get("bleu", "")}`, chrF `{sig.get("chrf", "")}`.
Greedy: `{greedy["bleu_detail"].split(" = ", 1)[-1].split(" (BP")[0].split(" ", 1)[-1]}`
(BP {greedy["bleu_detail"].split("BP = ")[-1].split(" ")[0]}); beam:
`{beam["bleu_detail"].split(" = ", 1)[-1].split(" (BP")[0].split(" ", 1)[-1]}`
(BP {beam["bleu_detail"].split("BP = ")[-1].split(" ")[0]}). On the validation split the same
model scores {ed_m["valid_greedy"]["bleu"]:.2f} BLEU greedy.

**What averaging did** (`scripts/averaging_effect.py`, both scored in one run on this
machine; [`averaging.json`](averaging.json)):

| | greedy BLEU | beam-4 BLEU | greedy chrF |
| --- | --- | --- | --- |
| last checkpoint (step {_n(last["step"])}) | {last["bleu_greedy"]:.2f} | {last["bleu_beam4"]:.2f} | {last["chrf_greedy"]:.2f} |
| average of steps {avg_steps} | **{mean["bleu_greedy"]:.2f}** | **{mean["bleu_beam4"]:.2f}** | {mean["chrf_greedy"]:.2f} |

These numbers are only comparable to other systems scored on this same split of this same
short-sentence corpus; they say nothing about newspaper text (the paper's WMT 2014 scores
are a different task).

## Example translations

| English | greedy | beam 4 |
| --- | --- | --- |
{chr(10).join(_row(*e) for e in examples)}

## Known failure modes

- **Rare words are replaced or dropped.** Words seen a few times in training come out
  wrong: "Where is the station?" becomes {_both(station)}; "The cat is sleeping on the
  sofa." becomes {_both(sofa)}.
- **Dropped content.** Longer sentences lose words: "Mary is reading a book in the
  garden." becomes {_both(garden)}.
- **Long or unusual sentences fail.** The training sentences have at most 7 English
  words. "{LONG}" becomes {_both(long_out)}.
- **Repetition and invention.** When the model is unsure it can repeat or make up words:
  "Tom is lean and tall." becomes {_both(lean)}.
- **Unknown characters** (Chinese, emoji, …) become `<unk>`. `translate` warns about
  every sentence that holds a character the tokenizer cannot represent, or no letter at
  all; the translation of that part is then a guess.
- **Register and gender.** Tatoeba has several translations per sentence (du/Sie/ihr,
  "Wagen"/"Auto"); the model picks one, which may not be the one you wanted.
- Input rules: an empty sentence raises `ValueError`; a sentence longer than {c.max_len}
  tokens raises `ValueError` (it is not truncated); anything but a str (or a list of str)
  raises `TypeError`.

## The decoder-only model (`data/decoder_only.pt`)

Chapter 12's decoder-only translator: the same tokenizer and data, about as much CPU time
({dt["cpu_min"]:.0f} CPU-minutes against the encoder–decoder's {tr["cpu_min"]:.1f}), and a
parameter count within 5 % ({_n(do_m["parameters"])}: {do_m["description"]} of the same
width, tied embeddings). One sequence per pair, `English <sep> German <eos>`, with the
loss on the German part only. Trained and averaged with

```bash
python -m transformer_lib train --arch decoder-only --preset tiny --max-tokens 4096 \\
    --schedule noam --lr-factor 1.0 --warmup 400 --cpu-minutes 42 --threads 1 --seed 0 \\
    --eval-every 500 --checkpoint-every 250 --keep-checkpoints 5 --out runs/decoder-only
python -m transformer_lib average runs/decoder-only --last 5 --out data/decoder_only.pt
```

It made {_n(dt["steps"])} steps in its {dt["cpu_min"]:.0f} CPU-minutes (each step runs
English and German through every block, so a step costs more than the encoder–decoder's)
and was averaged over steps {dt["averaged"][0]:,}–{dt["averaged"][-1]:,}; the file is
{gpt_mb:.1f} MB. Test split, same scoring: **{do_m["greedy"]["bleu"]:.2f} BLEU greedy,
{do_m["beam4"]["bleu"]:.2f} with beam 4** (chrF {do_m["greedy"]["chrf"]:.2f} /
{do_m["beam4"]["chrf"]:.2f}). The side-by-side comparison, with speeds, is in
[`head_to_head.json`](head_to_head.json) and chapter 12, which also compares a causal
and a prefix-LM mask on two shorter runs:

```bash
python -m transformer_lib train --arch decoder-only --preset tiny --max-tokens 4096 \\
    --schedule noam --lr-factor 1.0 --warmup 400 --cpu-minutes 8 --threads 1 --seed 0 \\
    --final-bleu test --out runs/causal-8          # and again with --prefix-lm --out runs/prefix-8
python scripts/head_to_head.py --mask-comparison runs/causal-8 runs/prefix-8
```

It also continues German text:
`python -m transformer_lib generate "Ich habe" --checkpoint data/decoder_only.pt
--temperature 0.8 --top-k 20 --seed 0`.

{_english_lm_section(data)}

{_masked_lm_section(data)}

Not for any use beyond learning how Transformers work.
"""
    readme = f"""{README_START}

`data/model.pt` ({size_mb:.1f} MB): the tiny preset (d_model {c.d_model}, {c.n_heads} heads,
{c.n_encoder_layers}+{c.n_decoder_layers} layers, FFN {c.d_ff}, tied embeddings,
{count_parameters(translator.model) / 1e6:.2f} M parameters) trained by the command line from
the shipped corpus, seed 0, for {_n(tr["steps"])} steps ({tr["cpu_min"]:.1f} CPU-minutes, one
thread), with the last {len(tr["averaged"])} checkpoints averaged (§6.1). On the held-out
test split ({_n(h2h["test_split"]["sources"])} English sentences, all
{_n(h2h["test_split"]["references"])} references; no sentence of it occurs in training):
**BLEU {greedy["bleu"]:.2f} greedy, {beam["bleu"]:.2f} with beam 4**; chrF
{greedy["chrf"]:.1f} / {beam["chrf"]:.1f}. The exact commands, the log, examples and failure
modes: [data/MODEL_CARD.md](data/MODEL_CARD.md).

`data/decoder_only.pt` ({gpt_mb:.1f} MB): chapter 12's decoder-only translator
({do_m["description"]}, {do_m["parameters"] / 1e6:.2f} M parameters) trained on the same data
with the same tokenizer and about as much CPU time ({dt["cpu_min"]:.0f} CPU-minutes against
{tr["cpu_min"]:.1f}): {do_m["greedy"]["bleu"]:.2f} greedy,
{do_m["beam4"]["bleu"]:.2f} beam-4 BLEU. The side-by-side measurement is in
`data/head_to_head.json`.

`data/english_lm.pt` ({elm_mb:.1f} MB): chapter 12's small causal language model of English
(the library's decoder-only model, {_n(elm["parameters"])} parameters), trained with every
token in the loss on the English sentences of the train split; test-split perplexity
{elm_ppl["model"]:.1f} per token (bigram: {elm_ppl["bigram"]:.1f}, unigram:
{elm_ppl["unigram"]:.0f}). Its numbers and samples are in `data/english_lm.json`.

`data/masked_lm.pt` ({mlm_mb:.1f} MB): chapter 14's small masked language model of English
(the library's encoder stack, {_n(mlm["parameters"])} parameters), trained on the English
sentences of the train split; with each test-split token hidden alone it puts the right one
first {100 * mlm["test"]["model"]["top1_acc"]:.1f} % of the time (a bigram guess:
{100 * mlm["test"]["bigram"]["top1_acc"]:.1f} %). Its numbers are in `data/masked_lm.json`.

{README_END}"""
    return _reflow(card), _reflow(readme)


def _with_readme_block(text: str, block: str) -> str:
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md has no {README_START} … {README_END} block")
    return text[:start] + block + text[end + len(README_END) :]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that both are current")
    args = p.parse_args(argv)
    card, block = render()
    readme = _with_readme_block(README.read_text(encoding="utf-8"), block)
    if args.check:
        stale = [
            p.name
            for p, want in ((CARD, card), (README, readme))
            if p.read_text(encoding="utf-8") != want
        ]
        if stale:
            print(f"out of date: {', '.join(stale)}; run python scripts/model_card.py")
            return 1
        return 0
    CARD.write_text(card, encoding="utf-8")
    README.write_text(readme, encoding="utf-8")
    print(f"wrote {CARD.relative_to(ROOT)} and the shipped-models block of README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
