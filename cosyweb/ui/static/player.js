/* cosyweb low-latency player.
 *
 * On 生成 (#cw-generate), when the "low-latency player" box is ticked, the browser supports
 * AudioContext + fetch streaming, and the uploaded prompt is registered (hidden #cw-prompt-id),
 * this script takes the click from Gradio (capture-phase listener; the inputs' values come from
 * a JS-only Gradio event on the hidden #cw-player-go button, already gathered at pointerdown)
 * and:
 *   1. POSTs the request to /api/v1/tts/stream (JSON, prompt_id: the voice profile was
 *      prepared server-side at upload time);
 *   2. reads the body with fetch() + ReadableStream (raw little-endian PCM16 mono, the sample
 *      rate in X-Sample-Rate), converts it to Float32 and schedules it gaplessly with
 *      window.cosywebPcmOut (pcm_out.js: sample-exact seams, fades instead of clicks, underruns
 *      counted and recovered a little ahead);
 *   3. keeps the received PCM and offers it as a wav download (the engine's sample rate,
 *      PCM16: the same samples as the server's file, lossless).
 * Busy (503/429) and bad input (422) come back as JSON before the stream starts; the
 * bilingual message is shown at once, session language first. The stop button aborts the
 * fetch, which cancels the job server-side. Otherwise the click goes on to Gradio's streaming
 * gr.Audio (the fallback).
 *
 * Timeline (window.cosywebPlayer.stats, performance.now() ms): t_click (the click event's
 * timeStamp), t_handler (our click listener runs), t_run (Gradio has handed over the inputs'
 * values), t_request, t_headers, t_first_byte, t_first_scheduled, first_sound_at (the
 * performance time the first sample reaches the output, mapped from the AudioContext clock
 * with getOutputTimestamp()), click_to_sound_ms, underruns, n_buffers, n_samples, done...
 * Each finished run is appended to window.cosywebPlayer.runs; a CustomEvent
 * "cosyweb-player" ({detail: {type, stats}}) fires on window for: start, response, playing,
 * underrun, done, busy, error, stopped.
 *
 * The panel's line is kept as a function of the language: a switch of #cw-lang re-renders it
 * (relabel). inputsChanged(status, text, promptId), run by a JS-only Gradio event when the text
 * or the prompt changes, drops a previous run's error line (unless the inputs are still those of
 * that run). The html element gets the class cw-gradio-route
 * while the last click went to Gradio's path (style.css then shows Gradio's output boxes).
 */
