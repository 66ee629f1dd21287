"""The embedded CPU "lite" engine: espeak-ng speech adapted toward the prompt voice with WORLD.

An approximate voice for previews, CI and machines without a GPU; studio quality
needs the CosyVoice3 engine. See :mod:`cosyweb.engines.lite.engine`.
"""

from cosyweb.engines.lite.engine import CAPABILITIES, SAMPLE_RATE_HZ, LiteEngine, create

__all__ = ["CAPABILITIES", "SAMPLE_RATE_HZ", "LiteEngine", "create"]
