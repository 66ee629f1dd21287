"""What the CosyVoice engines declare (read by the pipeline and the UI).

Sources: Fun-CosyVoice3-0.5B model card and ``cosyvoice/utils/common.py`` ``instruct_list``
(9 languages, 18 dialects counting Mandarin, 3 emotions, speed and volume instructions,
pinyin and ARPAbet tokens in ``CosyVoice3Tokenizer``); CosyVoice2 paper (5 languages,
7 dialects, no pinyin tokens). ``speed`` upstream works only without streaming
(``CosyVoice2Model.tts`` ignores it when ``stream=True``).
"""

from __future__ import annotations

from cosyweb.engines.base import EngineCapabilities
from cosyweb.options import DIALECTS, Mode

from .prompts import V2_DIALECTS

_V3_LANGUAGES = frozenset({"zh", "en", "yue", "ja", "ko", "de", "es", "fr", "it", "ru"})
_V2_LANGUAGES = frozenset({"zh", "en", "yue", "ja", "ko"})


def capabilities_for(version: int, sample_rate_hz: int, on_gpu: bool = True) -> EngineCapabilities:
    """The honest capabilities of a CosyVoice3 (``version=3``) or CosyVoice2 (``version=2``) model.

    Args:
        version: 3 or 2.
        sample_rate_hz: the model's output rate (``AutoModel(...).sample_rate``; 24000 for both).
        on_gpu: the model runs on a GPU; concurrency defaults to 2 there and to 1 elsewhere.
    """
    v3 = version >= 3
    return EngineCapabilities(
        name="cosyvoice3" if v3 else "cosyvoice2",
        sample_rate=int(sample_rate_hz),
        streaming=True,
        max_batch=1,
        default_concurrency=2 if on_gpu else 1,
        languages=_V3_LANGUAGES if v3 else _V2_LANGUAGES,
        modes=frozenset({Mode.ZERO_SHOT, Mode.CROSS_LINGUAL, Mode.INSTRUCT}),
        dialects=frozenset(DIALECTS) if v3 else frozenset({"mandarin"} | V2_DIALECTS),
        emotions=frozenset({"none", "happy", "sad", "angry"}),
        speed=True,
        speed_when_streaming=False,
        volume=True,
        pinyin_annotations=v3,
        arpabet=v3,
        needs_prompt_text=True,
        description_zh=(
            "Fun-CosyVoice3-0.5B（官方代码，GPU）：录音室级零样本克隆，支持方言、情感与拼音标注"
            if v3
            else "CosyVoice2-0.5B（官方代码，GPU）：零样本克隆；不支持拼音标注"
        ),
        description_en=(
            "Fun-CosyVoice3-0.5B (official code, GPU): studio-quality zero-shot cloning with dialects, emotions and pinyin"
            if v3
            else "CosyVoice2-0.5B (official code, GPU): zero-shot cloning; no pinyin annotations"
        ),
    )