(() => {
  "use strict";
  if (window.cosywebPlayer) return;
  const CFG = window.cosywebPlayerConfig || {};
  const STR = CFG.strings || {};
  const API = (CFG.apiBase || "/api/v1").replace(/\/$/, "");
  const OUT = window.cosywebPcmOut; // pcm_out.js, inlined before this script
  const POLL_MS = 1000;        // queue-position poll while no audio has arrived
  const PREPARED_MAX_AGE_MS = 5000; // values gathered at pointerdown are used by a click this soon

  const $ = (sel) => document.querySelector(sel);
  const lang = () => (player.lang === "en" ? "en" : "zh");
  function t(key, vars) {
    const pair = STR[key] || [key, key];
    let s = lang() === "en" ? pair[1] : pair[0];
    for (const [k, v] of Object.entries(vars || {})) s = s.split("{" + k + "}").join(String(v));
    return s;
  }
  /** "<session language> / <other>" of a {zh, en} error body, like cosyweb.ui.i18n.bilingual. */
  function bilingual(err) {
    const first = lang() === "en" ? err.en : err.zh;
    const second = lang() === "en" ? err.zh : err.en;
    return first === second || !second ? first : first + " / " + second;
  }

  // A per-browser client id for the server's per-client limit (the server sets an httponly
  // cookie of the same name after the first request; until then several pages on one address
  // would count as one client). A write over an existing httponly cookie is ignored.
  if (!/(^|;\s*)cosyweb_client=/.test(document.cookie)) {
    const rnd = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");
    document.cookie = "cosyweb_client=" + rnd + "; path=/; max-age=2592000; SameSite=Lax";
  }

  const supported = () =>
    typeof (window.AudioContext || window.webkitAudioContext) === "function" &&
    typeof window.ReadableStream === "function" && typeof window.fetch === "function" &&
    typeof window.AbortController === "function";

  const player = {
    lang: "zh",
    get ctx() { return OUT.ctx; },
    stats: null,
    runs: [],
    active: null,
    supported,
    enabled() {
      const box = $("#cw-use-player input[type=checkbox]");
      return !!box && box.checked && supported();
    },
    run, stop, inputsChanged, relabel,
    ensureContext: (sr) => OUT.ensureContext(sr || CFG.sampleRate),
    perfAtContextTime: OUT.perfAtContextTime,
  };
  const ensureContext = player.ensureContext, perfAtContextTime = OUT.perfAtContextTime;
  window.cosywebPlayer = player;

  // --- panel ---------------------------------------------------------------------------------
  function panel() {
    const root = $("#cw-player");
    if (!root) return null;
    let box = root.querySelector(".cw-player-box");
    if (!box) {
      box = document.createElement("div");
      box.className = "cw-player-box";
      box.innerHTML = '<div class="cw-player-status" id="cw-player-status" role="status" aria-live="polite"></div>' +
        '<a class="cw-player-download" id="cw-player-download" hidden></a>';
      root.appendChild(box);
    }
    return box;
  }
  // The line on screen is kept as a function of the language, so a language switch re-renders it.
  let line = { kind: "", render: () => "" };
  /** Show `text` (a string, or a function returning it in the current language) as `kind`. */
  function show(kind, text) {
    line = { kind, render: typeof text === "function" ? text : () => text };
    const box = panel();
    if (!box) return;
    const el = box.querySelector(".cw-player-status");
    el.dataset.kind = kind;
    el.textContent = line.render();
  }
  let download = null; // {size_kb} of the offered wav
  function downloadLabel() {
    return "⇣ " + t("download") + " (" + download.size_kb + " KB)";
  }
  function offerDownload(blob, jobId) {
    const a = panel() && panel().querySelector(".cw-player-download");
    if (!a) return;
    if (a.href && a.href.startsWith("blob:")) URL.revokeObjectURL(a.href);
    a.href = URL.createObjectURL(blob);
    a.download = "cosyweb-" + (jobId || "result") + ".wav";
    download = { size_kb: (blob.size / 1024).toFixed(1) };
    a.textContent = downloadLabel();
    a.hidden = false;
  }
  /** Set the player's language ("zh"/"en") and re-render its line and download link in it. */
  function relabel(lg) {
    player.lang = lg === "en" ? "en" : "zh";
    show(line.kind, line.render);
    const a = panel() && panel().querySelector(".cw-player-download");
    if (a && download) a.textContent = downloadLabel();
  }
  /** The text or the prompt changed: a previous run's error (or busy) line is stale and goes.
   *  `status` is the Gradio status line (#cw-status); returns it, or "" when it is an error
   *  line (i18n "status_error": "✗ {message}"). */
  function inputsChanged(status, text, promptId) {
    // A change event that arrives late (after a quick click) carries the inputs of the run
    // itself: that run's error line is not stale.
    const last = player.lastInputs;
    const same = !!last && typeof text === "string" && text === last.text && (promptId || "") === last.promptId;
    if (same) return status;
    if (line.kind === "error" || line.kind === "busy") show("", "");
    return typeof status === "string" && status.startsWith("✗") ? "" : status;
  }
  function hideDownload() {
    const a = panel() && panel().querySelector(".cw-player-download");
    if (a) a.hidden = true;
  }

  function emit(type) {
    window.dispatchEvent(new CustomEvent("cosyweb-player", { detail: { type, stats: player.stats } }));
  }

  // --- scheduling ----------------------------------------------------------------------------
  /** Schedule `f32` (Float32Array at `sr` Hz) after what run `r` holds; record the timeline. */
  function schedule(r, f32, sr) {
    const st = r.stats;
    const { first, late, startS } = OUT.schedule(r.track, f32, sr);
    st.n_buffers += 1;
    if (late) {
      st.underruns += 1;
      st.underrun_at.push(performance.now());
      emit("underrun");
    }
    if (!first) return;
    st.t_first_scheduled = performance.now();
    st.first_start_ctx_s = startS;
    st.first_sound_at = perfAtContextTime(startS);
    st.click_to_sound_ms = st.first_sound_at - st.t_click;
    // Re-read the clock mapping once the first sample should be out, and tell listeners.
    setTimeout(() => {
      if (player.active !== r) return;
      st.first_sound_at = perfAtContextTime(startS);
      st.click_to_sound_ms = st.first_sound_at - st.t_click;
      st.playing = OUT.ctx.currentTime >= startS;
      if (st.status === "starting") show("playing", () => t("playing")); // not over the done line
      emit("playing");
    }, Math.max(0, st.first_sound_at - performance.now()) + 5);
  }

  // --- one run -------------------------------------------------------------------------------
  function newStats(click) {
    return {
      t_click: click.t_click, t_handler: click.t_handler, t_run: performance.now(), t_request: null,
      t_headers: null, t_first_byte: null, t_first_scheduled: null,
      first_start_ctx_s: null, first_sound_at: null, click_to_sound_ms: null, playing: false,
      t_done: null, playback_end_at: null, underruns: 0, underrun_at: [], n_buffers: 0, n_bytes: 0,
      n_samples: 0, sample_rate: null, job_id: null, http_status: null, status: "starting",
      error: null, queue_position: null, result: null,
    };
  }

  /** Start a run. `args` are the Gradio input values: [lang, prompt_id, prompt_text, text, mode,
   *  dialect, emotion, speed, volume, seed, instruct_text, language]. Returns [] at once. */
  function run(args) {
    const prep = player.preparing;
    if (prep && !prep.args) { // values gathered at pointerdown: the click starts them
      prep.args = args;
      prep.resolve(args);
      return [];
    }
    return start(args, player.pendingClick || { t_click: performance.now(), t_handler: null });
  }

  function start(args, click) {
    const [lg, promptId, promptText, text, mode, dialect, emotion, speed, volume, seed, instruct, language] = args;
    player.lang = lg === "en" ? "en" : "zh";
    player.lastInputs = { text: text || "", promptId: promptId || "" };
    player.pendingClick = null;
    if (player.active) stop("restart");
    const r = { stats: newStats(click), abort: new AbortController(), track: OUT.newTrack(), pieces: [] };
    player.active = r;
    player.stats = r.stats;
    hideDownload();
    const body = {
      prompt_id: promptId || "", prompt_text: promptText || "", text: text || "", mode, dialect, emotion,
      speed, volume, seed: seed === null || seed === undefined ? 0 : seed, instruct_text: instruct || "",
      language: language || "auto", format: "pcm",
    };
    show("info", () => t("connecting"));
    emit("start");
    stream(r, body).catch((e) => fail(r, "error", String(e && e.message || e)));
    return [];
  }

  async function stream(r, body) {
    const st = r.stats;
    ensureContext();
    st.t_request = performance.now();
    let resp;
    try {
      resp = await fetch(API + "/tts/stream", {
        method: "POST", body: JSON.stringify(body), signal: r.abort.signal,
        headers: { "Content-Type": "application/json" }, credentials: "same-origin", cache: "no-store",
      });
    } catch (e) {
      if (r.abort.signal.aborted) return;
      return fail(r, "error", () => t("network_error"));
    }
    st.t_headers = performance.now();
    st.http_status = resp.status;
    if (!resp.ok) {
      let err = null;
      try { err = (await resp.json()).error; } catch (e) { /* not JSON */ }
      const kind = resp.status === 503 || resp.status === 429 ? "busy" : "error";
      return fail(r, kind, err ? () => bilingual(err) : () => t("http_error", { status: resp.status }));
    }
    const sr = parseInt(resp.headers.get("X-Sample-Rate") || "0", 10) || CFG.sampleRate;
    st.sample_rate = sr;
    st.job_id = resp.headers.get("X-Cosyweb-Job-Id");
    st.queue_position = parseInt(resp.headers.get("X-Cosyweb-Queue-Position") || "0", 10);
    ensureContext(sr);
    emit("response");
    if (st.queue_position > 0) { show("queued", () => t("queued", { position: st.queue_position })); pollQueue(r); }
    const reader = resp.body.getReader();
    let carry = null; // odd trailing byte of the previous read
    for (;;) {
      let res;
      try {
        res = await reader.read();
      } catch (e) {
        if (r.abort.signal.aborted) return;
        return failFromJob(r);
      }
      if (res.done) break;
      let bytes = res.value;
      if (!bytes || !bytes.length) continue;
      if (st.t_first_byte === null) st.t_first_byte = performance.now();
      st.n_bytes += bytes.length;
      if (carry !== null) {
        const joined = new Uint8Array(bytes.length + 1);
        joined[0] = carry; joined.set(bytes, 1); bytes = joined; carry = null;
      }
      if (bytes.length % 2) { carry = bytes[bytes.length - 1]; bytes = bytes.subarray(0, bytes.length - 1); }
      if (!bytes.length) continue;
      const i16 = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
      r.pieces.push(i16);
      const f32 = new Float32Array(i16.length);
      for (let i = 0; i < i16.length; i++) f32[i] = i16[i] / 32768;
      st.n_samples += i16.length;
      if (player.active !== r) return;
      schedule(r, f32, sr);
    }
    if (player.active !== r) return;
    st.t_done = performance.now();
    st.playback_end_at = OUT.ctx ? perfAtContextTime(r.track.endS) : null;
    offerDownload(OUT.wavBlob(r.pieces, sr), st.job_id);
    let result = null; // the job summary is recorded as the response ends: retry briefly
    for (let i = 0; i < 5 && !(result && result.result); i++) {
      if (i) await new Promise((ok) => setTimeout(ok, 100));
      result = await jobInfo(st.job_id);
    }
    st.result = result && result.result || null;
    st.status = "done";
    show("done", () => doneLine(st));
    emit("done");
    player.runs.push(st);
  }

  function doneLine(st) {
    const audioS = st.sample_rate ? st.n_samples / st.sample_rate : 0;
    const res = st.result || {};
    return t("done", {
      click_to_sound_ms: st.click_to_sound_ms === null ? "—" : Math.round(st.click_to_sound_ms),
      first_chunk_ms: res.first_chunk_ms === undefined ? "—" : Math.round(res.first_chunk_ms),
      audio_s: audioS.toFixed(2),
      rtf: res.rtf === undefined ? "—" : Number(res.rtf).toFixed(3),
      underruns: st.underruns,
    });
  }

  async function jobInfo(jobId) {
    if (!jobId) return null;
    try {
      const resp = await fetch(API + "/jobs/" + encodeURIComponent(jobId), { credentials: "same-origin", cache: "no-store" });
      return resp.ok ? await resp.json() : null;
    } catch (e) {
      return null;
    }
  }

  async function pollQueue(r) {
    while (player.active === r && r.stats.t_first_byte === null && r.stats.status === "starting") {
      await new Promise((ok) => setTimeout(ok, POLL_MS));
      if (player.active !== r || r.stats.t_first_byte !== null) return;
      const info = await jobInfo(r.stats.job_id);
      if (info && info.position) show("queued", () => t("queued", { position: info.position }));
      else if (info && info.status === "running") show("info", () => t("generating"));
    }
  }

  async function failFromJob(r) {
    const info = await jobInfo(r.stats.job_id);
    const err = info && info.error;
    fail(r, "error", err ? () => bilingual(err) : () => t("stream_broken"));
  }

  /** End run `r` as `kind` with `message` (a string, or a function of the current language). */
  function fail(r, kind, message) {
    if (player.active !== r) return;
    const msg = typeof message === "function" ? message : () => message;
    r.stats.status = kind;
    r.stats.error = msg();
    r.stats.t_done = performance.now();
    show(kind, () => (kind === "busy" || kind === "error" ? "✗ " : "") + msg());
    emit(kind);
    player.runs.push(r.stats);
    player.active = null;
    OUT.silence(r.track);
  }

  /** Stop the current run: abort the fetch (the server cancels the job) and silence it. A run
   *  whose stream has already ended is only silenced (its stats stay "done"). */
  function stop(reason) {
    const r = player.active;
    if (!r) return false;
    player.active = null;
    const playing = OUT.ctx && OUT.ctx.currentTime < r.track.endS;
    OUT.silence(r.track);
    if (r.stats.status === "done") {
      if (playing && reason !== "restart") show("info", () => t("stopped"));
      return playing;
    }
    r.abort.abort();
    r.stats.status = "stopped";
    r.stats.t_done = performance.now();
    if (reason !== "restart") { show("info", () => t("stopped")); emit("stopped"); }
    player.runs.push(r.stats);
    return true;
  }

  // --- taking the click ----------------------------------------------------------------------
  document.addEventListener("change", (e) => {
    const input = e.target;
    if (input && input.closest && input.closest("#cw-lang") && input.checked) relabel(input.value);
  }, true);
  // While the player is ticked and runs the jobs, Gradio's (empty) output boxes are hidden
  // (style.css); a run that goes to Gradio's path shows them again, with its audio and file.
  const route = (which) => document.documentElement.classList.toggle("cw-gradio-route", which === "gradio");
  if (!supported()) route("gradio");
  // Use the player only when a prompt is registered; otherwise Gradio's path decodes the
  // upload itself or says what is missing.
  const takesIt = () => {
    const pid = $("#cw-prompt-id textarea, #cw-prompt-id input");
    return player.enabled() && !(pid && !pid.value);
  };
  const go = () => { const b = $("#cw-player-go"); if (b) b.click(); }; // Gradio hands the values to run()
  // Pressing the button already gathers the inputs' values (Gradio's dispatch takes a few ms,
  // more on a busy machine) and starts the AudioContext; the request itself waits for the click.
  document.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || !e.target.closest || !e.target.closest("#cw-generate") || !takesIt()) return;
    ensureContext();
    let resolve;
    const promise = new Promise((ok) => { resolve = ok; });
    player.preparing = { t: performance.now(), args: null, promise, resolve };
    go();
  }, true);
  document.addEventListener("click", (e) => {
    const target = e.target.closest ? e.target : null;
    if (!target) return;
    if (target.closest("#cw-stop")) { stop("stop"); return; }
    if (!target.closest("#cw-generate")) return;
    const prep = player.preparing;
    player.preparing = null;
    if (!takesIt()) { // Gradio's streaming gr.Audio takes it
      player.lastRoute = "gradio";
      route("gradio");
      if (player.active) stop("restart");
      show("", "");
      hideDownload();
      return;
    }
    e.stopPropagation();
    e.preventDefault();
    player.lastRoute = "player";
    route("player");
    const click = { t_click: e.timeStamp || performance.now(), t_handler: performance.now() };
    ensureContext(); // inside the gesture: allowed to start audio
    if (prep && performance.now() - prep.t < PREPARED_MAX_AGE_MS) {
      prep.promise.then((args) => start(args, click));
    } else { // keyboard activation (no pointerdown), or a stale press
      player.pendingClick = click;
      go();
    }
  }, true);
})();
