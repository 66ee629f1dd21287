"""The text front end: annotations, pinyin, normalisation, sentence splitting.

Public entry points live in :mod:`cosyweb.text.frontend` (``analyze``, ``find_polyphones``,
``annotate``); the data types in :mod:`cosyweb.text.types`. Modules, one idea each:

* ``annotations`` parses and validates ``[h][ào]``/``[hao4]``/ARPAbet/tag brackets;
* ``syllables`` holds the pinyin inventory (from pypinyin's data) and spelling conversions;
* ``normalize`` + ``verbalize`` spell out numbers, dates, times, %, money, phone numbers;
* ``pinyin`` + ``sandhi`` do Mandarin G2P; ``jyutping`` does Cantonese G2P;
* ``runs`` builds tokens in language runs with pauses; ``segment`` cuts them for streaming.

Importing this package imports nothing heavy; pypinyin loads with ``frontend``.
"""
