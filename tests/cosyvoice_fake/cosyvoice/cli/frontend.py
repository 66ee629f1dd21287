"""Fake of upstream ``cosyvoice/cli/frontend.py`` ``CosyVoiceFrontEnd`` (FunAudioLLM/CosyVoice ace7c47).

Same method names and dict keys. Like upstream it imports ``load_wav`` *by name*, so patching
only ``cosyvoice.utils.file_utils.load_wav`` would not reach it. Features are cheap stand-ins
computed from the real prompt samples: 25 Hz "speech tokens", 50 Hz "mel" frames, a 192-d
"speaker embedding".
"""

import os
from typing import Generator

import numpy as np
import torch

from cosyvoice.utils.file_utils import load_wav, logging

V2_SPECIAL_TOKENS = [
    "<|im_start|>", "<|im_end|>", "<|endofprompt|>", "[breath]", "<strong>", "</strong>", "[noise]",
    "[laughter]", "[cough]", "[clucking]", "[accent]", "[quick_breath]", "<laughter>", "</laughter>",
    "[hissing]", "[sigh]", "[vocalized-noise]", "[lipsmack]", "[mn]",
]
# A subset of CosyVoice3's extra tokens (ARPAbet phones, pinyin initials and toned finals).
V3_EXTRA_TOKENS = [
    "<|endofsystem|>", "[AY0]", "[AY1]", "[M]", "[N]", "[T]", "[UW1]", "[HH]", "[AH0]", "[L]", "[OW1]",
    "[b]", "[d]", "[g]", "[h]", "[j]", "[l]", "[m]", "[n]", "[sh]", "[x]", "[zh]",
    "[ào]", "[ǎo]", "[āo]", "[áo]", "[ǐ]", "[ì]", "[īng]", "[ǎn]", "[ōng]",
]


class FakeQwenTokenizer:
    """Stand-in for ``CosyVoice2Tokenizer``/``CosyVoice3Tokenizer``: special tokens get ids from 151646 on."""

    def __init__(self, version):
        extra = V3_EXTRA_TOKENS if version == 3 else []
        self.special_tokens = {
            "eos_token": "<|endoftext|>",
            "pad_token": "<|endoftext|>",
            "additional_special_tokens": V2_SPECIAL_TOKENS + extra,
        }
        ids = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
        for tok in self.special_tokens["additional_special_tokens"]:
            ids.setdefault(tok, 151646 + len(ids) - 3)
        self.ids = ids
        self._by_len = sorted(ids, key=len, reverse=True)

    def encode(self, text, **kwargs):
        out, i = [], 0
        while i < len(text):
            for tok in self._by_len:
                if text.startswith(tok, i):
                    out.append(self.ids[tok])
                    i += len(tok)
                    break
            else:
                out.append(ord(text[i]) % 150000 + 1)
                i += 1
        return out


