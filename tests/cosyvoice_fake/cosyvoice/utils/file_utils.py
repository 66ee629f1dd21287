"""Fake of upstream ``cosyvoice/utils/file_utils.py`` (FunAudioLLM/CosyVoice ace7c47).

Reproduces its import side effect (root logger set to DEBUG) and the way its ``load_wav``
fails on a machine with torchaudio >= 2.9 but no torchcodec/FFmpeg: every call raises. The
adapter must replace it wherever CosyVoice looks it up.
"""

import logging

logging.getLogger("matplotlib").setLevel(logging.WARNING)
logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(levelname)s %(message)s")

N_CALLS = 0


def load_wav(wav, target_sr, min_sr=16000):
    global N_CALLS
    N_CALLS += 1
    raise RuntimeError("TorchCodec is required for load_with_torchcodec. Please install torchcodec to use this function.")
