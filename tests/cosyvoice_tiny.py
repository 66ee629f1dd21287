"""Build a tiny, randomly initialised Fun-CosyVoice3-0.5B-shaped model directory with the REAL CosyVoice code.

Used by ``tests/test_cosyvoice_real.py`` (marker ``cosyvoice_real``). It needs a CosyVoice
checkout on ``sys.path`` and the packages of ``scripts/cosyvoice_test_env.sh``. Nothing is
downloaded. What it writes (about 90 MB):

* ``CosyVoice-BlankEN/``: a 2-layer, 64-wide Qwen2 (``save_pretrained``) and a byte-level BPE
  tokenizer whose ids reproduce Qwen2's layout: byte-pair ids 0..151642, ``<|endoftext|>``
  151643, ``<|im_start|>``/``<|im_end|>`` 151644/151645, so that CosyVoice3Tokenizer's
  ``add_special_tokens`` puts ``<|endofprompt|>`` at 151646 (the id the LLM hard-codes). Merges
  make each CJK character of :data:`CJK_TEXT` and each of :data:`WORDS` one token (a random LLM
  runs to 20 x text tokens, so fewer text tokens make shorter calls).
* ``cosyvoice3.yaml``: upstream's inference sections with shrunk widths (``llm``, ``flow``,
  ``hift``, ``get_tokenizer``, ``allowed_special``, ``feat_extractor``, ``sample_rate``,
  ``qwen_pretrain_path``); token rate 25 Hz, ``chunk_size`` 25, 80 mels, 192-d speaker
  embedding and HiFT's 480 samples per mel frame are kept.
* ``llm.pt``, ``flow.pt``, ``hift.pt``: random weights; the LLM's 200 stop rows are zeroed and
  the rest scaled, so a call never stops early: its length is 20 x text tokens x 960 samples.
* ``campplus.onnx`` (input 0 float32 ``[1, T, 80]`` -> 192 floats) and ``speech_tokenizer_v3.onnx``
  (inputs float32 ``[1, 128, T]`` and int32 ``[1]`` -> about T/4 ints in [0, 6561)), exported with
  ``torch.onnx.export(dynamo=False)``.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Characters that get a single token each (the test texts and instructions use them).
CJK_TEXT = "希望你以后能够做的比我还好呦今天天气很不错我们一起去公园散步吧她干净收到好友从远方寄来生日礼物。，请用四川话表达非常开心地说句"
#: Words of the system prompt that get a single token each ("Ġ" is the byte-level space).
WORDS = ("You", " are", " a", " helpful", " assistant", ".", " Hello", " world", "Hello")

SPEECH_TOKEN_SIZE = 6561
QWEN_VOCAB = 151936  # > the last special token id (151923)
N_BPE_IDS = 151643  # Qwen2's byte-pair ids are 0..151642

TINY_YAML = """\
sample_rate: 24000
llm_input_size: 64
llm_output_size: 64
spk_embed_dim: 192
qwen_pretrain_path: ''
token_frame_rate: 25
token_mel_ratio: 2
chunk_size: 25
num_decoding_left_chunks: -1

llm: !new:cosyvoice.llm.llm.CosyVoice3LM
    llm_input_size: !ref <llm_input_size>
    llm_output_size: !ref <llm_output_size>
    speech_token_size: 6561
    length_normalized_loss: True
    lsm_weight: 0
    mix_ratio: [5, 15]
    llm: !new:cosyvoice.llm.llm.Qwen2Encoder
        pretrain_path: !ref <qwen_pretrain_path>
    sampling: !name:cosyvoice.utils.common.ras_sampling
        top_p: 0.8
        top_k: 25
        win_size: 10
        tau_r: 0.1

flow: !new:cosyvoice.flow.flow.CausalMaskedDiffWithDiT
    input_size: 80
    output_size: 80
    spk_embed_dim: !ref <spk_embed_dim>
    output_type: 'mel'
    vocab_size: 6561
    input_frame_rate: !ref <token_frame_rate>
    only_mask_loss: True
    token_mel_ratio: !ref <token_mel_ratio>
    pre_lookahead_len: 3
    pre_lookahead_layer: !new:cosyvoice.transformer.upsample_encoder.PreLookaheadLayer
        in_channels: 80
        channels: 32
        pre_lookahead_len: 3
    decoder: !new:cosyvoice.flow.flow_matching.CausalConditionalCFM
        in_channels: 240
        n_spks: 1
        spk_emb_dim: 80
        cfm_params: !new:omegaconf.DictConfig
            content:
                sigma_min: 1e-06
                solver: 'euler'
                t_scheduler: 'cosine'
                training_cfg_rate: 0.2
                inference_cfg_rate: 0.7
                reg_loss_type: 'l1'
        estimator: !new:cosyvoice.flow.DiT.dit.DiT
            dim: 64
            depth: 2
            heads: 2
            dim_head: 32
            ff_mult: 2
            mel_dim: 80
            mu_dim: 80
            spk_dim: 80
            out_channels: 80
            static_chunk_size: !ref <chunk_size> * <token_mel_ratio>
            num_decoding_left_chunks: !ref <num_decoding_left_chunks>

