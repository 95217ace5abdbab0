#!/usr/bin/env python3
"""Reference fixtures for Inkling's image and audio input (tests/fixtures/mm/).

Oracle: transformers' InklingForConditionalGeneration (float32, eager, CPU), its
InklingImageProcessor (torchvision backend) and InklingFeatureExtractor + the processor's dMel
quantisation (InklingProcessor._extract_dmel_bins). Writes

    mm/media/*.png|*.jpg|*.wav          small test images and recordings (the inputs)
    mm/pre/<image>.npy                  pixel_values[:, 0] for the released geometry (40x40 tiles),
                                        no upscale, f32 [P, 40, 40, 3] (T = 1 is the same: checked)
    mm/pre/<image>.x2.npy               the same after the serving engines' 2.0 / 2048 upscale
                                        (torchvision LANCZOS on uint8)
    mm/pre/<wav>.mel.npy                log10 mel features f32 [frames, 80] (before clamping)
    mm/pre/<wav>.ids.npy                dMel ids i32 [frames, 80]
    mm/pre/cases.json                   what each .npy came from (file, sizes, tile grid)
    mm/model/hf/                        tiny random InklingForConditionalGeneration, transformers
                                        layout (save_pretrained), with preprocessor_config.json
    mm/model/og/                        the same weights in the original layout (model.llm.*,
                                        model.visual.layers.linear_i / norm_i, model.audio.encoder)
    mm/ref/<case>.json                  prompt ids (placeholders expanded), media list, 8 greedy ids
    mm/ref/<case>.logits.npy            f32 [T, V'] teacher-forced logits of the merged prompt
    mm/ref/<case>.vision.npy            vision tower rows f32 [tiles, H] (all images of the case)
    mm/ref/<case>.audio.npy             audio tower rows f32 [frames, H]

The model's vision tower uses 8x8 tiles (patch_size 8, 4 layers: folds 2, 2, 2 then time 2) so
the weights stay small; the released 40x40 geometry (folds 5, 2, 4, time 2) is covered by pre/.
WAV decoding follows the usual convention: int16 / 32768, float32 as stored, channels averaged.

    python tools/make_mm_fixtures.py [--out DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import struct
import sys
import types
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import build_model, save_json, save_npy  # noqa: E402
from og_layout import hf_to_og, og_config, rematerialize  # noqa: E402

from transformers import InklingForConditionalGeneration  # noqa: E402
from transformers.models.inkling.configuration_inkling import InklingConfig  # noqa: E402
from transformers.models.inkling.feature_extraction_inkling import InklingFeatureExtractor  # noqa: E402
from transformers.models.inkling.image_processing_inkling import InklingImageProcessor  # noqa: E402
from transformers.models.inkling.processing_inkling import InklingProcessor  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SLIDING, GLOBAL = "hybrid_sliding", "hybrid"
IMAGE_ID, AUDIO_ID, IMAGE_BOS, AUDIO_BOS, AUDIO_END = 490, 491, 492, 493, 494
PATCH = 8  # the fixture model's tile size (released: 40)
SEED = 20261201
N_GEN = 8

TEXT_CFG = dict(
    vocab_size=512,
    unpadded_vocab_size=500,
    hidden_size=64,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    swa_num_attention_heads=4,
    swa_num_key_value_heads=1,
    swa_head_dim=16,
    sliding_window_size=8,
    d_rel=4,
    rel_extent=16,
    log_scaling_n_floor=None,
    log_scaling_alpha=0.1,
    layer_types=[SLIDING, GLOBAL, SLIDING],
    mlp_layer_types=["dense", "sparse", "sparse"],
    max_position_embeddings=4096,
    rms_norm_eps=1e-6,
    conv_kernel_size=4,
    intermediate_size=48,
    moe_intermediate_size=16,
    hidden_act="silu",
    n_routed_experts=4,
    num_experts_per_tok=2,
    n_shared_experts=1,
    route_scale=2.0,
    logits_mup_width_multiplier=3.0,
    bos_token_id=1,
    eos_token_id=499,
    pad_token_id=None,
)
VISION_CFG = dict(patch_size=PATCH, temporal_patch_size=2, num_channels=3, n_layers=4)
AUDIO_CFG = dict(n_mel_bins=80, mel_vocab_size=16)


# ---- media ---------------------------------------------------------------------------------------


def smooth_image(h, w, c, seed):
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, c))
    for ch in range(c):
        fx, fy, ph = rng.uniform(0.05, 0.4), rng.uniform(0.05, 0.4), rng.uniform(0, 6)
        img[..., ch] = 128 + 90 * np.sin(fx * x + fy * y + ph) + rng.normal(0, 12, (h, w))
    return np.clip(img, 0, 255).astype(np.uint8)


IMAGES = {
    # name: (height, width, mode, format)
    "rgb_37x53.png": (37, 53, "RGB", "PNG"),
    "photo_64x90.jpg": (64, 90, "RGB", "JPEG"),
    "gray_16x120.png": (16, 120, "L", "PNG"),
    "rgba_40x40.png": (40, 40, "RGBA", "PNG"),
    "palette_21x33.png": (21, 33, "P", "PNG"),
    "tiny_3x2.png": (3, 2, "RGB", "PNG"),
}


def write_images(media: Path):
    for i, (name, (h, w, mode, fmt)) in enumerate(IMAGES.items()):
        c = {"RGB": 3, "L": 1, "RGBA": 4, "P": 3}[mode]
        arr = smooth_image(h, w, c, 100 + i)
        im = Image.fromarray(arr[..., 0] if c == 1 else arr, {1: "L", 3: "RGB", 4: "RGBA"}[c])
        if mode == "P":
            im = im.quantize(colors=37, method=Image.Quantize.MEDIANCUT)
        kw = {"quality": 85} if fmt == "JPEG" else {}
        im.save(media / name, fmt, **kw)


def write_wav(path: Path, data: np.ndarray, rate: int, fmt: str):
    """data: float [samples, channels] in [-1, 1]. fmt: 'pcm16' or 'float32'."""
    ch = data.shape[1]
    if fmt == "pcm16":
        raw = np.clip(np.round(data * 32767), -32768, 32767).astype("<i2").tobytes()
        tag, bits = 1, 16
    else:
        raw = data.astype("<f4").tobytes()
        tag, bits = 3, 32
    block = ch * bits // 8
    hdr = b"RIFF" + struct.pack("<I", 36 + len(raw)) + b"WAVE"
    hdr += b"fmt " + struct.pack("<IHHIIHH", 16, tag, ch, rate, rate * block, block, bits)
    path.write_bytes(hdr + b"data" + struct.pack("<I", len(raw)) + raw)


WAVS = {
    # name: (samples, channels, format)
    "tone_0.23s.wav": (3680, 1, "pcm16"),
    "chirp_1.01s.wav": (16160, 1, "pcm16"),
    "stereo_0.61s_f32.wav": (9777, 2, "float32"),
    "short_0.01s.wav": (160, 1, "pcm16"),
}


def wav_signal(n, ch, seed):
    rng = np.random.RandomState(seed)
    t = np.arange(n) / 16000.0
    out = np.zeros((n, ch))
    for c in range(ch):
        f0 = rng.uniform(120, 900)
        out[:, c] = 0.4 * np.sin(2 * np.pi * (f0 * t + 700 * t * t)) + 0.05 * rng.normal(size=n)
        out[: n // 7, c] *= 0.01  # a quiet stretch: exercises the low clamp
    return np.clip(out, -1, 1)


def read_wav_reference(path: Path) -> np.ndarray:
    """The decoder the C++ side implements: int16 / 32768, float as is, mean over channels."""
    b = path.read_bytes()
    tag, ch, rate, _, _, bits = struct.unpack("<HHIIHH", b[20:36])
    n = struct.unpack("<I", b[40:44])[0]
    raw = b[44 : 44 + n]
    if tag == 1:
        x = np.frombuffer(raw, "<i2").astype(np.float32) / np.float32(32768.0)
    else:
        x = np.frombuffer(raw, "<f4").astype(np.float32)
    x = x.reshape(-1, ch)
    return torch.from_numpy(x).mean(dim=-1).numpy() if ch > 1 else x[:, 0].copy()


def write_wavs(media: Path):
    for i, (name, (n, ch, fmt)) in enumerate(WAVS.items()):
        write_wav(media / name, wav_signal(n, ch, 200 + i), 16000, fmt)


# ---- preprocessing references --------------------------------------------------------------------


def load_rgb(path: Path) -> Image.Image:
    return Image.open(path).convert("RGB")


def image_processor(patch: int, frac):
    return InklingImageProcessor(size={"height": patch, "width": patch}, rescale_image_frac=frac)


def pixel_values(path: Path, patch: int, frac=None) -> torch.Tensor:
    out = image_processor(patch, frac)(load_rgb(path), return_tensors="pt")
    pv = out["pixel_values"]
    assert pv.shape[1:] == (2, patch, patch, 3), pv.shape
    assert torch.equal(pv[:, 0], pv[:, 1])
    assert int(out["num_patches"][0]) == pv.shape[0]
    return pv


_BINS = types.SimpleNamespace(
    bin_centers=torch.linspace(-7.0, 2.0, 16, dtype=torch.float64).to(torch.float32),
    dmel_min_value=-7.0,
    dmel_max_value=2.0,
)


def audio_features(wave: np.ndarray):
    fe = InklingFeatureExtractor()
    feats = fe(wave, sampling_rate=16000, return_tensors="pt")
    mel = feats["input_features"][0]
    mask = feats["input_features_mask"][0]
    assert bool(mask.all()) and mel.shape[0] == math.ceil(len(wave) / 800)
    ids = InklingProcessor._extract_dmel_bins(_BINS, mel[None])[0]
    return mel, ids


# ---- model ----------------------------------------------------------------------------------------


@torch.no_grad()
def build_mm_model():
    text = build_model(TEXT_CFG, SEED, bf16=False)
    cfg = InklingConfig(
        text_config=dict(TEXT_CFG),
        vision_config=dict(VISION_CFG),
        audio_config=dict(AUDIO_CFG),
        image_token_id=IMAGE_ID,
        audio_token_id=AUDIO_ID,
        image_bos_token_id=IMAGE_BOS,
        audio_bos_token_id=AUDIO_BOS,
    )
    cfg.text_config._attn_implementation = "eager"
    cfg.text_config._experts_implementation = "eager"
    cfg._attn_implementation = "eager"
    model = InklingForConditionalGeneration(cfg).to(torch.float32).eval()
    sd = text.state_dict()
    lm = {k[len("model.") :]: v for k, v in sd.items() if k.startswith("model.")}
    model.model.language_model.load_state_dict(lm, strict=True)
    model.lm_head.weight.copy_(sd["lm_head.weight"])
    g = torch.Generator().manual_seed(SEED + 1)
    for name, p in list(model.model.vision_tower.named_parameters()) + list(
        model.model.audio_tower.named_parameters()
    ):
        if name.endswith("projection.weight"):
            v = torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1])
        elif "norm" in name:
            v = 0.5 + torch.rand(p.shape, generator=g)
        elif name.endswith("embed_audio_tokens.weight"):
            v = torch.randn(p.shape, generator=g) * 0.3
        else:
            raise RuntimeError(f"no randomization rule for {name}")
        p.copy_(v)
    return rematerialize(model), text.config


def tower_state(model):
    """The towers' tensors in transformers' names and in the original names."""
    vt, at = model.model.vision_tower, model.model.audio_tower
    hf, og = {}, {}
    for i, layer in enumerate(vt.encoder_layers):
        w = layer.projection.weight.detach().clone()
        hf[f"model.vision_tower.encoder_layers.{i}.projection.weight"] = w
        og[f"model.visual.layers.linear_{i}.weight"] = w.clone()
        if layer.add_norm:
            n = layer.layer_norm.weight.detach().clone()
            hf[f"model.vision_tower.encoder_layers.{i}.layer_norm.weight"] = n
            og[f"model.visual.layers.norm_{i}.weight"] = n.clone()
    fn = vt.final_norm.weight.detach().clone()
    hf["model.vision_tower.final_norm.weight"], og["model.visual.final_norm.weight"] = fn, fn.clone()
    e = at.embed_audio_tokens.embed_audio_tokens.weight.detach().clone()
    hf["model.audio_tower.embed_audio_tokens.embed_audio_tokens.weight"] = e
    og["model.audio.encoder.weight"] = e.clone()
    an = at.norm.weight.detach().clone()
    hf["model.audio_tower.norm.weight"], og["model.audio.final_norm.weight"] = an, an.clone()
    return hf, og


PREPROC = {
    "image_processor_type": "InklingImageProcessor",
    "size": {"height": PATCH, "width": PATCH},
    "rescale_image_frac": None,
    "rescale_image_max_upscaled_long_edge": 2048,
}


def save_model(model, text_cfg, root: Path):
    hf_dir, og_dir = root / "hf", root / "og"
    hf_dir.mkdir(parents=True, exist_ok=True)
    og_dir.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    sd = {k: v for k, v in sd.items() if "audio_tokens_offsets" not in k}
    save_file(sd, str(hf_dir / "model.safetensors"), metadata={"format": "pt"})
    cfg = model.config.to_dict()
    (hf_dir / "config.json").write_text(json.dumps(cfg, indent=1, default=str) + "\n")
    save_json(hf_dir / "preprocessor_config.json", PREPROC)

    # original layout: the text model through og_layout.hf_to_og (drops its junk tower tensors),
    # then the real towers
    causal = {("model." + k[len("model.language_model.") :]): v for k, v in sd.items() if k.startswith("model.language_model.")}
    causal["lm_head.weight"] = sd["lm_head.weight"]
    og = hf_to_og(causal, text_cfg, bf16=False)
    og = {k: v for k, v in og.items() if k.startswith("model.llm.")}
    _, og_towers = tower_state(model)
    og.update(og_towers)
    save_file({k: v.contiguous() for k, v in og.items()}, str(og_dir / "model.safetensors"))
    oc = og_config(text_cfg, {}, [], bf16=False, eos=TEXT_CFG["eos_token_id"])
    oc["vision_config"] = dict(VISION_CFG, hidden_size=TEXT_CFG["hidden_size"])
    oc["audio_config"] = dict(AUDIO_CFG)
    oc.pop("mtp_config")
    oc.update(
        image_token_id=IMAGE_ID,
        audio_token_id=AUDIO_ID,
        image_bos_token_id=IMAGE_BOS,
        audio_bos_token_id=AUDIO_BOS,
    )
    save_json(og_dir / "config.json", oc)
    save_json(og_dir / "preprocessor_config.json", PREPROC)
    return hf_dir, og_dir


CASES = {
    # name: list of parts; ("t", n) = n text ids, ("i", image), ("a", wav)
    "image_png": [("t", 5), ("i", "rgb_37x53.png"), ("t", 4)],
    "jpeg_and_audio": [("t", 3), ("i", "photo_64x90.jpg"), ("t", 2), ("a", "tone_0.23s.wav"), ("t", 3)],
    "mixed": [
        ("t", 2),
        ("i", "gray_16x120.png"),
        ("a", "stereo_0.61s_f32.wav"),
        ("t", 2),
        ("i", "palette_21x33.png"),
        ("a", "chirp_1.01s.wav"),
        ("i", "tiny_3x2.png"),
        ("t", 3),
    ],
}


@torch.no_grad()
def make_case(model, name, parts, media: Path, rng):
    ids, pvs, auds, media_list = [], [], [], []
    for kind, v in parts:
        if kind == "t":
            ids += [int(x) for x in rng.randint(2, 480, size=v)]
        elif kind == "i":
            pv = pixel_values(media / v, PATCH)
            pvs.append(pv)
            ids += [IMAGE_BOS] + [IMAGE_ID] * pv.shape[0]
            media_list.append({"kind": "image", "file": v, "rows": int(pv.shape[0])})
        else:
            _, a_ids = audio_features(read_wav_reference(media / v))
            auds.append(a_ids)
            ids += [AUDIO_BOS] + [AUDIO_ID] * a_ids.shape[0] + [AUDIO_END]
            media_list.append({"kind": "audio", "file": v, "rows": int(a_ids.shape[0])})
    kw = {}
    if pvs:
        kw["pixel_values"] = torch.cat(pvs)
    if auds:
        n = max(a.shape[0] for a in auds)
        pad = torch.zeros(len(auds), n, 80, dtype=torch.long)
        mask = torch.zeros(len(auds), n, dtype=torch.bool)
        for i, a in enumerate(auds):
            pad[i, : a.shape[0]], mask[i, : a.shape[0]] = a.long(), True
        kw["audio_input_ids"], kw["audio_input_ids_mask"] = pad, mask
    inp = torch.tensor([ids])
    logits = model(input_ids=inp, use_cache=False, **kw).logits[0].float()
    vis = model.model.get_image_features(kw["pixel_values"]).pooler_output[:, 0] if pvs else None
    aud = model.model.get_audio_features(kw["audio_input_ids"], kw["audio_input_ids_mask"]).last_hidden_state if auds else None
    gen = model.generate(inp, max_new_tokens=N_GEN, do_sample=False, eos_token_id=None, pad_token_id=0, use_cache=True, **kw)
    greedy = gen[0, len(ids) :].tolist()
    # the cached greedy must equal argmax of a full recompute at each step
    seq = list(ids)
    for t in greedy:
        full = model(input_ids=torch.tensor([seq]), use_cache=False, **kw).logits[0, -1]
        assert int(full.argmax()) == t, (name, "generate vs recompute")
        seq.append(t)
    top2 = torch.topk(logits[-1], 2).values
    return (
        {"prompt_ids": ids, "media": media_list, "greedy": greedy, "last_margin": float(top2[0] - top2[1])},
        logits,
        vis,
        aud,
    )


@torch.no_grad()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "mm"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    media, pre, ref = out / "media", out / "pre", out / "ref"
    for d in (media, pre, ref):
        d.mkdir(parents=True, exist_ok=True)
    write_images(media)
    write_wavs(media)

    cases = {"images": {}, "audio": {}}
    for name in IMAGES:
        pv = pixel_values(media / name, 40)
        save_npy(pre / (name + ".npy"), pv[:, 0])
        w, h = load_rgb(media / name).size
        entry = {"height": h, "width": w, "tiles": int(pv.shape[0]), "rows": -(-h // 40), "cols": w // 40 + 1}
        if name in ("rgb_37x53.png", "tiny_3x2.png"):
            pv2 = pixel_values(media / name, 40, frac=2.0)
            save_npy(pre / (name + ".x2.npy"), pv2[:, 0])
            entry["tiles_x2"] = int(pv2.shape[0])
        cases["images"][name] = entry
    for name in WAVS:
        mel, ids = audio_features(read_wav_reference(media / name))
        save_npy(pre / (name + ".mel.npy"), mel)
        save_npy(pre / (name + ".ids.npy"), ids)
        cases["audio"][name] = {"frames": int(ids.shape[0])}
    save_json(pre / "cases.json", cases)

    model, text_cfg = build_mm_model()
    hf_dir, og_dir = save_model(model, text_cfg, out / "model")
    # both layouts load back into transformers with identical weights
    re_hf = rematerialize(InklingForConditionalGeneration.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager").eval())
    re_og = rematerialize(InklingForConditionalGeneration.from_pretrained(og_dir, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager").eval())
    want = model.state_dict()
    for m, label in ((re_hf, "hf"), (re_og, "og")):
        got = m.state_dict()
        for k, v in want.items():
            assert torch.equal(got[k], v), (label, k)
    rng = np.random.RandomState(SEED)
    for name, parts in CASES.items():
        meta, logits, vis, aud = make_case(model, name, parts, media, rng)
        save_json(ref / f"{name}.json", meta)
        save_npy(ref / f"{name}.logits.npy", logits)
        if vis is not None:
            save_npy(ref / f"{name}.vision.npy", vis)
        if aud is not None:
            save_npy(ref / f"{name}.audio.npy", aud)
        print(name, "tokens", len(meta["prompt_ids"]), "greedy", meta["greedy"], "margin", round(meta["last_margin"], 4))
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out} ({total / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
