/*
 * The book's translator, running in the reader's browser (no Python, no server).
 *
 * Every element with the attribute `data-live-translate` becomes a translator box: type
 * English, get the shipped model's German translation (greedy, exactly as
 * transformer_lib.pipeline.decoding.greedy_decode), see the attention maps of every
 * kind, layer and head, and switch heads off to see what changes.
 *
 * The model is exported to ONNX by transformer_lib/pipeline/onnx_export.py (`make book`)
 * and run by onnxruntime-web (WebAssembly); @huggingface/tokenizers reads the same
 * tokenizer.json as Python. Everything arrives as plain <script> files (base64 inside),
 * added to the page only when a translator box is on it, so that the book also works
 * from file:// where browsers refuse fetch().
 *
 * For tests and the curious: window.liveTranslate.ready (a Promise of the engine),
 * window.liveTranslate.translate(text, headsOff) and the timings in
 * window.liveTranslate.timings.
 */
(function () {
  "use strict";

  var FILES = "LIVE_TRANSLATE_FILES"; // global the generated scripts fill in
  var SCRIPTS = [
    "../vendor/onnxruntime-web/ort.wasm.min.js",
    "generated/ort-loader.js",
    "generated/ort-wasm.js",
    "generated/tokenizers.js",
    "generated/model.js",
  ];
  var KINDS = [
    { key: "encoder", label: "encoder self-attention", input: "encoder_gates" },
    { key: "decoder", label: "decoder self-attention", input: "decoder_gates" },
    { key: "cross", label: "cross-attention", input: "cross_gates" },
  ];
  // The book's sequential colour map (transformer_lib.views.style.SEQUENTIAL_CMAP,
  // viridis), 17 evenly spaced stops; tests/test_onnx_export.py checks them.
  var CMAP = [
    "#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e",
    "#26828e", "#21918c", "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b",
    "#addc30", "#d8e219", "#fde725",
  ];
  var DEFAULT_EXAMPLE = "The children are playing in the garden.";

  var here = document.currentScript ? document.currentScript.src : document.baseURI;
  var api = (window.liveTranslate = window.liveTranslate || {});
  api.timings = { start: performance.now() };
  var enginePromise = null;

  // ------------------------------------------------------------------ loading
  function loadScript(relative) {
    var src = new URL(relative, here).href;
    return new Promise(function (resolve, reject) {
      var el = document.createElement("script");
      el.src = src;
      el.async = true;
      el.onload = function () { resolve(src); };
      el.onerror = function () { reject(new Error("could not load " + relative)); };
      document.head.appendChild(el);
    });
  }

  function base64Bytes(text) {
    if (Uint8Array.fromBase64) { return Uint8Array.fromBase64(text); }
    var bin = atob(text);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out;
  }

  async function gunzipBase64(text) {
    var stream = new Blob([base64Bytes(text)]).stream()
      .pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  function need(value, what) {
    if (!value) { throw new Error(what + " is missing or damaged"); }
    return value;
  }

  async function createEngine() {
    await Promise.all(SCRIPTS.map(loadScript));
    api.timings.scripts = performance.now();
    var files = need(window[FILES], "the model files");
    var ort = need(window.ort, "onnxruntime-web");
    var model = need(files.model, "the model (model.js)");
    var meta = need(model.meta, "the model description");
    var blobs = await Promise.all([
      gunzipBase64(need(files.ort_wasm, "the WebAssembly binary (ort-wasm.js)")),
      gunzipBase64(need(model.encoder, "the encoder graph")),
      gunzipBase64(need(model.decoder, "the decoder graph")),
      gunzipBase64(need(model.weights, "the weights")),
    ]);
    api.timings.unpacked = performance.now();
    ort.env.wasm.wasmBinary = blobs[0];
    var loader = need(files.ort_mjs, "the WebAssembly loader (ort-loader.js)");
    ort.env.wasm.wasmPaths = {
      mjs: URL.createObjectURL(new Blob([loader], { type: "text/javascript" })),
    };
    ort.env.wasm.numThreads = 1; // threads need cross-origin isolation (not from file://)
    ort.env.wasm.proxy = false;
    ort.env.logLevel = "error";
    var options = {
      executionProviders: ["wasm"],
      // Measured: "basic" creates the sessions faster than "all" and runs as fast on
      // this small model; the shapes change at every step, so no memory pattern.
      graphOptimizationLevel: "basic",
      enableMemPattern: false,
      externalData: [{ path: model.weights_file, data: blobs[3] }],
    };
    var sessions = await Promise.all([
      ort.InferenceSession.create(blobs[1], options),
      ort.InferenceSession.create(blobs[2], options),
    ]);
    var encoder = sessions[0], decoder = sessions[1];
    var Tokenizer = need(files.tokenizers, "the tokenizer library").Tokenizer;
    var tokenizer = new Tokenizer(need(model.tokenizer, "the tokenizer"), {
      clean_up_tokenization_spaces: false,
    });
    api.timings.engine = performance.now();
    return new Engine(ort, encoder, decoder, tokenizer, meta);
  }

  function loadEngine() {
    if (!enginePromise) {
      enginePromise = createEngine();
      api.ready = enginePromise;
    }
    return enginePromise;
  }

  // ------------------------------------------------------------------ the model
  function InputError(message) { this.message = message; }

  function Engine(ort, encoder, decoder, tokenizer, meta) {
    this.ort = ort;
    this.encoder = encoder;
    this.decoder = decoder;
    this.tokenizer = tokenizer;
    this.meta = meta;
    this.layers = { encoder: meta.n_encoder_layers, decoder: meta.n_decoder_layers,
                    cross: meta.n_decoder_layers };
    this.never = new Uint8Array(meta.vocab_size);
    meta.never_generate.forEach(function (i) { this.never[i] = 1; }, this);
    this.skip = new Set(meta.skip_on_decode);
    this.queue = Promise.resolve(); // onnxruntime runs one session call at a time
  }

  Engine.prototype.token = function (id) {
    var t = this.tokenizer.id_to_token(id);
    return t === undefined ? "#" + id : t;
  };

  Engine.prototype.gates = function (headsOff) {
    var H = this.meta.n_heads, gates = {};
    for (var k = 0; k < KINDS.length; k++) {
      var kind = KINDS[k].key;
      gates[kind] = new Float32Array(this.layers[kind] * H).fill(1);
    }
    (headsOff || []).forEach(function (h) { gates[h[0]][h[1] * H + h[2]] = 0; });
    return gates;
  };

  /* Check the sentence and encode it: {ids, tokens, warning} or throws InputError. */
  Engine.prototype.encode = function (text) {
    var meta = this.meta;
    if (typeof text !== "string" || !text.trim()) {
      throw new InputError("Type an English sentence first: empty input has no translation.");
    }
    var enc = this.tokenizer.encode(text, { add_special_tokens: false });
    var ids = Array.from(enc.ids, Number);
    if (!ids.length) {
      throw new InputError("Nothing to translate: the sentence has no tokens.");
    }
    if (ids.length > meta.max_len) {
      throw new InputError(
        "This sentence has " + ids.length + " tokens but the model accepts at most " +
        meta.max_len + ". It is not cut off silently: split it into shorter sentences " +
        "(the model was trained on sentences of a few dozen tokens at most).");
    }
    var unknown = ids.indexOf(meta.unk_id) < 0 ? [] : this.unknownCharacters(text);
    var unk = unknown.length ? this.unknownShare(text) : 0;
    return {
      ids: ids, tokens: ids.map(this.token, this), unknownShare: unk, unknown: unknown,
      warning: inputWarning(text, unknown, unk, meta.unknown_share_warning),
    };
  };

  /* Grapheme clusters (a letter with its accents, an emoji sequence), or code points. */
  function clusters(text) {
    if (typeof Intl !== "undefined" && Intl.Segmenter) {
      return Array.from(new Intl.Segmenter(undefined, { granularity: "grapheme" })
        .segment(text), function (g) { return g.segment; });
    }
    return Array.from(text);
  }

  /* As Python's tokenizer.unknown_characters: the distinct characters (code points, no
   * white space) that become <unk>, in order of appearance. Each character cluster is
   * tokenized on its own (the tokenizer library gives no character offsets). */
  Engine.prototype.unknownCharacters = function (text) {
    var unkId = this.meta.unk_id, tokenizer = this.tokenizer, seen = new Set(), out = [];
    clusters(text).forEach(function (part) {
      if (!part.trim()) { return; }
      if (tokenizer.encode(part, { add_special_tokens: false }).ids.indexOf(unkId) < 0) {
        return;
      }
      Array.from(part).forEach(function (ch) {
        if (!/\s/.test(ch) && !seen.has(ch)) { seen.add(ch); out.push(ch); }
      });
    });
    return out;
  };

  function codePoint(ch) {
    return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  }

  /* The characters, each as itself and its code point, at most `limit` of them. */
  function nameCharacters(chars, limit) {
    limit = limit || 3;
    var named = chars.slice(0, limit).map(function (ch) {
      return "\u201c" + ch + "\u201d (" + codePoint(ch) + ")";
    }).join(", ");
    return named + (chars.length > limit ? " and " + (chars.length - limit) + " more" : "");
  }

  /* The rule of Python's tokenizer.input_warning: any character that becomes <unk>, named;
   * or no letter at all. null when the input is fine. */
  function inputWarning(text, unknown, share, mostly) {
    if (unknown.length) {
      var n = unknown.length;
      return "This sentence has " + n + " character" + (n > 1 ? "s" : "") + " the model " +
        "has never seen, which become" + (n > 1 ? "" : "s") + " <unk>: " +
        nameCharacters(unknown) + " (" + Math.round(100 * share) + "% of the sentence). " +
        "The model knows only English in Latin script, " + (share > mostly
          ? "so its translation will be meaningless."
          : "so the translation drops or garbles that part.");
    }
    if (!/\p{L}/u.test(text)) {
      return "This input has no letter, only punctuation, digits or symbols: there are no " +
        "words to translate, so the output is a guess.";
    }
    return null;
  }
  api.inputWarning = inputWarning;

  /* As Python's Tokenizer.unknown_share: the share of the non-space characters (code
   * points) that become <unk>. Each character cluster is tokenized on its own. */
  Engine.prototype.unknownShare = function (text) {
    var unkId = this.meta.unk_id, tokenizer = this.tokenizer;
    var count = function (s) { return Array.from(s.replace(/ /g, "")).length; };
    var parts = clusters(text);
    var unknown = 0;
    parts.forEach(function (part) {
      if (count(part) && tokenizer.encode(part, { add_special_tokens: false }).ids
        .indexOf(unkId) >= 0) {
        unknown += count(part);
      }
    });
    return unknown / Math.max(1, count(text));
  };

  function int64(ort, ids) {
    return new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]);
  }

  /* Greedy decoding as transformer_lib.pipeline.decoding.greedy_decode. */
  Engine.prototype._translate = async function (text, headsOff) {
    var t0 = performance.now();
    var ort = this.ort, meta = this.meta, H = this.meta.n_heads;
    var source = this.encode(text);
    var g = this.gates(headsOff);
    var gate = function (kind, L) { return new ort.Tensor("float32", g[kind], [L, H]); };
    var src = int64(ort, source.ids);
    var enc = await this.encoder.run({
      src: src, encoder_gates: gate("encoder", this.layers.encoder),
    });
    var feeds = {
      memory: enc.memory, src: src,
      decoder_gates: gate("decoder", this.layers.decoder),
      cross_gates: gate("cross", this.layers.cross),
    };
    var ys = [meta.bos_id];
    var limit = Math.max(2, Math.min(source.ids.length + meta.extra_output_tokens, meta.max_len));
    var out = null;
    for (var step = 0; step < limit - 1; step++) {
      feeds.tgt = int64(ort, ys);
      out = await this.decoder.run(feeds);
      var logits = out.logits.data, best = -1, bestValue = -Infinity;
      for (var v = 0; v < logits.length; v++) {
        if (!this.never[v] && logits[v] > bestValue) { bestValue = logits[v]; best = v; }
      }
      ys.push(best);
      if (best === meta.eos_id) { break; }
    }
    var kept = ys.filter(function (i) { return !this.skip.has(i); }, this);
    var inputs = ys.slice(0, -1); // what the decoder read at the last step: <bos> + ...
    return {
      text: this.tokenizer.decode(kept, {
        skip_special_tokens: false, clean_up_tokenization_spaces: false,
      }),
      source: source,
      outputIds: ys,
      decoderTokens: inputs.map(this.token, this),
      writtenTokens: ys.slice(1).map(this.token, this),
      attention: {
        encoder: enc.encoder_attention,
        decoder: out.decoder_attention,
        cross: out.cross_attention,
      },
      headsOff: headsOff || [],
      ms: performance.now() - t0,
    };
  };

  Engine.prototype.translate = function (text, headsOff) {
    var self = this;
    var run = this.queue.then(function () { return self._translate(text, headsOff); });
    this.queue = run.catch(function () {});
    return run;
  };

  api.translate = function (text, headsOff) {
    return loadEngine().then(function (engine) { return engine.translate(text, headsOff); });
  };

  // ------------------------------------------------------------------ drawing
  function colour(t) {
    t = Math.min(1, Math.max(0, t)) * (CMAP.length - 1);
    var i = Math.min(CMAP.length - 2, Math.floor(t)), f = t - i;
    var a = parseInt(CMAP[i].slice(1), 16), b = parseInt(CMAP[i + 1].slice(1), 16);
    var mix = function (shift) {
      return Math.round(((a >> shift) & 255) * (1 - f) + ((b >> shift) & 255) * f);
    };
    return "rgb(" + mix(16) + "," + mix(8) + "," + mix(0) + ")";
  }

  function shortLabel(token) {
    return token.length > 14 ? token.slice(0, 13) + "…" : token;
  }

  /* Give the canvas a CSS size of width x height px, drawn at the screen's pixel density;
   * returns its context, scaled so that drawing is in CSS px. */
  function sizeCanvas(canvas, width, height) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(width * dpr);
    canvas.height = Math.ceil(height * dpr);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    var ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    return ctx;
  }

  /* One heatmap: rows = queries, columns = keys, values in [0, 1]. With opts.thumb, only
   * the cells (a small picture to pick a head by); otherwise token labels on both axes
   * (opts.font px, 12 unless told), axis titles and a title above. */
  function drawHeatmap(canvas, values, offset, rows, cols, opts) {
    var ctx = canvas.getContext("2d");
    var i, j;
    if (opts.thumb) {
      var c = Math.max(2, Math.min(8, Math.floor(opts.maxWidth / Math.max(rows, cols))));
      ctx = sizeCanvas(canvas, c * cols, c * rows);
      for (i = 0; i < rows; i++) {
        for (j = 0; j < cols; j++) {
          ctx.fillStyle = colour(values[offset + i * cols + j]);
          ctx.fillRect(j * c, i * c, c, c);
        }
      }
      return;
    }
    var font = opts.font || 12;
    canvas.setAttribute("data-font-px", String(font));
    var plain = font + "px sans-serif", bold = "bold " + plain;
    var widest = function (labels) {
      return Math.max.apply(null, labels.map(function (s) {
        return ctx.measureText(shortLabel(s)).width;
      }).concat([10]));
    };
    ctx.font = bold;
    var titleW = opts.title ? ctx.measureText(opts.title).width : 0;
    ctx.font = plain;
    var rowW = widest(opts.rowLabels), colW = widest(opts.colLabels);
    var keyText = "keys (columns): " + opts.keyTitle;
    var keyW = ctx.measureText(keyText).width;
    var axisPad = font + 6; // room for the rotated query title
    var left = axisPad + rowW + 6, top = opts.title ? font + 10 : 4;
    // Column labels at 45 degrees where the cells are wide enough to keep them apart,
    // upright (90 degrees) where they are narrow.
    var cell = Math.max(font + 1, Math.min(30, Math.floor((opts.maxWidth - left - 10) / cols)));
    var steep = cell < 1.45 * font;
    var gridW = cell * cols, gridH = cell * rows;
    var below = colW * (steep ? 1 : 0.72) + font + 16;
    var width = Math.ceil(Math.max(left + gridW + (steep ? 8 : colW * 0.3), titleW + 12,
      left + keyW + 8));
    width = Math.min(width, Math.max(opts.maxWidth, left + gridW + 8));
    var height = Math.ceil(top + gridH + below);
    ctx = sizeCanvas(canvas, width, height);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, width, height);
    for (i = 0; i < rows; i++) {
      for (j = 0; j < cols; j++) {
        ctx.fillStyle = colour(values[offset + i * cols + j]);
        ctx.fillRect(left + j * cell, top + i * cell, cell, cell);
      }
    }
    ctx.font = plain;
    ctx.fillStyle = "#222";
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (i = 0; i < rows; i++) {
      ctx.fillText(shortLabel(opts.rowLabels[i]), left - 4, top + (i + 0.5) * cell);
    }
    for (j = 0; j < cols; j++) {
      ctx.save();
      ctx.translate(left + (j + 0.5) * cell, top + gridH + 4);
      ctx.rotate(steep ? -Math.PI / 2 : -Math.PI / 4);
      ctx.fillText(shortLabel(opts.colLabels[j]), 0, 0);
      ctx.restore();
    }
    // Titles are centred on the grid, moved in where they would leave the canvas.
    var centre = function (w) {
      return Math.min(Math.max(left + gridW / 2, w / 2 + 4), width - w / 2 - 4);
    };
    ctx.textAlign = "center";
    ctx.textBaseline = "alphabetic";
    if (opts.title) {
      ctx.font = bold;
      ctx.fillStyle = opts.titleColour || "#222";
      ctx.fillText(opts.title, centre(titleW), font + 2);
      ctx.font = plain;
      ctx.fillStyle = "#222";
    }
    if (keyW > width - 8) { keyText = "keys: " + opts.keyTitle; keyW = ctx.measureText(keyText).width; }
    ctx.fillText(keyText, centre(keyW), height - 4);
    var queryText = "queries (rows): " + opts.queryTitle;
    if (ctx.measureText(queryText).width > top + gridH + below / 2) {
      queryText = "queries: " + opts.queryTitle;
    }
    if (ctx.measureText(queryText).width > top + gridH + below / 2) { queryText = "queries"; }
    ctx.save();
    ctx.translate(font, top + gridH / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(queryText, 0, 0);
    ctx.restore();
  }

  function spoken(token) { return token.replace(/\u2581/g, "") || token; } // no "▁" marks

  /* For each query row of one head's map: the key it attends to most and that weight. */
  function strongest(data, offset, Tq, Tk) {
    var out = [];
    for (var i = 0; i < Tq; i++) {
      var best = 0, bestValue = -1;
      for (var j = 0; j < Tk; j++) {
        var v = data[offset + i * Tk + j];
        if (v > bestValue) { bestValue = v; best = j; }
      }
      out.push({ row: i, col: best, weight: bestValue });
    }
    return out;
  }
  api.strongest = strongest;

  /* The map in words, e.g. "writes Die: The 0.97; writes Kinder: children 0.93". */
  function described(tops, rows, cols, rowWord) {
    return tops.map(function (t) {
      return rowWord + " " + spoken(rows[t.row]) + ": " + spoken(cols[t.col]) + " " +
        t.weight.toFixed(2);
    }).join("; ");
  }

  /* The mean of each row's largest weight: how sharply a head picks one key per row. */
  function sharpness(data, offset, Tq, Tk) {
    var tops = strongest(data, offset, Tq, Tk), sum = 0;
    tops.forEach(function (t) { sum += t.weight; });
    return sum / Math.max(1, tops.length);
  }

  function colourBar() {
    var bar = el("div", "lt-colourbar");
    var ramp = el("span", "lt-ramp");
    ramp.style.background = "linear-gradient(to right, " + CMAP.join(", ") + ")";
    bar.append(el("span", null, "attention weight 0"), ramp, el("span", null, "1"));
    return bar;
  }

  // ------------------------------------------------------------------ the box
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function select(testid, label, options, name) {
    var wrap = el("label", "lt-control", label + " ");
    var s = el("select");
    s.setAttribute("data-testid", testid);
    s.setAttribute("aria-label", name);
    options.forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = String(o[0]);
      s.append(opt);
    });
    wrap.append(s);
    return { wrap: wrap, select: s };
  }

  function Box(root) {
    this.root = root;
    this.example = root.getAttribute("data-example") || DEFAULT_EXAMPLE;
    this.headsOff = new Set(); // "kind/layer/head"
    this.result = null;
    this.baseline = {}; // text -> translation with every head on
    this.build();
  }

  Box.prototype.build = function () {
    var root = this.root, self = this;
    root.textContent = "";
    root.classList.add("live-translate-ready");
    var form = el("form", "lt-form");
    this.input = el("input", "lt-input");
    this.input.type = "text";
    this.input.value = this.example;
    this.input.placeholder = "Type an English sentence and press Enter";
    this.input.setAttribute("aria-label", "English sentence");
    this.input.setAttribute("data-testid", "live-translate-input");
    this.input.disabled = true;
    this.button = el("button", "lt-button", "Translate");
    this.button.type = "submit";
    this.button.disabled = true;
    this.button.setAttribute("data-testid", "live-translate-button");
    form.append(this.input, this.button);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      self.run("submit");
    });
    // What a screen reader hears after each translation (the visible lines below are not
    // live regions themselves: the reader hears one message, not three).
    this.announcer = el("div", "visually-hidden lt-announcer");
    this.announcer.setAttribute("role", "status");
    this.announcer.setAttribute("aria-live", "polite");
    this.announcer.setAttribute("aria-atomic", "true");
    this.announcer.setAttribute("data-testid", "live-translate-announcer");
    this.status = el("div", "lt-status", "Loading the model into your browser…");
    this.status.id = "lt-status-" + Math.random().toString(36).slice(2, 10);
    this.status.setAttribute("data-testid", "live-translate-status");
    this.input.setAttribute("aria-describedby", this.status.id);
    var out = el("div", "lt-output-row");
    this.output = el("output", "lt-output");
    this.output.setAttribute("data-testid", "live-translate-output");
    this.output.setAttribute("lang", "de");
    this.baselineNote = el("div", "lt-baseline");
    this.baselineNote.setAttribute("data-testid", "live-translate-baseline");
    out.append(el("span", "lt-label", "German: "), this.output);
    root.append(form, this.status, out, this.baselineNote, this.announcer);

    this.controls = el("div", "lt-controls");
    this.kind = select("live-attention-kind", "attention", KINDS.map(function (k) {
      return [k.key, k.label];
    }), "attention shown in the maps (kind)");
    // The attention the maps show first: the box's data-kind, else cross-attention.
    var first = root.getAttribute("data-kind");
    this.kind.select.value = KINDS.some(function (k) { return k.key === first; })
      ? first : "cross";
    this.layer = select("live-attention-layer", "layer", [[0, "0"]], "layer shown in the maps");
    this.head = select("live-attention-head", "head", [], "head shown in the large map");
    this.controls.append(this.kind.wrap, this.layer.wrap, this.head.wrap, colourBar());
    [this.kind, this.layer, this.head].forEach(function (c) {
      c.select.addEventListener("change", function () {
        if (c === self.kind) { self.fillLayers(); }
        if (c === self.head) { self.headPicked = true; }
        self.draw();
      });
    });
    this.figure = el("div", "lt-figure");
    this.figure.setAttribute("data-testid", "live-attention");
    this.switches = el("details", "lt-switches");
    if (root.getAttribute("data-switches") !== "closed") { this.switches.open = true; }
    root.append(this.controls, this.figure, this.switches);
    // A phone turned sideways, or a window resized: the maps are drawn for the new width.
    var width = root.clientWidth, timer = null;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        if (root.clientWidth !== width) { width = root.clientWidth; self.draw(); }
      }, 150);
    });
  };

  Box.prototype.fillLayers = function () {
    var n = this.engine.layers[this.kind.select.value];
    var keep = Math.min(Number(this.layer.select.value) || 0, n - 1);
    this.layer.select.textContent = "";
    for (var i = 0; i < n; i++) {
      var o = el("option", null, String(i));
      o.value = String(i);
      this.layer.select.append(o);
    }
    this.layer.select.value = String(keep);
  };

  Box.prototype.attach = function (engine) {
    var self = this, H = engine.meta.n_heads;
    this.engine = engine;
    this.fillLayers();
    // The layer shown first: the box's data-layer, else the last one for cross-attention
    // (where the heads line the words up most clearly), else layer 0.
    var layers = engine.layers[this.kind.select.value], wanted = this.root.getAttribute("data-layer");
    this.layer.select.value = String(wanted !== null && Number(wanted) < layers ? Number(wanted)
      : this.kind.select.value === "cross" ? layers - 1 : 0);
    for (var h = 0; h < H; h++) {
      var o = el("option", null, "head " + h);
      o.value = String(h);
      this.head.select.append(o);
    }
    // The head shown first: the box's data-head, else the sharpest one (chosen at the first
    // translation, see draw).
    var head = Number(this.root.getAttribute("data-head"));
    this.headPicked = this.root.hasAttribute("data-head") && head >= 0 && head < H;
    this.head.select.value = String(this.headPicked ? head : 0);
    var summary = el("summary", null, "Switch heads off (unticked = off); the translation " +
      "is recomputed at once");
    var tables = el("div", "lt-switch-tables");
    KINDS.forEach(function (kind) {
      var table = el("table", "lt-switch-table");
      var cap = el("caption", null, kind.label);
      var head = el("tr");
      head.append(el("th", null, "layer"));
      for (var h = 0; h < H; h++) { head.append(el("th", null, "head " + h)); }
      table.append(cap, head);
      for (var layer = 0; layer < engine.layers[kind.key]; layer++) {
        var row = el("tr");
        row.append(el("th", null, String(layer)));
        for (h = 0; h < H; h++) {
          var cell = el("td");
          var box = el("input");
          box.type = "checkbox";
          box.checked = true;
          box.setAttribute("data-testid", "live-head-switch");
          box.setAttribute("data-kind", kind.key);
          box.setAttribute("data-layer", String(layer));
          box.setAttribute("data-head", String(h));
          box.setAttribute("aria-label", kind.label + ", layer " + layer + ", head " + h +
            " switched on");
          box.addEventListener("change", self.onSwitch.bind(self, box));
          cell.append(box);
          row.append(cell);
        }
        table.append(row);
      }
      tables.append(table);
    });
    var reset = el("button", "lt-button lt-reset", "All heads on");
    reset.type = "button";
    reset.setAttribute("data-testid", "live-heads-reset");
    reset.addEventListener("click", function () {
      self.headsOff.clear();
      self.switches.querySelectorAll("input[type=checkbox]").forEach(function (b) {
        b.checked = true;
      });
      self.run("switch");
    });
    this.switches.append(summary, tables, reset);
    this.input.disabled = false;
    this.button.disabled = false;
  };

  Box.prototype.onSwitch = function (box) {
    var key = [box.dataset.kind, box.dataset.layer, box.dataset.head].join("/");
    if (box.checked) { this.headsOff.delete(key); } else { this.headsOff.add(key); }
    this.run("switch");
  };

  Box.prototype.headsOffList = function () {
    return Array.from(this.headsOff, function (key) {
      var p = key.split("/");
      return [p[0], Number(p[1]), Number(p[2])];
    });
  };

  Box.prototype.announce = function (text) {
    // Emptied first, so that the same message twice is announced twice.
    var region = this.announcer;
    region.textContent = "";
    setTimeout(function () { region.textContent = text.trim(); }, 50);
  };

  Box.prototype.setStatus = function (text, kind) {
    this.status.textContent = text;
    this.status.className = "lt-status" + (kind ? " lt-" + kind : "");
    this.status.setAttribute("data-state", kind || "ok");
  };

  Box.prototype.run = async function (why) {
    var t0 = performance.now(), text = this.input.value, off = this.headsOffList();
    var ticket = (this.ticket = (this.ticket || 0) + 1);
    try {
      var result = await this.engine.translate(text, off);
      if (!api.timings.firstTranslation) { api.timings.firstTranslation = performance.now(); }
      var baseline = null;
      if (off.length) {
        if (!(text in this.baseline)) {
          this.baseline[text] = (await this.engine.translate(text, [])).text;
        }
        baseline = this.baseline[text];
      } else {
        this.baseline[text] = result.text;
      }
      if (ticket !== this.ticket) { return; } // a newer request has been made
      this.result = result;
      this.output.textContent = result.text;
      this.output.classList.toggle("lt-empty", !result.text);
      this.baselineNote.textContent = off.length ? off.length + " head" +
        (off.length > 1 ? "s" : "") + " off. With every head on: " + baseline : "";
      this.draw();
      // One full stop at the end of what is said, whether or not the German has its own.
      var said = result.text || "(empty)";
      if (!/[.!?…]$/.test(said)) { said += "."; }
      this.announce(["German: " + said, off.length ? this.baselineNote.textContent : "",
        result.source.warning || ""].filter(Boolean).join(" "));
      if (result.source.warning) {
        this.setStatus(result.source.warning, "warning");
      } else {
        this.setStatus(result.source.ids.length + " source tokens → " +
          result.writtenTokens.length + " output tokens, computed in your browser in " +
          Math.round(result.ms) + " ms.", null);
      }
      var ms = performance.now() - t0;
      this.root.setAttribute("data-last-ms", ms.toFixed(1));
      (api.timings.runs = api.timings.runs || []).push({ why: why, ms: ms });
      if (!api.timings.first) { api.timings.first = performance.now(); }
    } catch (err) {
      if (ticket !== this.ticket) { return; }
      this.result = null;
      this.output.textContent = "";
      this.baselineNote.textContent = "";
      this.figure.textContent = "";
      if (err instanceof InputError) {
        this.setStatus(err.message, "error");
      } else {
        this.setStatus("The translation failed: " + (err && err.message || err), "error");
      }
      this.announce("No translation. " + this.status.textContent);
    } finally {
      if (ticket === this.ticket) { this.root.setAttribute("data-runs", String(ticket)); }
    }
  };

  Box.prototype.draw = function () {
    var r = this.result;
    if (!r) { return; }
    var self = this, kind = this.kind.select.value, layer = Number(this.layer.select.value);
    var t = r.attention[kind], dims = t.dims; // (layers, H, Tq, Tk)
    var H = dims[1], Tq = dims[2], Tk = dims[3];
    var at = function (h) { return ((layer * H + h) * Tq) * Tk; };
    if (!this.headPicked) { // the first map: the head that picks one key per row most sharply
      var best = 0, bestSharpness = sharpness(t.data, at(0), Tq, Tk);
      for (var h = 1; h < H; h++) {
        var score = sharpness(t.data, at(h), Tq, Tk);
        if (score > bestSharpness) { best = h; bestSharpness = score; }
      }
      this.head.select.value = String(best);
      this.headPicked = true;
    }
    var head = Number(this.head.select.value);
    var src = r.source.tokens, read = r.decoderTokens;
    // Decoder rows are named by the token they write (row i reads token i, writes i + 1).
    var rows = kind === "encoder" ? src : r.writtenTokens.slice(0, Tq);
    var cols = kind === "decoder" ? read : src;
    var queryTitle = kind === "encoder" ? "English token" : "German token written";
    var keyTitle = kind === "decoder" ? "German token read" : "English source token";
    var rowWord = kind === "encoder" ? "row" : "writes";
    var rowsAre = kind === "encoder" ? "English tokens" : "German tokens written";
    var colsAre = kind === "decoder" ? "German tokens read" : "English source tokens";
    var label = KINDS.filter(function (k) { return k.key === kind; })[0].label;
    var isOff = function (h) { return self.headsOff.has([kind, layer, h].join("/")); };
    var width = this.figure.clientWidth || 640;
    this.figure.textContent = "";
    this.figure.setAttribute("data-kind", kind);
    this.figure.setAttribute("data-layer", String(layer));
    this.figure.setAttribute("data-head", String(head));
    this.figure.setAttribute("data-shape", [Tq, Tk].join("x"));

    // Under the large map, every head of this layer small: a click draws one large (the head
    // menu does the same from the keyboard, so these are left out of the tab order and of
    // what is read out).
    var thumbs = el("div", "lt-thumbs");
    thumbs.setAttribute("aria-hidden", "true");
    thumbs.append(el("span", "lt-thumbs-label", "The heads of layer " + layer + ": pick one to draw it large"));
    for (var k = 0; k < H; k++) {
      var button = el("button", "lt-thumb" + (k === head ? " lt-picked" : ""));
      button.type = "button";
      button.tabIndex = -1;
      button.setAttribute("data-testid", "live-head-thumb");
      button.setAttribute("data-head", String(k));
      var small = el("canvas", "lt-thumb-map");
      drawHeatmap(small, t.data, at(k), Tq, Tk, {
        thumb: true, maxWidth: Math.min(72, Math.floor((width - 24) / H) - 14),
      });
      button.append(small, el("span", null, "head " + k + (isOff(k) ? " (off)" : "")));
      button.addEventListener("click", function (e) {
        self.head.select.value = e.currentTarget.getAttribute("data-head");
        self.headPicked = true;
        self.draw();
      });
      thumbs.append(button);
    }

    var tops = strongest(t.data, at(head), Tq, Tk);
    var name = label + ", layer " + layer + ", head " + head + (isOff(head) ? " (switched off)" : "");
    var main = el("div", "lt-main");
    main.setAttribute("role", "img");
    main.setAttribute("data-testid", "live-attention-map");
    main.setAttribute("aria-label", name + ". Rows are queries (" + rowsAre + "), columns " +
      "are keys (" + colsAre + "). Brightest key of each row: " +
      described(tops, rows, cols, rowWord) + ".");
    var canvas = el("canvas", "lt-map lt-large");
    canvas.setAttribute("data-head", String(head));
    main.append(canvas);
    drawHeatmap(canvas, t.data, at(head), Tq, Tk, {
      rowLabels: rows, colLabels: cols, queryTitle: queryTitle, keyTitle: keyTitle,
      title: name, titleColour: isOff(head) ? "#b00" : null, font: 12, maxWidth: width,
    });

    var hint = el("div", "lt-hint");
    hint.setAttribute("data-testid", "live-attention-hint");
    hint.append(el("p", null, lookFor(kind)), el("p", null, readHere(kind, tops, rows, cols)));
    this.figure.append(main, thumbs, hint);
    // A long sentence on a narrow screen: the large map scrolls in its own frame, which the
    // keyboard can then reach too.
    if (main.scrollWidth > main.clientWidth + 1) {
      main.tabIndex = 0;
      main.classList.add("lt-scrolls");
    }
  };

  /* The first line under the maps: what the kind of attention usually shows. */
  function lookFor(kind) {
    if (kind === "cross") {
      return "What to look for: in each German row the brightest cell is the English token " +
        "it reads most, in the last layer usually the word it is translating.";
    }
    if (kind === "decoder") {
      return "What to look for: each German row may read only the tokens already written " +
        "(the mask keeps the upper right dark); rows often rest on <bos> or the token just read.";
    }
    return "What to look for: each English row gathers from the other English tokens; some " +
      "heads look at a neighbour or the other piece of a split word, others spread out.";
  }

  /* The second line: what this map shows, from its weights; where it does not line up. */
  function readHere(kind, tops, rows, cols) {
    var say = function (t) {
      return "the row " + (kind === "encoder" ? "of " : "writing ") + spoken(rows[t.row]) +
        " is brightest on " + spoken(cols[t.col]);
    };
    var sharp = tops.slice().sort(function (a, b) { return b.weight - a.weight; });
    var weak = tops.filter(function (t) { return t.weight < 0.5; })
      .sort(function (a, b) { return a.weight - b.weight; }).slice(0, 2);
    var text = "Here: " + say(sharp[0]) + " (" + sharp[0].weight.toFixed(2) + ")";
    if (kind === "decoder") {
      var last = tops.filter(function (t) { return t.col === t.row; }).length;
      var bos = tops.filter(function (t) { return t.col === 0 && t.row > 0; }).length;
      text = "Here " + last + " of " + tops.length + " rows are brightest on the token just " +
        "read and " + bos + " more on <bos>";
    }
    if (weak.length) {
      return text + (kind === "cross" ? "; where it does not line up, a row spreads its " +
        "weight: " : "; the most spread rows: ") +
        weak.map(function (t) {
          // A token without the word-start mark is the inner piece of a longer word.
          var piece = rows[t.row].charAt(0) !== "\u2581" && /[A-Za-zÄÖÜäöüß]/.test(rows[t.row]);
          return "\u201c" + spoken(rows[t.row]) + "\u201d (" + (piece ? "part of a word; " : "") +
            "largest " + t.weight.toFixed(2) + ")";
        }).join(", ") + ".";
    }
    return text + "; every row has one key of weight 0.5 or more.";
  }

  // ------------------------------------------------------------------ start
  function start() {
    var roots = document.querySelectorAll("[data-live-translate]");
    if (!roots.length) { return; }
    var boxes = Array.from(roots, function (root) { return new Box(root); });
    loadEngine().then(function (engine) {
      boxes.forEach(function (box) {
        box.attach(engine);
        box.run("load");
      });
    }, function (err) {
      console.warn("live translator:", err);
      api.loadError = String(err && err.message || err);
      boxes.forEach(function (box) {
        box.setStatus("The in-browser model could not be loaded (" + api.loadError + "). " +
          "Rebuild the book with `make book`, or open the chapter's notebook in Jupyter " +
          "or Colab to translate with Python.", "error");
        box.announce(box.status.textContent);
        box.root.setAttribute("data-load-error", "true");
      });
    });
  }

  // This script is only on pages with a translator box (the book's Sphinx extension adds
  // it there), so the model starts loading at once, while the page is still being read.
  loadEngine().catch(function () {}); // reported by start()
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
