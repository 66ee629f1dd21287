#!/usr/bin/env bash
# Install into the CURRENT Python environment everything that the real-code test
# (tests/test_cosyvoice_real.py, pytest marker `cosyvoice_real`) needs on a CPU-only machine.
#
#   python -m venv /work/venvs/cv && . /work/venvs/cv/bin/activate
#   bash scripts/cosyvoice_test_env.sh /path/to/CosyVoice
#   COSYVOICE_ROOT=/path/to/CosyVoice python -m pytest -m cosyvoice_real tests/test_cosyvoice_real.py
#
# COSYVOICE_ROOT is a checkout (or `git archive` export) of github.com/FunAudioLLM/CosyVoice,
# tested at commit ace7c47. It is imported as-is; nothing of it is copied into this project.
#
# Package set measured on a 2-core CPU machine (see shared notes "cosyvoice-real-code"):
# - torch 2.13.0 is the CPU wheel; torchaudio 2.11.1 is the only recent torchaudio on PyPI and is a
#   CUDA build whose lib/*.so cannot load beside CPU torch. Its pure-torch parts (compliance.kaldi,
#   transforms.Resample/Spectrogram) are all CosyVoice needs once audio loading is done by cosyweb's
#   soundfile loader, so the .so files are deleted after install.
# - Matcha-TTS: the third_party/Matcha-TTS git submodule if the checkout has it, else the
#   `matcha-tts` package without its heavy deps, plus the few modules its utils/__init__ imports.
# - openai-whisper: only log_mel_spectrogram is used; the pinned sdist does not build without
#   pkg_resources, so a newer release is installed without deps.
# - wetext is left out on purpose: it downloads grammars from a model hub on every AutoModel.
set -euo pipefail

ROOT="${1:-${COSYVOICE_ROOT:-}}"
if [[ -z "${ROOT}" || ! -f "${ROOT}/cosyvoice/cli/cosyvoice.py" ]]; then
    echo "usage: $0 COSYVOICE_ROOT   (a CosyVoice checkout containing cosyvoice/cli/cosyvoice.py)" >&2
    exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python}"
PIP=("${PY}" -m pip install --disable-pip-version-check)

# 1. torch (CPU) and torchaudio (pure-python parts only).
"${PIP[@]}" "torch==2.13.0" "numpy==1.26.4" "setuptools<81"
"${PIP[@]}" --no-deps "torchaudio==2.11.1"
TA_DIR="$("${PY}" - <<'PY'
import importlib.util, os
spec = importlib.util.find_spec("torchaudio")
print(os.path.dirname(spec.origin))
PY
)"
rm -f "${TA_DIR}"/lib/*.so
"${PY}" -c "import torchaudio, torchaudio.compliance.kaldi; print('torchaudio', torchaudio.__version__, 'imports without its CUDA libs')"

# 2. What CosyVoice imports (versions measured to work with commit ace7c47 on Python 3.10/3.11).
"${PIP[@]}" "numpy==1.26.4" \
    "hyperpyyaml==1.2.3" "modelscope==1.20.0" "onnxruntime==1.18.0" "inflect==7.3.1" \
    "transformers==4.51.3" "omegaconf==2.3.0" "x-transformers==2.11.24" "conformer==0.3.2" \
    "diffusers==0.29.0" scipy librosa tiktoken numba more-itertools tqdm soundfile soxr onnx regex
"${PIP[@]}" --no-deps "openai-whisper==20250625"

# 3. Matcha-TTS.
if [[ -f "${ROOT}/third_party/Matcha-TTS/matcha/__init__.py" ]]; then
    echo "Matcha-TTS: using ${ROOT}/third_party/Matcha-TTS (added to sys.path by cosyweb)"
else
    "${PIP[@]}" --no-deps "matcha-tts==0.0.7.2"
fi
"${PIP[@]}" "numpy==1.26.4" hydra-core lightning rich gdown matplotlib wget

# 4. cosyweb itself (no deps: the web stack is not needed by this test) and its light deps.
"${PIP[@]}" "numpy==1.26.4" pydantic pydantic-settings pyyaml "pytest>=8" "pytest-timeout>=2.2"
"${PIP[@]}" --no-deps -e "${HERE}"

"${PY}" - "${ROOT}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy, torch
print("ok: numpy", numpy.__version__, "torch", torch.__version__, "cuda", torch.cuda.is_available())
PY
echo "done. Now run:  COSYVOICE_ROOT=${ROOT} ${PY} -m pytest -m cosyvoice_real tests/test_cosyvoice_real.py"
