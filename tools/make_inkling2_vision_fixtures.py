#!/usr/bin/env python3
"""Reference fixtures for Inkling 2's image input (tests/fixtures/inkling2_vision/): the image
processor, the ViT tower + 2x2-merge projector and the splice of its rows into the prompt.

Oracle: transformers' ``Inkling2ImageProcessor`` (default settings, torchvision backend) and
``Inkling2ForConditionalGeneration`` / ``Inkling2LoopForConditionalGeneration`` in float32, eager
attention, CPU, one thread. The models are tiny random configs (text as in
``make_inkling2_fixtures.py``'s COMMON; vision 32 wide, 2 heads x 16, 2 layers, 20 px patches, 2x2
merge, a 3x3 learned position table so every image resamples it up on one axis or down on the
other) with every parameter re-randomised, vision ones included (layer scales, class /
cls-position embeddings, position table, LayerNorm weights and biases). Writes

    media/*.png|*.jpg            the input images (six copied byte for byte from mm/media, five new)
    pre/<image>.npy              pixel_values f32 [rows*cols, 40, 40, 3] of Inkling2ImageProcessor()
                                 on PIL.Image.open(<image>) (checked against the spec: alpha on the
                                 8-px 204/153 checkerboard, no resize, pad -1, (x - 127.5) / 127.5)
    pre/cases.json               [{file, width, height, rows, cols, mode, has_transparency, format}]
    model/hf/                    Inkling2ForConditionalGeneration, save_pretrained (original names:
                                 model.llm.*, model.visual.backbone.*, model.visual.proj_in/out)
    model/tf/                    the same weights in transformers' in-memory names (model.language_model.*,
                                 model.vision_tower.*), config.json = hf's
    model/loop/                  Inkling2LoopForConditionalGeneration, save_pretrained (original names)
    ref/<case>.json              {"model", "prompt_ids" (placeholders expanded to rows*cols ids 490),
                                 "images", "grids" [[rows, cols]], "greedy" (8 ids), "max_abs_logit", ...}
    ref/<case>.logits.npy        f32 [T, 500] teacher-forced logits of the merged prompt
    ref/<case>.vision.npy        f32 [image tokens, 48] projector rows of the case's images, in order
    ref/<case>.vision_f64.npy    the same rows computed in float64 (a copy of the model in double),
                                 stored as f32: how far transformers' own f32 rows are from exact

Self checks (assertions): the processor matches an independent NumPy reading of the spec, bit for
bit; a multi-image processor call equals the per-image arrays concatenated; the rows the language
model receives at the placeholders are vision.npy (not passed through embed_norm) and the other
rows are the normed token embeddings; each image's rows are the same encoded alone as in the
batch; the saved folders (hf/, tf/, loop/) reload with from_pretrained to identical weights and
logits; greedy with the cache equals greedy by full recompute and generate(do_sample=False); a
prefill split inside an image span (inputs_embeds, cache) equals the single pass within 1e-5 of
max |logit|. The fixture's one 16-bit PNG checks that PIL keeps the high byte of each sample.

    python tools/make_inkling2_vision_fixtures.py [--out DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import shutil
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import save_json, save_npy  # noqa: E402
from make_inkling2_fixtures import COMMON, F, S, build, randomize  # noqa: E402
from make_mm_fixtures import smooth_image  # noqa: E402

import transformers  # noqa: E402
from transformers import Inkling2ForConditionalGeneration, Inkling2LoopForConditionalGeneration  # noqa: E402
from transformers.models.inkling2.configuration_inkling2 import (  # noqa: E402
    Inkling2Config,
    Inkling2TextConfig,
    Inkling2VisionConfig,
)
from transformers.models.inkling2.image_processing_inkling2 import Inkling2ImageProcessor  # noqa: E402
from transformers.models.inkling2_loop.configuration_inkling2_loop import (  # noqa: E402
    Inkling2LoopConfig,
    Inkling2LoopTextConfig,
)

REPO = Path(__file__).resolve().parent.parent
MM_MEDIA = REPO / "tests" / "fixtures" / "mm" / "media"
IMAGE_ID = 490
TILE = 40
N_GEN = 8
V = COMMON["unpadded_vocab_size"]

VISION_CFG = dict(
    hidden_size=32,
    num_attention_heads=2,  # head_dim 16
    num_hidden_layers=2,
    patch_size=20,
    spatial_merge_size=2,
    posemb_grid_size=3,
    projection_hidden_dim=40,
    text_hidden_size=COMMON["hidden_size"],
    layer_norm_eps=1e-5,
)

# COMMON with 4 routed experts (top 2) of width 16 instead of 8 x 24 (top 3): the experts are
# half of the text weights and the folder is kept near 3 MB with three copies of a model.
TEXT = dict(COMMON, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)

MODELS = {
    # 4 layers, attention-residual blocks at 0 and 3; full layers 1 and 3 (3 on a block boundary).
    "hf": dict(cls="inkling2", seed=2040,
               text=dict(TEXT, num_hidden_layers=4, layer_types=[S, F, S, F])),
    # Mini-like: prelude 0-1, core 2-3 run 3 times, coda 4 (blocks of 2 so that 5 layers suffice).
    "loop": dict(cls="inkling2_loop", seed=2042,
                 text=dict(TEXT, num_hidden_layers=5, layer_types=[S, F, S, F, S],
                           n_layers_per_attn_res_block=2, loop_layer_index_start=2,
                           loop_layer_index_end=4, loop_num_passes=3, loop_gate_rank=5)),
}

COPIED = ["rgb_37x53.png", "gray_16x120.png", "palette_21x33.png", "photo_64x90.jpg",
          "rgba_40x40.png", "tiny_3x2.png"]
# name: (height, width) as in mm/'s naming (<kind>_<height>x<width>)
NEW = {
    "la_45x29.png": (45, 29),
    "rgba_83x41.png": (83, 41),
    "palette_trns_27x19.png": (27, 19),
    "rgb16_22x17.png": (22, 17),
    "gray_81x80.jpg": (81, 80),
}

CASES = {
    # name: (model, parts); ("t", n) = n text ids in [1, 489], ("i", file) = one image
    "one": ("hf", [("t", 6), ("i", "rgb_37x53.png"), ("t", 5)]),
    "two": ("hf", [("t", 4), ("i", "gray_16x120.png"), ("t", 7), ("i", "rgba_83x41.png"), ("t", 3)]),
    "three": ("hf", [("i", "palette_trns_27x19.png"), ("t", 5), ("i", "photo_64x90.jpg"), ("t", 3),
                     ("i", "la_45x29.png"), ("t", 8)]),
    "loop_one": ("loop", [("t", 5), ("i", "rgba_83x41.png"), ("t", 6)]),
}


# ---- media ---------------------------------------------------------------------------------------


def alpha_pattern(h, w, seed):
    """Varied alpha with exact 0 and 255 runs: a diagonal ramp, a transparent and an opaque box."""
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w]
    a = (x * 255.0 / max(w - 1, 1) * 0.6 + y * 255.0 / max(h - 1, 1) * 0.4) + rng.normal(0, 20, (h, w))
    a = np.clip(np.round(a), 0, 255).astype(np.uint8)
    a[: h // 4, : w // 3] = 0
    a[h - h // 4:, w - w // 3:] = 255
    return a


def write_png16_rgb(path: Path, arr16: np.ndarray) -> None:
    """A 16-bit-per-channel RGB PNG (colour type 2, bit depth 16), which PIL cannot write."""
    h, w, _ = arr16.shape
    raw = b"".join(b"\x00" + arr16[r].astype(">u2").tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def write_media(media: Path) -> None:
    for name in COPIED:
        shutil.copyfile(MM_MEDIA / name, media / name)
    h, w = NEW["la_45x29.png"]
    la = np.stack([smooth_image(h, w, 1, 300)[..., 0], alpha_pattern(h, w, 301)], -1)
    Image.fromarray(la, "LA").save(media / "la_45x29.png", "PNG")
    h, w = NEW["rgba_83x41.png"]
    rgba = np.concatenate([smooth_image(h, w, 3, 302), alpha_pattern(h, w, 303)[..., None]], -1)
    Image.fromarray(rgba, "RGBA").save(media / "rgba_83x41.png", "PNG")
    h, w = NEW["palette_trns_27x19.png"]
    p = Image.fromarray(smooth_image(h, w, 3, 304), "RGB")
    p = p.quantize(colors=12, method=Image.Quantize.MEDIANCUT)
    used = sorted(set(np.asarray(p).ravel().tolist()))
    trns = [255] * 12
    trns[used[0]], trns[used[1]], trns[used[2]] = 0, 96, 200  # one fully transparent, two partial
    p.save(media / "palette_trns_27x19.png", "PNG", transparency=bytes(trns))
    h, w = NEW["rgb16_22x17.png"]
    hi = smooth_image(h, w, 3, 305).astype(np.uint16) * 256  # high bytes, then any low bytes
    write_png16_rgb(media / "rgb16_22x17.png", hi + np.random.RandomState(306).randint(0, 256, (h, w, 3)))
    h, w = NEW["gray_81x80.jpg"]
    gray = Image.fromarray(smooth_image(h, w, 1, 307)[..., 0], "L")
    gray.save(media / "gray_81x80.jpg", "JPEG", quality=85)
    for name in COPIED + list(NEW):
        assert (media / name).stat().st_size < 20_000, name


# ---- pre-processing ------------------------------------------------------------------------------

PROC = Inkling2ImageProcessor()


def process(images):
    out = PROC(images=images, return_tensors="pt")
    return out["pixel_values"], out["image_grid_thw"]


def spec_pixels(path: Path) -> np.ndarray:
    """spec/inkling2.md 6.1 in NumPy: decoded 8-bit RGB(A) as PIL gives it, alpha composited on the
    8-px checkerboard (204 where (row//8 + col//8) is even, else 153) in integer math, no resize,
    pad right/bottom to multiples of 40 with -1, (x - 127.5) / 127.5 in f32, 40x40 tiles row-major."""
    im = Image.open(path)
    if im.has_transparency_data:
        a = np.asarray(im.convert("RGBA")).astype(np.int64)
        h, w = a.shape[:2]
        bg = np.where((np.arange(h)[:, None] // 8 + np.arange(w)[None, :] // 8) % 2 == 0, 204, 153)
        al = a[..., 3:4]
        rgb = (a[..., :3] * al + bg[..., None] * (255 - al) + 127) // 255
    else:
        rgb = np.asarray(im.convert("RGB")).astype(np.int64)
        h, w = rgb.shape[:2]
    rows, cols = -(-h // TILE), -(-w // TILE)
    x = np.full((rows * TILE, cols * TILE, 3), -1.0, np.float32)
    x[:h, :w] = rgb
    x = (x - np.float32(127.5)) / np.float32(127.5)
    return x.reshape(rows, TILE, cols, TILE, 3).transpose(0, 2, 1, 3, 4).reshape(-1, TILE, TILE, 3)


def write_pre(media: Path, pre: Path):
    cases, arrays = [], {}
    for name in COPIED + list(NEW):
        im = Image.open(media / name)
        pv, grid = process(im)
        t, rows, cols = grid[0].tolist()
        w, h = im.size
        assert t == 1 and rows == -(-h // TILE) and cols == -(-w // TILE)
        assert pv.shape == (rows * cols, TILE, TILE, 3)
        want = spec_pixels(media / name)
        assert np.array_equal(pv.numpy(), want), (name, float(np.abs(pv.numpy() - want).max()))
        save_npy(pre / (name + ".npy"), pv)
        arrays[name] = pv
        cases.append(dict(file=name, width=w, height=h, rows=rows, cols=cols, mode=im.mode,
                          has_transparency=bool(im.has_transparency_data), format=im.format))
    # the 16-bit PNG: PIL keeps the high byte of every sample (no rounding)
    im16 = Image.open(media / "rgb16_22x17.png")
    raw16 = read_png16_rgb(media / "rgb16_22x17.png")
    assert im16.mode == "RGB" and np.array_equal(np.asarray(im16), (raw16 >> 8).astype(np.uint8))
    save_json(pre / "cases.json", cases)
    return cases, arrays


def read_png16_rgb(path: Path) -> np.ndarray:
    b = path.read_bytes()
    w, h = struct.unpack(">II", b[16:24])
    raw = zlib.decompress(b[41:-16])  # one IDAT after the 25-byte IHDR chunk, then IEND
    rows = [raw[r * (1 + 6 * w) + 1:(r + 1) * (1 + 6 * w)] for r in range(h)]
    assert all(raw[r * (1 + 6 * w)] == 0 for r in range(h))
    return np.frombuffer(b"".join(rows), ">u2").reshape(h, w, 3).astype(np.int64)


# ---- models --------------------------------------------------------------------------------------


@torch.no_grad()
def randomize_vision(tower, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std, mean=0.0):
        return mean + torch.randn(shape, generator=g, dtype=torch.float32) * std

    def uniform(shape, lo, hi):
        return lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float32)

    sd = tower.state_dict(keep_vars=True)
    for name in sorted(sd):
        p = sd[name]
        shape = tuple(p.shape)
        fan_in = shape[-1]
        if name == "embeddings.patch_embedding.weight":
            v = normal(shape, 1.5 / math.sqrt(fan_in))
        elif name == "embeddings.position_embedding.weight":
            v = normal(shape, 1.3)
        elif name in ("embeddings.class_embedding", "embeddings.cls_position_embedding"):
            v = normal(shape, 0.7)
        elif name.endswith(("layernorm.weight", "layernorm_before.weight", "layernorm_after.weight")):
            v = uniform(shape, 0.5, 1.5)
        elif name.endswith(("layernorm.bias", "layernorm_before.bias", "layernorm_after.bias")):
            v = normal(shape, 0.3)
        elif name.endswith(("lambda_1", "lambda_2")):
            v = normal(shape, 0.25, mean=0.7)
        elif name.endswith(("q_proj.weight", "k_proj.weight")):
            v = normal(shape, 1.5 / math.sqrt(fan_in))
        elif name.endswith(("v_proj.weight", "out_proj.weight", "fc1.weight", "fc2.weight")):
            v = normal(shape, 1.0 / math.sqrt(fan_in))
        elif name.endswith("_proj.bias") or name.endswith(("fc1.bias", "fc2.bias")):
            v = normal(shape, 0.2)
        elif name == "merger.linear_1.weight":
            v = normal(shape, 1.0 / math.sqrt(fan_in))
        elif name == "merger.linear_2.weight":
            v = normal(shape, 1.5 / math.sqrt(fan_in))
        else:
            raise SystemExit(f"randomize_vision: no rule for {name} {shape}")
        p.copy_(v)


@torch.no_grad()
def build_model(kind: str):
    spec = MODELS[kind]
    torch.manual_seed(spec["seed"])
    # the text part: make_inkling2_fixtures' causal model and randomisation, moved over
    text = build(dict(cls=spec["cls"], cfg=spec["text"]))
    randomize(text, spec["seed"])
    if spec["cls"] == "inkling2":
        cfg = Inkling2Config(text_config=Inkling2TextConfig(**spec["text"]),
                             vision_config=Inkling2VisionConfig(**VISION_CFG), image_token_id=IMAGE_ID)
        cls = Inkling2ForConditionalGeneration
    else:
        cfg = Inkling2LoopConfig(text_config=Inkling2LoopTextConfig(**spec["text"]),
                                 vision_config=Inkling2VisionConfig(**VISION_CFG), image_token_id=IMAGE_ID)
        cls = Inkling2LoopForConditionalGeneration
    for c in (cfg, cfg.text_config, cfg.vision_config):
        c._attn_implementation = "eager"
    model = cls(cfg).float().eval()
    assert model.model.vision_tower.config._attn_implementation == "eager"
    sd = text.state_dict()
    lm = {k[len("model."):]: v for k, v in sd.items() if k.startswith("model.")}
    model.model.language_model.load_state_dict(lm, strict=True)
    model.lm_head.weight.copy_(sd["lm_head.weight"])
    randomize_vision(model.model.vision_tower, spec["seed"] + 1)
    keys = set(model.state_dict())
    covered = {"model.language_model." + k for k in lm} | {"lm_head.weight"} | {
        "model.vision_tower." + k for k in model.model.vision_tower.state_dict()}
    assert keys == covered, keys ^ covered
    return model


@torch.no_grad()
def vision_spreads(model, pv, grid) -> dict:
    """Std of each term of the tower on `pv` (printed; recorded in the case json)."""
    vt = model.model.vision_tower
    rec = {}
    hooks = [vt.embeddings.patch_embedding.register_forward_hook(
        lambda m, i, o: rec.__setitem__("patch", o.clone()))]
    hooks.append(vt.embeddings.register_forward_hook(lambda m, i, o: rec.__setitem__("embed", o.clone())))
    hooks.append(vt.pre_layernorm.register_forward_hook(lambda m, i, o: rec.__setitem__("ln_pre", o.clone())))
    for n, layer in enumerate(vt.layers):
        hooks.append(layer.self_attn.register_forward_hook(
            lambda m, i, o, n=n: rec.__setitem__(f"attn{n}", (vt.layers[n].lambda_1 * o[0]).clone())))
        hooks.append(layer.mlp.register_forward_hook(
            lambda m, i, o, n=n: rec.__setitem__(f"mlp{n}", (vt.layers[n].lambda_2 * o).clone())))
        hooks.append(layer.register_forward_hook(lambda m, i, o, n=n: rec.__setitem__(f"out{n}", o.clone())))
    out = vt(pixel_values=pv, image_grid_thw=grid)
    for h in hooks:
        h.remove()
    n_img = grid.shape[0]
    cls_rows = torch.cat([torch.zeros(1, dtype=torch.long),
                          (grid.prod(-1) * 4 + 1).cumsum(0)[:-1]])
    patch_mask = torch.ones(rec["embed"].shape[0], dtype=torch.bool)
    patch_mask[cls_rows] = False
    pos = rec["embed"][patch_mask] - rec["patch"]
    s = {"patch": rec["patch"].std(), "position": pos.std(), "cls": rec["embed"][cls_rows].std(),
         "ln_pre": rec["ln_pre"].std()}
    for n in range(len(vt.layers)):
        s[f"layer{n}.attn_branch"] = rec[f"attn{n}"].std()
        s[f"layer{n}.mlp_branch"] = rec[f"mlp{n}"].std()
        s[f"layer{n}.out"] = rec[f"out{n}"].std()
    s["projector"] = out.pooler_output.std()
    assert n_img == cls_rows.numel()
    return {k: round(float(v), 4) for k, v in s.items()}


def save_folder(model, folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        folder.mkdir(parents=True)
        for f in ("config.json", "model.safetensors"):
            shutil.copyfile(Path(tmp) / f, folder / f)
    PROC.to_json_file(folder / "preprocessor_config.json")


def key_shapes(path: Path) -> dict:
    with safe_open(str(path), "pt") as f:
        return {k: list(f.get_slice(k).get_shape()) for k in f.keys()}


# ---- references ----------------------------------------------------------------------------------


def assemble(parts, rng, media, arrays):
    ids, images, grids, spans = [], [], [], []
    for kind, v in parts:
        if kind == "t":
            ids += [int(x) for x in rng.integers(1, IMAGE_ID, size=v)]
        else:
            im = Image.open(media / v)
            _, rows, cols = process(im)[1][0].tolist()
            spans.append((len(ids), rows * cols))
            ids += [IMAGE_ID] * (rows * cols)
            images.append(v)
            grids.append([rows, cols])
    # what the processor gives for all the case's images at once = the per-image arrays in order
    pv, grid = process([Image.open(media / f) for f in images])
    assert torch.equal(pv, torch.cat([arrays[f] for f in images]))
    assert grid[:, 1:].tolist() == grids and bool((grid[:, 0] == 1).all())
    return ids, pv, grid, images, grids, spans


@torch.no_grad()
def make_case(model, kind, name, parts, rng, media, arrays):
    ids, pv, grid, images, grids, spans = assemble(parts, rng, media, arrays)
    inp = torch.tensor([ids])
    captured = {}

    def grab(module, args, kwargs):
        captured["embeds"] = kwargs["inputs_embeds"].clone()

    hook = model.model.language_model.register_forward_pre_hook(grab, with_kwargs=True)
    logits = model(input_ids=inp, pixel_values=pv, image_grid_thw=grid, use_cache=False).logits[0].float()
    hook.remove()
    assert logits.shape == (len(ids), V)
    feats = model.get_image_features(pv, grid).pooler_output
    vision = torch.cat(feats)
    mask = inp[0] == IMAGE_ID
    assert vision.shape == (int(mask.sum()), COMMON["hidden_size"])
    emb = captured["embeds"]
    # the rows the language model receives: image rows = projector rows as they are (no embed_norm)
    assert torch.equal(emb[0, mask], vision), name
    embed_tokens = model.model.language_model.embed_tokens
    assert torch.equal(emb[0, ~mask], embed_tokens(inp[0, ~mask])), name
    assert not torch.allclose(embed_tokens.embed_norm(vision), vision, atol=1e-3)
    # each image alone = its rows of the batched tower (attention is per image)
    alone = torch.cat([model.get_image_features(arrays[f], torch.tensor([[1, *g]])).pooler_output[0]
                       for f, g in zip(images, grids)])
    alone_diff = float((alone - vision).abs().max())
    assert alone_diff <= 1e-5 * float(vision.abs().max()), (name, alone_diff)
    # inputs_embeds path = pixel path; a prefill split inside an image span = one pass
    via_embeds = model(inputs_embeds=emb, use_cache=False).logits[0].float()
    assert torch.equal(via_embeds, logits), name
    start, n = next((s, n) for s, n in spans if n >= 2)
    split = start + n // 2
    a = model(inputs_embeds=emb[:, :split], use_cache=True)
    b = model(inputs_embeds=emb[:, split:], cache=a.cache, use_cache=True)
    chunked = torch.cat([a.logits[0], b.logits[0]]).float()
    max_abs = float(logits.abs().max())
    chunk_diff = float((chunked - logits).abs().max())
    assert chunk_diff <= 1e-5 * max_abs, (name, chunk_diff, max_abs)
    # greedy with the cache (prefill with the pixels, then one token at a time)
    out = model(input_ids=inp, pixel_values=pv, image_grid_thw=grid, use_cache=True)
    greedy, margins = [], []
    for _ in range(N_GEN):
        row = out.logits[0, -1]
        top2 = row.topk(2).values
        margins.append(float(top2[0] - top2[1]))
        t = int(row.argmax())
        greedy.append(t)
        out = model(input_ids=torch.tensor([[t]]), cache=out.cache, use_cache=True)
    assert IMAGE_ID not in greedy, (name, greedy)  # a generated 490 would need features on recompute
    seq = list(ids)
    for t in greedy:
        full = model(input_ids=torch.tensor([seq]), pixel_values=pv, image_grid_thw=grid, use_cache=False)
        assert int(full.logits[0, -1].argmax()) == t, (name, "cached greedy != recompute")
        seq.append(t)
    gen = model.generate(inp, pixel_values=pv, image_grid_thw=grid, max_new_tokens=N_GEN, do_sample=False,
                         eos_token_id=None, pad_token_id=0, use_cache=True)
    assert gen[0, len(ids):].tolist() == greedy, (name, "generate != cached greedy")
    spreads = vision_spreads(model, pv, grid)
    text_rows = emb[0, ~mask]
    meta = dict(model=kind, prompt_ids=ids, images=images, grids=grids, greedy=greedy,
                max_abs_logit=max_abs, logit_std=float(logits.std()), min_greedy_margin=min(margins),
                image_spans=[list(s) for s in spans], chunk_split=split, chunked_prefill_max_diff=chunk_diff,
                alone_vs_batched_max_diff=alone_diff, vision_rms=float(vision.pow(2).mean().sqrt()),
                text_row_rms=float(text_rows.pow(2).mean().sqrt()), vision_spreads=spreads)
    return meta, logits, vision



@torch.no_grad()
def check_reload(model, folder: Path, cls, ids, pv, grid, label: str) -> None:
    re = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    want, got = model.state_dict(), re.state_dict()
    assert set(want) == set(got), (label, set(want) ^ set(got))
    for k in want:
        assert torch.equal(want[k], got[k]), (label, k)
    inp = torch.tensor([ids])
    a = model(input_ids=inp, pixel_values=pv, image_grid_thw=grid, use_cache=False).logits
    b = re(input_ids=inp, pixel_values=pv, image_grid_thw=grid, use_cache=False).logits
    # The loaded tensors are views into the file at unaligned offsets, and the CPU matmuls round
    # differently on unaligned operands (~1e-6): compare bit for bit once they are realigned.
    unaligned = float((a - b).abs().max())
    for p in re.parameters():
        p.data = p.data.clone()
    b = re(input_ids=inp, pixel_values=pv, image_grid_thw=grid, use_cache=False).logits
    assert torch.equal(a, b), f"{label}: reload changed the logits"
    print(f"model/{label}: reloads to identical weights and logits (as loaded, unaligned: {unaligned:.1e})")


@torch.no_grad()
def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "inkling2_vision"))
    args = ap.parse_args(argv)
    t0 = time.time()
    torch.set_num_threads(1)
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    media, pre, ref, mdir = out / "media", out / "pre", out / "ref", out / "model"
    for d in (media, pre, ref, mdir):
        d.mkdir(parents=True)
    write_media(media)
    cases, arrays = write_pre(media, pre)
    for c in cases:
        print(f"{c['file']}: {c['mode']} {c['width']}x{c['height']} -> {c['rows']}x{c['cols']} "
              f"transparency {c['has_transparency']}")

    models = {k: build_model(k) for k in MODELS}
    save_folder(models["hf"], mdir / "hf")
    (mdir / "tf").mkdir()
    shutil.copy(mdir / "hf" / "config.json", mdir / "tf" / "config.json")
    PROC.to_json_file(mdir / "tf" / "preprocessor_config.json")
    sd = {k: v.detach().contiguous() for k, v in models["hf"].state_dict().items()}
    save_file(sd, str(mdir / "tf" / "model.safetensors"), metadata={"format": "pt"})
    save_folder(models["loop"], mdir / "loop")
    for sub in ("hf", "tf", "loop"):
        shapes = key_shapes(mdir / sub / "model.safetensors")
        print(f"model/{sub}: {len(shapes)} tensors; vision:")
        for k, s in shapes.items():
            if "vis" in k:
                print(f"  {k} {s}")

    rng = np.random.default_rng(20260420)
    for name, (kind, parts) in CASES.items():
        meta, logits, vision = make_case(models[kind], kind, name, parts, rng, media, arrays)
        save_json(ref / f"{name}.json", meta)
        save_npy(ref / f"{name}.logits.npy", logits)
        save_npy(ref / f"{name}.vision.npy", vision)
        m64 = copy.deepcopy(models[kind]).double()
        pv64, grid64 = process([Image.open(media / f) for f in meta["images"]])
        with torch.no_grad():
            v64 = torch.cat(list(m64.model.get_image_features(pv64.double(), grid64).pooler_output))
        save_npy(ref / f"{name}.vision_f64.npy", v64.float().numpy())
        print(f"  f32 rows vs float64: {float((torch.as_tensor(vision).double() - v64).abs().max() / v64.abs().max()):.2e}")
        print(f"{name} [{kind}]: T {len(meta['prompt_ids'])} grids {meta['grids']} greedy {meta['greedy']} "
              f"max|logit| {meta['max_abs_logit']:.3f} std {meta['logit_std']:.3f} "
              f"margin {meta['min_greedy_margin']:.2e} chunk diff {meta['chunked_prefill_max_diff']:.2e} "
              f"vision rms {meta['vision_rms']:.3f} (text rows {meta['text_row_rms']:.3f})")
        print(f"  spreads {meta['vision_spreads']}")

    # the saved folders load back into transformers with the same weights and logits
    one = json.loads((ref / "one.json").read_text())
    pv, grid = process([Image.open(media / f) for f in one["images"]])
    for sub in ("hf", "tf"):
        check_reload(models["hf"], mdir / sub, Inkling2ForConditionalGeneration, one["prompt_ids"], pv, grid,
                     sub)
    lp = json.loads((ref / "loop_one.json").read_text())
    pv, grid = process([Image.open(media / f) for f in lp["images"]])
    check_reload(models["loop"], mdir / "loop", Inkling2LoopForConditionalGeneration, lp["prompt_ids"], pv,
                 grid, "loop")
    # tf/ holds the in-memory state dict itself
    assert key_shapes(mdir / "tf" / "model.safetensors") == {k: list(v.shape) for k, v in sd.items()}

    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out} ({total / 1024:.0f} KiB) in {time.time() - t0:.1f} s "
          f"(transformers {transformers.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
