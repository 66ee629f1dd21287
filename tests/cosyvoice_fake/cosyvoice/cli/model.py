"""Fake of upstream ``cosyvoice/cli/model.py`` ``CosyVoice2Model``/``CosyVoice3Model`` (FunAudioLLM/CosyVoice ace7c47).

Keeps what the adapter depends on and what goes wrong upstream:

* the LLM runs in a thread (``llm_job``) that appends speech tokens to
  ``tts_speech_token_dict[uuid]`` and sets ``llm_end_dict[uuid]``; the CosyVoice3 LLM asserts
  that token 151646 (``<|endofprompt|>``) is in ``prompt_text + text``. When it fails, the
  thread dies, the end flag is never set, and a streaming ``tts`` polls for ever;
* streaming grows ``self.token_hop_len`` on the shared model (25 -> 50 -> 100) and never resets it;
* first chunk = hop + prompt padding tokens, 960 samples (40 ms at 24 kHz) per speech token;
* ``speed`` only works without streaming; zero tokens crash the vocoder like HiFT does;
* tokens are drawn from torch's *global* RNG, so a seed reproduces audio only when no other
  request draws meanwhile.

Knobs for tests (class attributes): ``POLL_S`` (upstream sleeps 0.1 s), ``LLM_STEP_S``,
``TOKENS_PER_TEXT_TOKEN``, ``fail_token2wav`` (an exception raised once by the next ``token2wav``),
``hang_token2wav`` (an Event; ``token2wav`` blocks until it is set).
"""

import threading
import time
import uuid

import numpy as np
import torch
from torch.nn import functional as F

SAMPLES_PER_TOKEN = 960  # 2 mel frames per token x 480 samples per frame at 24 kHz


class _Flow:
    pre_lookahead_len = 3
    token_mel_ratio = 2


class CosyVoice3Model:
    POLL_S = 0.01
    LLM_STEP_S = 0.0005
    TOKENS_PER_TEXT_TOKEN = 8
    fail_token2wav = None
    hang_token2wav = None
    is_v3 = True

    def __init__(self, fp16=False):
        self.device = torch.device("cpu")
        self.fp16 = fp16
        self.flow = _Flow()
        self.token_hop_len = 25
        self.token_max_hop_len = 4 * self.token_hop_len
        self.stream_scale_factor = 2
        self.lock = threading.Lock()
        self.tts_speech_token_dict = {}
        self.llm_end_dict = {}
        self.hift_cache_dict = {}
        self.silent_tokens = []
        self.n_tts_calls = 0

    def llm_job(self, text, prompt_text, llm_prompt_speech_token, llm_embedding, uuid):
        full = torch.concat([prompt_text, text], dim=1)
        if self.is_v3:
            assert 151646 in full, "<|endofprompt|> not detected in CosyVoice3 text or prompt_text, check your input!"
        n_tokens = self.TOKENS_PER_TEXT_TOKEN * int(text.shape[1])
        for _ in range(n_tokens):
            time.sleep(self.LLM_STEP_S)
            self.tts_speech_token_dict[uuid].append(int(torch.randint(0, 6561, (1,)).item()))
        self.llm_end_dict[uuid] = True

    def token2wav(self, token, prompt_token, prompt_feat, embedding, token_offset, uuid, stream=False, finalize=False, speed=1.0):
        if self.hang_token2wav is not None:
            self.hang_token2wav.wait()
        if self.fail_token2wav is not None:
            exc, type(self).fail_token2wav = self.fail_token2wav, None
            raise exc
        n_tok = token.shape[1] - (0 if finalize else self.flow.pre_lookahead_len)
        ids = token[0, token_offset:token_offset + max(0, n_tok - token_offset)].tolist()
        if self.hift_cache_dict[uuid] is None:
            self.hift_cache_dict[uuid] = {"speech_offset": 0}
        if speed != 1.0:
            assert token_offset == 0 and finalize is True, "speed change only support non-stream inference mode"
        if not ids:
            raise RuntimeError("Kernel size can't be greater than actual input size")
        t = np.arange(SAMPLES_PER_TOKEN) / 24000.0
        wav = np.concatenate([0.3 * np.sin(2 * np.pi * (100 + i % 400) * t) for i in ids]).astype(np.float32)
        speech = torch.from_numpy(wav).unsqueeze(0)
        if speed != 1.0:
            speech = F.interpolate(speech.unsqueeze(0), size=int(speech.shape[1] / speed), mode="linear")[0]
        self.hift_cache_dict[uuid]["speech_offset"] += speech.shape[1]
        return speech

    def tts(self, text=torch.zeros(1, 0, dtype=torch.int32), flow_embedding=torch.zeros(0, 192), llm_embedding=torch.zeros(0, 192),
            prompt_text=torch.zeros(1, 0, dtype=torch.int32),
            llm_prompt_speech_token=torch.zeros(1, 0, dtype=torch.int32),
            flow_prompt_speech_token=torch.zeros(1, 0, dtype=torch.int32),
            prompt_speech_feat=torch.zeros(1, 0, 80), source_speech_token=torch.zeros(1, 0, dtype=torch.int32), stream=False, speed=1.0, **kwargs):
        self.n_tts_calls += 1
        this_uuid = str(uuid.uuid1())
        with self.lock:
            self.tts_speech_token_dict[this_uuid], self.llm_end_dict[this_uuid] = [], False
            self.hift_cache_dict[this_uuid] = None
        p = threading.Thread(target=self.llm_job, args=(text, prompt_text, llm_prompt_speech_token, llm_embedding, this_uuid))
        p.start()
        common = dict(prompt_token=flow_prompt_speech_token, prompt_feat=prompt_speech_feat, embedding=flow_embedding, uuid=this_uuid)
        if stream is True:
            token_offset = 0
            pad = int(np.ceil(flow_prompt_speech_token.shape[1] / self.token_hop_len) * self.token_hop_len - flow_prompt_speech_token.shape[1])
            while True:
                time.sleep(self.POLL_S)
                hop = self.token_hop_len + pad if token_offset == 0 else self.token_hop_len
                if len(self.tts_speech_token_dict[this_uuid]) - token_offset >= hop + self.flow.pre_lookahead_len:
                    tokens = torch.tensor(self.tts_speech_token_dict[this_uuid][:token_offset + hop + self.flow.pre_lookahead_len]).unsqueeze(0)
                    speech = self.token2wav(token=tokens, token_offset=token_offset, stream=stream, finalize=False, **common)
                    token_offset += hop
                    self.token_hop_len = min(self.token_max_hop_len, self.token_hop_len * self.stream_scale_factor)
                    yield {"tts_speech": speech.cpu()}
                if self.llm_end_dict[this_uuid] is True and len(self.tts_speech_token_dict[this_uuid]) - token_offset < hop + self.flow.pre_lookahead_len:
                    break
            p.join()
            tokens = torch.tensor(self.tts_speech_token_dict[this_uuid]).unsqueeze(0)
            speech = self.token2wav(token=tokens, token_offset=token_offset, finalize=True, **common)
            yield {"tts_speech": speech.cpu()}
        else:
            p.join()
            tokens = torch.tensor(self.tts_speech_token_dict[this_uuid]).unsqueeze(0)
            speech = self.token2wav(token=tokens, token_offset=0, finalize=True, speed=speed, **common)
            yield {"tts_speech": speech.cpu()}
        with self.lock:
            self.tts_speech_token_dict.pop(this_uuid)
            self.llm_end_dict.pop(this_uuid)
            self.hift_cache_dict.pop(this_uuid)


class CosyVoice2Model(CosyVoice3Model):
    is_v3 = False
