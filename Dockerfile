# syntax=docker/dockerfile:1.6
# cosyweb images. Two targets:
#
#   docker build --target cpu -t cosyweb:cpu .     # embedded "lite" engine, no GPU, no model download
#   docker build --target gpu -t cosyweb:gpu .     # official CosyVoice3 on CUDA 12.x (the default target)
#
#   docker run --gpus all -p 7860:7860 -v ./outputs:/app/outputs -v ./models:/models --shm-size=1g cosyweb:gpu
#
# The gpu image downloads the model on first start into /models (MODEL_ID, default Fun-CosyVoice3-0.5B;
# MODEL_SOURCE auto|huggingface|modelscope), resuming an interrupted download. See docs/gpu.md.

ARG COSYVOICE_COMMIT=ace7c47f41bbd303aa6bf1ea80e6f9fbd595cd40
ARG CUDA_IMAGE=nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04

# ---------------------------------------------------------------------------------------------
# cpu-build: a virtualenv with cosyweb and its pip dependencies (pyworld/pysptk build from source).
FROM python:3.10-slim-bookworm AS cpu-build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY cosyweb ./cosyweb
RUN pip install --upgrade pip "setuptools<81" wheel \
 && pip install .

# ---------------------------------------------------------------------------------------------
# cpu: the embedded engine image.
FROM python:3.10-slim-bookworm AS cpu
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HOME=/opt/hf-home \
    APP_DIR=/app \
    COSYWEB_ENGINE=lite \
    COSYWEB_HOST=0.0.0.0 \
    COSYWEB_PORT=7860 \
    COSYWEB_OUTPUT_DIR=/app/outputs
COPY --from=cpu-build /opt/venv /opt/venv
WORKDIR /app
COPY app.py ./
COPY configs ./configs
COPY scripts ./scripts
COPY assets ./assets
# Gradio's share-link tunnel binary (frpc), fetched and checksum-verified by gradio's own code into
# the file gradio looks for ($HF_HOME/gradio/frpc/frpc_<os>_<arch>_v<version>), so --share works offline of that CDN.
RUN python -c "from gradio.tunneling import Tunnel, BINARY_PATH; Tunnel.download_binary(); print(BINARY_PATH)" \
 && mkdir -p /app/outputs
EXPOSE 7860
VOLUME ["/app/outputs"]
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/healthz', timeout=8)" || exit 1
ENTRYPOINT ["bash", "/app/scripts/docker-entrypoint.sh"]

# ---------------------------------------------------------------------------------------------
# gpu-build: Python 3.10 venv with the official CosyVoice (pinned commit) and its requirements,
# then cosyweb with its "cosyvoice" extra.
FROM ${CUDA_IMAGE} AS gpu-build
ARG COSYVOICE_COMMIT
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.10 python3.10-venv python3.10-dev build-essential git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3.10 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
RUN git clone https://github.com/FunAudioLLM/CosyVoice.git /opt/CosyVoice \
 && cd /opt/CosyVoice \
 && git checkout "${COSYVOICE_COMMIT}" \
 && git submodule update --init --recursive \
 && rm -rf .git third_party/Matcha-TTS/.git
# CosyVoice's own requirements (torch 2.3.1 cu121, onnxruntime-gpu, tensorrt-cu12 ...; its extra
# index URLs are inside the file). Then cosyweb: this upgrades gradio to 6 for our UI (CosyVoice's
# own webui is not used). numpy and transformers stay at CosyVoice's pins; with transformers 4.51.3
# (huggingface-hub < 1.0) pip picks a gradio 6 release that accepts that hub client (6.15.x when checked).
RUN pip install --upgrade pip "setuptools<81" wheel \
 && pip install -r /opt/CosyVoice/requirements.txt
WORKDIR /src
COPY pyproject.toml README.md ./
COPY cosyweb ./cosyweb
RUN pip install ".[cosyvoice]" "numpy==1.26.4" "transformers==4.51.3" \
 && python -c "import torch, onnxruntime, cosyweb; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

# ---------------------------------------------------------------------------------------------
# gpu: CUDA 12.x runtime, Python 3.10, serves on 0.0.0.0:7860, results in /app/outputs, models in /models.
FROM ${CUDA_IMAGE} AS gpu
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.10 libgomp1 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=gpu-build /opt/venv /opt/venv
COPY --from=gpu-build /opt/CosyVoice /opt/CosyVoice
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HOME=/opt/hf-home \
    MPLCONFIGDIR=/tmp/matplotlib \
    APP_DIR=/app \
    MODEL_ID=Fun-CosyVoice3-0.5B \
    MODEL_SOURCE=auto \
    MODELS_DIR=/models \
    COSYVOICE_ROOT=/opt/CosyVoice \
    COSYWEB_HOST=0.0.0.0 \
    COSYWEB_PORT=7860 \
    COSYWEB_OUTPUT_DIR=/app/outputs
WORKDIR /app
COPY app.py ./
COPY configs ./configs
COPY scripts ./scripts
COPY assets ./assets
RUN python -c "from gradio.tunneling import Tunnel, BINARY_PATH; Tunnel.download_binary(); print(BINARY_PATH)" \
 && mkdir -p /app/outputs /models
EXPOSE 7860
VOLUME ["/app/outputs", "/models"]
# start-period covers the first start's model download (about 9 GB) and loading.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30m --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/healthz', timeout=8)" || exit 1
ENTRYPOINT ["bash", "/app/scripts/docker-entrypoint.sh"]
