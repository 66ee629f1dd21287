"""cosyweb: a zero-shot voice-cloning web app in the style of CosyVoice3.

Layers (imports flow one way, top to bottom)::

    ui / server / cli      Gradio Blocks, FastAPI routes, command line
          |
       pipeline            admission control, scheduler, workers, metrics
          |
       engines             one Engine interface: lite (espeak-ng + WORLD), cosyvoice
          |
    text      audio        leaves: front end (pinyin, annotations), prompt I/O and checks

``errors``, ``options`` and ``config`` import nothing of ours.
"""

__version__ = "0.1.0"
