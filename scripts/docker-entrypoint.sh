#!/usr/bin/env bash
# Entry point of the cosyweb Docker images.
#
# gpu image: on first start download the model (MODEL_ID, default Fun-CosyVoice3-0.5B) into the
# mounted /models volume, with progress in `docker logs` and resume after an interruption; later
# starts only check it. Then serve on 0.0.0.0:7860. Extra arguments go to app.py, e.g.
#   docker run ... cosyweb:gpu --share --auth user:pass
# cpu image (COSYWEB_ENGINE=lite): no download.
#
# Environment: MODEL_ID, MODEL_SOURCE (auto|huggingface|modelscope|local:PATH), MODELS_DIR (/models),
# COSYWEB_MODEL_DIR (overrides /models/<name>), COSYWEB_CONFIG (default: chosen from MODEL_ID),
# SKIP_DOWNLOAD=1, APP_DIR (/app), and every COSYWEB_* setting.
set -euo pipefail

APP_DIR="${APP_DIR:-/app}"
# `docker run IMAGE bash` and friends: run the command instead of the app.
if [[ $# -gt 0 && "$1" != -* ]]; then
    exec "$@"
fi

MODEL_ID="${MODEL_ID:-Fun-CosyVoice3-0.5B}"
if [[ -z "${COSYWEB_CONFIG:-}" ]]; then
    case "${COSYWEB_ENGINE:-}:${MODEL_ID}" in
        lite:*) COSYWEB_CONFIG="${APP_DIR}/configs/lite.yaml" ;;
        *CosyVoice2*) COSYWEB_CONFIG="${APP_DIR}/configs/cosyvoice2-gpu.yaml" ;;
        *) COSYWEB_CONFIG="${APP_DIR}/configs/cosyvoice3-gpu.yaml" ;;
    esac
fi
export COSYWEB_CONFIG

ENGINE="${COSYWEB_ENGINE:-$(python - <<'PY'
import os, yaml
with open(os.environ["COSYWEB_CONFIG"], encoding="utf-8") as f:
    print((yaml.safe_load(f) or {}).get("engine", "lite"))
PY
)}"

if [[ "${ENGINE}" != "lite" && "${SKIP_DOWNLOAD:-0}" != "1" ]]; then
    args=(--model-id "${MODEL_ID}")
    if [[ -n "${COSYWEB_MODEL_DIR:-}" ]]; then args+=(--dest "${COSYWEB_MODEL_DIR}"); fi
    echo "cosyweb: checking model ${MODEL_ID} (first start downloads it; interrupted downloads resume)" >&2
    MODEL_DIR="$(python "${APP_DIR}/scripts/download_model.py" "${args[@]}" | tail -n 1)"
    export COSYWEB_MODEL_DIR="${MODEL_DIR}"
fi

cd "${APP_DIR}"
exec python app.py "$@"
