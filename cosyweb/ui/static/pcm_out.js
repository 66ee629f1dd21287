/* cosyweb: gapless playback of streamed PCM on one AudioContext (used by player.js).
 *
 * window.cosywebPcmOut:
 *   ensureContext(sampleRate)  the shared AudioContext (created in a user gesture, then kept) at
 *                              the stream's rate, so buffers are not resampled one by one; all
 *                              sources go through one master GainNode.
 *   newTrack()                 the play-head state of one stream.
 *   schedule(track, f32, sr)   queue Float32 samples right after what the track already holds:
 *                              the play-head is an integer frame count, so buffers join sample-
 *                              exactly. Every buffer end is guarded by a FADE_S fade-out on the
 *                              master gain, cancelled when the next buffer arrives in time; a
 *                              buffer that arrives later (the play-head fell behind the clock)
 *                              is an underrun: the play-head restarts RESTART_LEAD_S ahead with
 *                              a FADE_S fade-in, so a gap fades instead of clicking. Returns
 *                              {first, late, startS, endS} (context seconds).
 *   silence(track)             fade out and stop the track's buffers.
 *   perfAtContextTime(ct)      the performance.now() time at which context time ct reaches the
 *                              output (getOutputTimestamp(), else currentTime + base/output latency).
 *   wavBlob(pieces, sr)        a PCM16 mono WAV Blob of Int16Array pieces (lossless download).
 */
(() => {
  "use strict";
  if (window.cosywebPcmOut) return;
  const FADE_S = 0.005;        // fade at stream start/end and around underruns
  const START_LEAD_S = 0.01;   // the first buffer starts this far ahead of the clock (> 1 render quantum)
  const RESTART_LEAD_S = 0.05; // after an underrun, restart this far ahead
  const LATE_MARGIN_S = 0.003; // arriving later than (play-head - fade - margin) is an underrun

  const out = { ctx: null, gain: null, FADE_S, RESTART_LEAD_S, ensureContext, newTrack, schedule, silence,
                perfAtContextTime, wavBlob };

  function ensureContext(sampleRate) {
    const AC = window.AudioContext || window.webkitAudioContext;
    if (out.ctx && sampleRate && out.ctx.sampleRate !== sampleRate) {
      out.ctx.close();
      out.ctx = null;
    }
    if (!out.ctx) {
      try {
        out.ctx = new AC({ latencyHint: "interactive", sampleRate });
      } catch (e) { // a browser without free sample rates: it resamples each buffer
        out.ctx = new AC({ latencyHint: "interactive" });
      }
      out.gain = out.ctx.createGain();
      out.gain.connect(out.ctx.destination);
    }
    if (out.ctx.state === "suspended") out.ctx.resume();
    return out.ctx;
  }

  function perfAtContextTime(ct) {
    const ctx = out.ctx;
    const ts = ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
    if (ts && ts.performanceTime > 0) return ts.performanceTime + (ct - ts.contextTime) * 1000;
    const lat = (ctx.baseLatency || 0) + (ctx.outputLatency || 0);
    return performance.now() + (ct - ctx.currentTime + lat) * 1000;
  }

  function newTrack() {
    return { sources: [], playHeadFrame: null, fadeInEnd: 0, endS: 0 };
  }

  function schedule(track, f32, sr) {
    const ctx = out.ctx, g = out.gain.gain, rate = ctx.sampleRate, now = ctx.currentTime;
    const buf = ctx.createBuffer(1, f32.length, sr);
    buf.copyToChannel(f32, 0);
    let startFrame = track.playHeadFrame;
    const first = startFrame === null;
    const late = !first && now + LATE_MARGIN_S >= startFrame / rate - FADE_S;
    if (first || late) {
      startFrame = Math.ceil((now + (first ? START_LEAD_S : RESTART_LEAD_S)) * rate);
      const t0 = startFrame / rate;
      g.cancelScheduledValues(now);
      g.setValueAtTime(0, t0);
      g.linearRampToValueAtTime(1, t0 + FADE_S);
      track.fadeInEnd = t0 + FADE_S;
    } else {
      // In time: drop the previous buffer's guard fade-out (never the fade-in).
      g.cancelScheduledValues(Math.max(startFrame / rate - FADE_S, track.fadeInEnd + 0.5 / rate));
    }
    const src = ctx.createBufferSource();
    src.buffer = buf;
    src.connect(out.gain);
    const startS = startFrame / rate;
    src.start(startS);
    track.sources.push(src);
    src.onended = () => { track.sources = track.sources.filter((s) => s !== src); };
    const endFrame = startFrame + Math.round(buf.duration * rate);
    const endS = endFrame / rate;
    g.setValueAtTime(1, Math.max(track.fadeInEnd + 1 / rate, endS - FADE_S)); // the guard
    g.linearRampToValueAtTime(0, endS);
    track.playHeadFrame = endFrame;
    track.endS = endS;
    return { first, late, startS, endS };
  }

  function silence(track) {
    const ctx = out.ctx;
    const now = ctx ? ctx.currentTime : 0;
    if (out.gain && ctx) {
      const g = out.gain.gain;
      g.cancelScheduledValues(now);
      g.setValueAtTime(g.value, now);
      g.linearRampToValueAtTime(0, now + FADE_S);
    }
    for (const s of track.sources) { try { s.stop(now + FADE_S); } catch (e) { /* already stopped */ } }
    track.sources = [];
  }

  function wavBlob(pieces, sr) {
    const n = pieces.reduce((a, p) => a + p.length, 0);
    const h = new DataView(new ArrayBuffer(44));
    const str = (o, s) => { for (let i = 0; i < 4; i++) h.setUint8(o + i, s.charCodeAt(i)); };
    str(0, "RIFF"); h.setUint32(4, 36 + 2 * n, true); str(8, "WAVE");
    str(12, "fmt "); h.setUint32(16, 16, true); h.setUint16(20, 1, true); h.setUint16(22, 1, true);
    h.setUint32(24, sr, true); h.setUint32(28, 2 * sr, true); h.setUint16(32, 2, true); h.setUint16(34, 16, true);
    str(36, "data"); h.setUint32(40, 2 * n, true);
    return new Blob([h.buffer, ...pieces], { type: "audio/wav" });
  }

  window.cosywebPcmOut = out;
})();
