"""Fake of upstream ``cosyvoice/cli/cosyvoice.py`` (FunAudioLLM/CosyVoice ace7c47): ``AutoModel``,
``CosyVoice2`` and ``CosyVoice3`` with upstream's constructor and inference signatures.

Side effects kept: a ``model_dir`` that does not exist goes to ``snapshot_download`` (recorded
in :data:`NETWORK_CALLS`, then it fails); building the model reseeds the global RNG with
``set_all_random_seed(0)`` (as ``CausalConditionalCFM.__init__`` does).
"""

import os
import time
from functools import partial

import torch
import yaml

from cosyvoice.cli.frontend import CosyVoiceFrontEnd, FakeQwenTokenizer
from cosyvoice.cli.model import CosyVoice2Model, CosyVoice3Model
from cosyvoice.utils.common import set_all_random_seed
from cosyvoice.utils.file_utils import logging

NETWORK_CALLS = []


def snapshot_download(model_id, *args, **kwargs):
    NETWORK_CALLS.append(model_id)
    raise RuntimeError(f"network access attempted for {model_id!r}")


class CosyVoice2:
    _yaml = "cosyvoice2.yaml"
    _version = 2
    _model_cls = CosyVoice2Model

    def __init__(self, model_dir, load_jit=False, load_trt=False, load_vllm=False, fp16=False, trt_concurrent=1):
        self._init(model_dir, load_trt, load_vllm, fp16, trt_concurrent)

    def _init(self, model_dir, load_trt, load_vllm, fp16, trt_concurrent):
        self.model_dir = model_dir
        self.fp16 = fp16
        if not os.path.exists(model_dir):
            model_dir = snapshot_download(model_dir)
        hyper_yaml_path = "{}/{}".format(model_dir, self._yaml)
        if not os.path.exists(hyper_yaml_path):
            raise ValueError("{} not found!".format(hyper_yaml_path))
        with open(hyper_yaml_path) as f:
            configs = yaml.safe_load(f)
        tok_name = "speech_tokenizer_v3.onnx" if self._version == 3 else "speech_tokenizer_v2.onnx"
        self.frontend = CosyVoiceFrontEnd(partial(FakeQwenTokenizer, self._version), None,
                                          "{}/campplus.onnx".format(model_dir), "{}/{}".format(model_dir, tok_name),
                                          "{}/spk2info.pt".format(model_dir), "all")
        self.sample_rate = configs["sample_rate"]
        if torch.cuda.is_available() is False and (load_trt is True or load_vllm is True or fp16 is True):
            load_trt, load_vllm, fp16 = False, False, False
            logging.warning("no cuda device, set load_trt/load_vllm/fp16 to False")
        set_all_random_seed(0)  # as CausalConditionalCFM.__init__ does while the flow is built
        self.model = self._model_cls(fp16)
        self.load_kwargs = dict(load_trt=load_trt, load_vllm=load_vllm, fp16=fp16, trt_concurrent=trt_concurrent)

    def list_available_spks(self):
        return list(self.frontend.spk2info.keys())

    def add_zero_shot_spk(self, prompt_text, prompt_wav, zero_shot_spk_id):
        assert zero_shot_spk_id != "", "do not use empty zero_shot_spk_id"
        model_input = self.frontend.frontend_zero_shot("", prompt_text, prompt_wav, self.sample_rate, "")
        del model_input["text"]
        del model_input["text_len"]
        self.frontend.spk2info[zero_shot_spk_id] = model_input
        return True

    def _run(self, model_input, stream, speed):
        start_time = time.time()
        for model_output in self.model.tts(**model_input, stream=stream, speed=speed):
            speech_len = model_output["tts_speech"].shape[1] / self.sample_rate
            logging.info("yield speech len {}, rtf {}".format(speech_len, (time.time() - start_time) / max(speech_len, 1e-9)))
            yield model_output
            start_time = time.time()

    def inference_zero_shot(self, tts_text, prompt_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0, text_frontend=True):
        prompt_text = self.frontend.text_normalize(prompt_text, split=False, text_frontend=text_frontend)
        for i in self.frontend.text_normalize(tts_text, split=True, text_frontend=text_frontend):
            model_input = self.frontend.frontend_zero_shot(i, prompt_text, prompt_wav, self.sample_rate, zero_shot_spk_id)
            yield from self._run(model_input, stream, speed)

    def inference_cross_lingual(self, tts_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0, text_frontend=True):
        for i in self.frontend.text_normalize(tts_text, split=True, text_frontend=text_frontend):
            model_input = self.frontend.frontend_cross_lingual(i, prompt_wav, self.sample_rate, zero_shot_spk_id)
            yield from self._run(model_input, stream, speed)

    def inference_instruct2(self, tts_text, instruct_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0, text_frontend=True):
        for i in self.frontend.text_normalize(tts_text, split=True, text_frontend=text_frontend):
            model_input = self.frontend.frontend_instruct2(i, instruct_text, prompt_wav, self.sample_rate, zero_shot_spk_id)
            yield from self._run(model_input, stream, speed)


class CosyVoice3(CosyVoice2):
    _yaml = "cosyvoice3.yaml"
    _version = 3
    _model_cls = CosyVoice3Model

    def __init__(self, model_dir, load_trt=False, load_vllm=False, fp16=False, trt_concurrent=1):
        self._init(model_dir, load_trt, load_vllm, fp16, trt_concurrent)


def AutoModel(**kwargs):
    if not os.path.exists(kwargs["model_dir"]):
        kwargs["model_dir"] = snapshot_download(kwargs["model_dir"])
    if os.path.exists("{}/cosyvoice2.yaml".format(kwargs["model_dir"])):
        return CosyVoice2(**kwargs)
    elif os.path.exists("{}/cosyvoice3.yaml".format(kwargs["model_dir"])):
        return CosyVoice3(**kwargs)
    raise TypeError("No valid model type found!")