class CosyVoiceFrontEnd:
    def __init__(self, get_tokenizer, feat_extractor, campplus_model, speech_tokenizer_model, spk2info="", allowed_special="all"):
        self.tokenizer = get_tokenizer()
        self.feat_extractor = feat_extractor
        self.device = torch.device("cpu")
        for path in (campplus_model, speech_tokenizer_model):
            assert os.path.exists(path), path
        self.spk2info = {}
        self.allowed_special = allowed_special
        self.n_feature_extractions = 0

    def _extract_text_token(self, text):
        if isinstance(text, Generator):
            raise NotImplementedError("the fake has no bistream input")
        tokens = torch.tensor([self.tokenizer.encode(text, allowed_special=self.allowed_special)], dtype=torch.int32)
        return tokens, torch.tensor([tokens.shape[1]], dtype=torch.int32)

    def _check_path(self, prompt_wav):
        assert isinstance(prompt_wav, (str, os.PathLike)), f"prompt_wav must be a file path, got {type(prompt_wav).__name__}"
        assert os.path.isfile(prompt_wav), f"prompt_wav {prompt_wav} does not exist"

    def _extract_speech_token(self, prompt_wav):
        self._check_path(prompt_wav)
        speech = load_wav(prompt_wav, 16000)
        assert speech.dim() == 2 and speech.shape[0] == 1 and speech.dtype == torch.float32
        assert speech.shape[1] / 16000 <= 30, "do not support extract speech token for audio longer than 30s"
        frames = speech[0, : speech.shape[1] // 640 * 640].reshape(-1, 640)
        tokens = (frames.pow(2).mean(dim=1).sqrt() * 1e4).long() % 6561
        tokens = tokens.to(torch.int32).unsqueeze(0)
        return tokens, torch.tensor([tokens.shape[1]], dtype=torch.int32)

    def _extract_spk_embedding(self, prompt_wav):
        speech = load_wav(prompt_wav, 16000)
        x = speech[0]
        stats = torch.stack([x.mean(), x.std(), x.abs().max()])
        return stats.repeat(64).unsqueeze(0)  # (1, 192)

    def _extract_speech_feat(self, prompt_wav):
        speech = load_wav(prompt_wav, 24000)
        frames = speech[0, : speech.shape[1] // 480 * 480].reshape(-1, 480)
        feat = frames.abs().mean(dim=1, keepdim=True).repeat(1, 80).unsqueeze(0)  # (1, T, 80)
        return feat, torch.tensor([feat.shape[1]], dtype=torch.int32)

    def text_normalize(self, text, split=True, text_frontend=True):
        if isinstance(text, Generator):
            return [text]
        if "<|" in text and "|>" in text:
            text_frontend = False
        if text_frontend is False or text == "":
            return [text] if split is True else text
        text = text.strip()
        parts, cur = [], ""
        for ch in text:
            cur += ch
            if ch in "。！？.!?":
                parts.append(cur)
                cur = ""
        if cur:
            parts.append(cur)
        return parts if split is True else text

    def frontend_zero_shot(self, tts_text, prompt_text, prompt_wav, resample_rate, zero_shot_spk_id):
        tts_text_token, tts_text_token_len = self._extract_text_token(tts_text)
        if zero_shot_spk_id == "":
            self.n_feature_extractions += 1
            prompt_text_token, prompt_text_token_len = self._extract_text_token(prompt_text)
            speech_feat, speech_feat_len = self._extract_speech_feat(prompt_wav)
            speech_token, speech_token_len = self._extract_speech_token(prompt_wav)
            if resample_rate == 24000:
                token_len = min(int(speech_feat.shape[1] / 2), speech_token.shape[1])
                speech_feat, speech_feat_len[:] = speech_feat[:, : 2 * token_len], 2 * token_len
                speech_token, speech_token_len[:] = speech_token[:, :token_len], token_len
            embedding = self._extract_spk_embedding(prompt_wav)
            model_input = {
                "prompt_text": prompt_text_token, "prompt_text_len": prompt_text_token_len,
                "llm_prompt_speech_token": speech_token, "llm_prompt_speech_token_len": speech_token_len,
                "flow_prompt_speech_token": speech_token, "flow_prompt_speech_token_len": speech_token_len,
                "prompt_speech_feat": speech_feat, "prompt_speech_feat_len": speech_feat_len,
                "llm_embedding": embedding, "flow_embedding": embedding,
            }
        else:
            model_input = {**self.spk2info[zero_shot_spk_id]}
        model_input["text"] = tts_text_token
        model_input["text_len"] = tts_text_token_len
        return model_input

    def frontend_cross_lingual(self, tts_text, prompt_wav, resample_rate, zero_shot_spk_id):
        model_input = self.frontend_zero_shot(tts_text, "", prompt_wav, resample_rate, zero_shot_spk_id)
        for k in ("prompt_text", "prompt_text_len", "llm_prompt_speech_token", "llm_prompt_speech_token_len"):
            del model_input[k]
        return model_input

    def frontend_instruct2(self, tts_text, instruct_text, prompt_wav, resample_rate, zero_shot_spk_id):
        model_input = self.frontend_zero_shot(tts_text, instruct_text, prompt_wav, resample_rate, zero_shot_spk_id)
        del model_input["llm_prompt_speech_token"]
        del model_input["llm_prompt_speech_token_len"]
        return model_input