hift: !new:cosyvoice.hifigan.generator.CausalHiFTGenerator
    in_channels: 80
    base_channels: 32
    nb_harmonics: 8
    sampling_rate: !ref <sample_rate>
    nsf_alpha: 0.1
    nsf_sigma: 0.003
    nsf_voiced_threshold: 10
    upsample_rates: [8, 5, 3]
    upsample_kernel_sizes: [16, 11, 7]
    istft_params:
        n_fft: 16
        hop_len: 4
    resblock_kernel_sizes: [3, 7, 11]
    resblock_dilation_sizes: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    source_resblock_kernel_sizes: [7, 7, 11]
    source_resblock_dilation_sizes: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    lrelu_slope: 0.1
    audio_limit: 0.99
    conv_pre_look_right: 4
    f0_predictor: !new:cosyvoice.hifigan.f0_predictor.CausalConvRNNF0Predictor
        num_class: 1
        in_channels: 80
        cond_channels: 32

get_tokenizer: !name:cosyvoice.tokenizer.tokenizer.get_qwen_tokenizer
    token_path: !ref <qwen_pretrain_path>
    skip_special_tokens: True
    version: cosyvoice3
allowed_special: 'all'
feat_extractor: !name:matcha.utils.audio.mel_spectrogram
    n_fft: 1920
    num_mels: 80
    sampling_rate: !ref <sample_rate>
    hop_size: 480
    win_size: 1920
    fmin: 0
    fmax: null
    center: False
"""


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (the ByteLevel alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def build_blank_en(out_dir: Path, seed: int = 0) -> None:
    """Write the tiny Qwen2 model and its tokenizer to ``out_dir``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out_dir.mkdir(parents=True, exist_ok=True)
    b2u = _bytes_to_unicode()
    vocab: dict[str, int] = {}
    for b in range(256):
        vocab[b2u[b]] = len(vocab)
    merges: list[tuple[str, str]] = []
    for ch in list(dict.fromkeys(CJK_TEXT)) + list(WORDS):
        bs = [b2u[b] for b in ch.encode("utf-8")]
        left = bs[0]
        for nxt in bs[1:]:
            merged = left + nxt
            if merged not in vocab:
                merges.append((left, nxt))
                vocab[merged] = len(vocab)
            left = merged
    i = 0
    while len(vocab) < N_BPE_IDS:  # unreachable filler entries (no merge produces them)
        vocab[f"<unused_{i}>"] = len(vocab)
        i += 1
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok)
    fast.add_special_tokens({"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                             "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    assert fast.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]) == [151643, 151644, 151645]
    fast.save_pretrained(str(out_dir))
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=QWEN_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                      tie_word_embeddings=True)
    Qwen2ForCausalLM(cfg).save_pretrained(str(out_dir))


def _export_onnx(module, args, path: Path, input_names, output_names, dynamic_axes) -> None:
    import torch

    module.eval()
    torch.onnx.export(module, args, str(path), input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes, opset_version=17, dynamo=False)


def build_onnx(model_dir: Path) -> None:
    """Write ``campplus.onnx`` and ``speech_tokenizer_v3.onnx`` with upstream's input/output layout."""
    import torch

    class CampPlus(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(80, 192)

        def forward(self, feat):  # (1, T, 80) -> (1, 192)
            return torch.tanh(self.proj(feat).mean(dim=1))

    class SpeechTokenizer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(128, 1)

        def forward(self, feats, feats_len):  # (1, 128, T), (1,) int32 -> (1, ~T/4) int64
            x = feats[:, :, : (feats.shape[2] // 4) * 4]
            x = x.reshape(1, 128, -1, 4).mean(dim=3).transpose(1, 2)  # (1, T/4, 128)
            n = feats_len.to(torch.float32).reshape(1, 1, 1) * 0.0  # takes part in the graph
            score = torch.abs(self.proj(x + n)).squeeze(-1) * 1000.0
            return torch.remainder(score.to(torch.int64), SPEECH_TOKEN_SIZE)

    torch.manual_seed(1)
    _export_onnx(CampPlus(), (torch.randn(1, 100, 80),), model_dir / "campplus.onnx",
                 ["feat"], ["embedding"], {"feat": {1: "T"}})
    _export_onnx(SpeechTokenizer(), (torch.randn(1, 128, 200), torch.tensor([200], dtype=torch.int32)),
                 model_dir / "speech_tokenizer_v3.onnx", ["feats", "feats_length"], ["indices"],
                 {"feats": {2: "T"}, "indices": {1: "T4"}})


def build_tiny_cosyvoice3(model_dir: Path, seed: int = 0) -> Path:
    """Create the whole tiny CosyVoice3 model directory (CosyVoice code must be importable).

    Returns:
        ``model_dir``.
    """
    import torch
    from hyperpyyaml import load_hyperpyyaml

    model_dir.mkdir(parents=True, exist_ok=True)
    blank = model_dir / "CosyVoice-BlankEN"
    build_blank_en(blank, seed)
    (model_dir / "cosyvoice3.yaml").write_text(TINY_YAML, encoding="utf-8")
    configs = load_hyperpyyaml(TINY_YAML, overrides={"qwen_pretrain_path": str(blank)})
    torch.manual_seed(seed)
    llm = configs["llm"]
    with torch.no_grad():
        w = llm.llm_decoder.weight
        w.mul_(50.0)
        w[SPEECH_TOKEN_SIZE:] = 0.0  # the 200 stop ids can never win: a call runs to max_len
    torch.save(llm.state_dict(), model_dir / "llm.pt")
    torch.save(configs["flow"].state_dict(), model_dir / "flow.pt")
    torch.save(configs["hift"].state_dict(), model_dir / "hift.pt")
    build_onnx(model_dir)
    (model_dir / "build_info.json").write_text(json.dumps({"seed": seed, "what": "tiny random CosyVoice3 for tests"}))
    return model_dir
