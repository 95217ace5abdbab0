#!/usr/bin/env python3
"""Corpus, tokenizer and chat turns of the demo model (models/inkling-demo).

Sources are Debian packages only, all public domain or freely licensed (see SOURCES below and the
model README): the King James Bible (bible-kjv-text, read through bible-kjv's `bible` program),
the Jargon File (jargon-text) and the inoffensive fortune cookies (fortunes, fortunes-min; the
separate fortunes-off package is never used, and a few topical files are skipped too).

Steps (all deterministic, seed 1234):
  1. apt-get install -y the packages (skipped with --no-install when they are present);
  2. clean them into documents: one Bible chapter per document (verses one per line, no
     numbers), one fortune per document, one Jargon File entry per document;
  3. split documents into train / validation (5 %, fixed seed);
  4. build chat conversations (verse about a word, fortune, jargon meaning, greetings, some with
     a short reasoning block at non-zero effort) and render them with the real Inkling chat
     template exactly as transformers renders it (tests/data/inkling/chat_template.jinja);
  5. train a byte-level BPE with HF `tokenizers` (o200k pre-tokenizer regex, ByteLevel) of
     4000 ordinary tokens and append Inkling's 60 added tokens by name (ids 4000..4059), and save
     tokenizer.json, tokenizer_config.json and chat_template.jinja into the model folder;
  6. tokenize everything (documents joined by <|endoftext|>) into uint16 arrays.

Usage:  python3 tools/demo_data.py [--out build-demo/data] [--model-dir models/inkling-demo]
        python3 tools/demo_data.py --stage 2 --out build-demo/data2   # fine-tuning data, see below

Stage 2 (the fine-tuning run of tools/train_demo.py --init) keeps the stage-1 tokenizer of the
model folder (so the stage-1 checkpoint stays valid) and the same plain documents and split, and
draws a new, larger set of conversations (other seed) in which a verse answer opens with a
heading that names the word and the reference ("A verse about light, from Genesis 1:3:") before
the verse itself. Stage 1 answered with the bare verse; a 7.8 M-parameter model trained on 2 M
tokens did not learn to pick a verse by the word, but a heading copied from the question is easy
to learn (the short convs let a key carry "the word after 'about'") and then conditions the verse.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
INKLING_DATA = ROOT / "tests" / "data" / "inkling"
SEED = 1234
N_ORDINARY = 4000  # BPE tokens (256 byte tokens + merges); the 60 added tokens follow

PACKAGES = ["bible-kjv", "bible-kjv-text", "fortunes", "fortunes-min", "jargon-text"]
FORTUNE_DIR = Path("/usr/share/games/fortunes")
# Inoffensive fortune files kept (fortunes-off is never installed; these topical files are also
# skipped: ethnic, men-women, drugs, politics, ascii-art, art, knghtbrd, debian, perl, linux*).
FORTUNE_FILES = [
    "fortunes", "literature", "riddles", "wisdom", "computers", "science", "humorists", "people",
    "platitudes", "paradoxum", "tao", "goedel", "education", "food", "kids", "love", "magic",
    "pets", "songs-poems", "sports", "work", "law", "startrek", "pratchett", "cookie",
    "definitions", "miscellaneous", "medicine", "news", "zippy",
]
JARGON = Path("/usr/share/doc/jargon-text/jargon.txt.gz")

SOURCES = {
    "bible-kjv-text": ("King James Version of the Bible (1611), via the `bible` program of bible-kjv",
                       "public domain (copyright expired; the package says 'Users may copy, modify "
                       "or distribute this file at will')"),
    "fortunes / fortunes-min": ("fortune cookie files (inoffensive set only)",
                                "BSD licence (University of California), see /usr/share/doc/fortunes/copyright"),
    "jargon-text": ("The Jargon File 4.4.7 (Eric S. Raymond et al.)",
                    "public domain ('in the public domain, to be freely used, shared, and modified')"),
}

PAT = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
       r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
       r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

VERSE_WORDS = [
    "light", "love", "water", "fire", "king", "bread", "sea", "heaven", "earth", "peace", "truth",
    "wisdom", "mountain", "river", "tree", "sword", "gold", "silver", "lamb", "shepherd", "star",
    "sun", "moon", "night", "day", "life", "death", "joy", "house", "child", "father", "mother",
    "wine", "field", "wind", "rain", "stone", "word", "hope", "faith", "mercy", "fear", "heart",
    "soul", "spirit", "voice", "way", "darkness", "glory", "praise", "song", "city", "garden",
    "bird", "lion", "horse", "sheep", "fish", "grass", "flower", "cloud", "thunder", "rock",
    "door", "gate", "temple", "prophet", "angel", "servant", "brother", "friend", "enemy", "war",
    "harvest", "seed", "oil", "salt", "honey", "milk", "iron", "bread", "morning", "evening",
    "snow", "dust", "blood", "hand", "eye", "ear", "mouth", "tongue", "name", "law", "judgment",
    "righteousness", "sin", "grace", "kingdom", "crown", "throne", "dream", "wilderness", "desert",
]
VERSE_ASKS = [
    "Give me a verse about {w}", "Give me a verse about {w}.", "Give me a verse about {w}",
    "Show me a verse about {w}", "A verse about {w}, please.", "Quote a verse that mentions {w}.",
    "Find me a Bible verse about {w}", "give me a verse about {w}", "Do you know a verse about {w}?",
]
VERSE_THINK = [
    "The user wants a verse about {w}. A verse that mentions {w} is in {book}.",
    "A verse with the word {w}. {book} has one.",
    "I need a verse containing \"{w}\". I will quote {book}.",
]
FORTUNE_ASKS = ["Tell me a fortune", "Tell me a fortune.", "Give me a fortune cookie",
                "Say something wise.", "tell me a fortune", "I would like a fortune, please.",
                "Tell me a fortune"]
FORTUNE_THINK = ["The user wants a fortune. I will pick a short one.",
                 "A fortune cookie: something short and wise.",
                 "Pick a fortune and tell it plainly."]
JARGON_ASKS = ["What does {t} mean?", "Define {t}.", "What is {t}?", "What does \"{t}\" mean?"]
JARGON_THINK = ["{t} is hacker jargon. I will give its meaning from the Jargon File.",
                "The user asks about the word {t}. Explain it briefly."]
GREETINGS = ["Hello", "Hi", "Hi there", "Hello!", "Good morning", "Hey"]
GREETING_ANSWERS = [
    "Hello! Ask me for a verse about a word, a fortune, or the meaning of a hacker word.",
    "Hi! I can give you a verse about light, a fortune, or explain a word from the Jargon File.",
]
GREETING_THINK = ["A greeting. I will greet back and say what I can do."]
EFFORTS = [None, None, "none", "none", "low", "medium", "high", 0.5, 0]


# ------------------------------------------------------------------------------------------------
# 1-2. install and clean
# ------------------------------------------------------------------------------------------------


def install(packages):
    missing = [p for p in packages if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode]
    if missing:
        print(f"apt-get install -y {' '.join(missing)}", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", *missing], check=True, stdout=subprocess.DEVNULL)


def clean_line(s: str) -> str:
    s = s.replace("\t", " ").replace("\r", "")
    s = re.sub(r"[ \u00a0]+", " ", s)
    return s.strip()


def bible_chapters():
    """[(book, chapter, [(verse_no, text), ...])] from `bible gen1:1-rev22:21`."""
    out = subprocess.run(["bible", "gen1:1-rev22:21"], capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "100000"}).stdout
    chapters, cur, verse = [], None, None
    for raw in out.splitlines():
        m = re.match(r"^(\S.*\S) (\d+)$", raw)
        if m and not raw.startswith(" "):
            cur = (m.group(1), int(m.group(2)), [])
            chapters.append(cur)
            continue
        m = re.match(r"^\s+(\d+) (.*)$", raw)
        if m and cur is not None:
            cur[2].append([int(m.group(1)), m.group(2).strip()])
        elif raw.strip() and cur is not None and cur[2]:
            cur[2][-1][1] += " " + raw.strip()  # wrapped continuation line
    for _, _, vs in chapters:
        for v in vs:
            v[1] = clean_line(v[1])
    return [c for c in chapters if c[2]]


def fortunes():
    out = []
    for name in FORTUNE_FILES:
        p = FORTUNE_DIR / name
        if not p.exists():
            continue
        text = p.read_bytes().decode("utf-8", errors="replace")
        for cookie in text.split("\n%\n"):
            lines = [clean_line(x) for x in cookie.strip("%\n").splitlines()]
            lines = [x for x in lines if x]
            if not lines:
                continue
            body = "\n".join(lines)
            if len(body) < 20 or "\x1b" in body or "\ufffd" in body:
                continue
            out.append(body)
    return out


def jargon_entries():
    text = gzip.decompress(JARGON.read_bytes()).decode("utf-8")
    lines = text.splitlines()
    entries, cur = [], None
    for raw in lines:
        m = re.match(r"^   :([^:]+):\s*(.*)$", raw)
        if m:
            cur = [m.group(1).strip(), m.group(2).strip(), []]
            entries.append(cur)
        elif cur is not None:
            cur[2].append(raw.strip())
    out = []
    for term, pos, body in entries:
        paras = " ".join(body).split("  ") if False else None
        # paragraphs are separated by blank lines
        text_paras, buf = [], []
        for x in body:
            if x:
                buf.append(x)
            elif buf:
                text_paras.append(" ".join(buf))
                buf = []
        if buf:
            text_paras.append(" ".join(buf))
        text_paras = [re.sub(r"[{}]", "", clean_line(p)) for p in text_paras]
        text_paras = [p for p in text_paras if p]
        if not text_paras or len(term) > 40:
            continue
        out.append((term, pos, text_paras))
    return out


# ------------------------------------------------------------------------------------------------
# 4. chats
# ------------------------------------------------------------------------------------------------


def first_sentences(text: str, limit: int = 220) -> str:
    parts = re.split(r"(?<=[.!?])\s+", text)
    out = ""
    for p in parts:
        if out and len(out) + 1 + len(p) > limit:
            break
        out = (out + " " + p).strip()
    return out if len(out) <= limit + 80 else out[:limit].rsplit(" ", 1)[0] + "..."


class ChatMaker:
    def __init__(self, rng, chapters, fortunes_, jargon, headed=False):
        self.rng = rng
        self.headed = headed  # stage 2: "A verse about {w}, from {ref}:\n{verse}"
        self.by_word = {}
        for book, ch, vs in chapters:
            for vn, text in vs:
                if len(text) > 180:
                    continue
                low = set(re.findall(r"[a-z]+", text.lower()))
                for w in VERSE_WORDS:
                    if w in low:
                        self.by_word.setdefault(w, []).append((text, f"{book} {ch}:{vn}", book))
        self.words = sorted(w for w in set(VERSE_WORDS) if len(self.by_word.get(w, [])) >= 5)
        self.fortunes = [f for f in fortunes_ if len(f) <= 260]
        self.jargon = [(t, first_sentences(ps[0])) for t, _, ps in jargon if len(ps[0]) >= 20]

    def exchange(self):
        r = self.rng
        kind = r.choices(["verse", "fortune", "jargon", "greet"], weights=[55, 25, 15, 5])[0]
        if kind == "verse":
            w = r.choice(self.words)
            text, ref, book = r.choice(self.by_word[w])
            answer = f"A verse about {w}, from {ref}:\n{text}" if self.headed else f"{text} ({ref})"
            return (r.choice(VERSE_ASKS).format(w=w), answer,
                    r.choice(VERSE_THINK).format(w=w, book=book))
        if kind == "fortune":
            return r.choice(FORTUNE_ASKS), r.choice(self.fortunes), r.choice(FORTUNE_THINK)
        if kind == "jargon":
            t, d = r.choice(self.jargon)
            return r.choice(JARGON_ASKS).format(t=t), f"{t}: {d}", r.choice(JARGON_THINK).format(t=t)
        return r.choice(GREETINGS), r.choice(GREETING_ANSWERS), r.choice(GREETING_THINK)

    def conversation(self):
        """(messages, reasoning_effort): 1 or 2 exchanges; the last answer carries a reasoning
        block iff the effort is non-zero."""
        r = self.rng
        effort = r.choice(EFFORTS)
        thinking = effort not in ("none", 0)
        msgs = []
        n = 2 if r.random() < 0.2 else 1
        for i in range(n):
            q, a, think = self.exchange()
            msgs.append({"role": "user", "content": q})
            m = {"role": "assistant", "content": a}
            if thinking and i == n - 1:
                m["reasoning_content"] = think
            msgs.append(m)
        return msgs, effort


def make_renderer():
    from transformers.utils import chat_template_utils as ctu

    template = (INKLING_DATA / "chat_template.jinja").read_text()

    def render(messages, effort, add_generation_prompt=False):
        kwargs = {} if effort is None else {"reasoning_effort": effort}
        conv = ctu._normalize_chat_messages(messages)
        out, _ = ctu.render_jinja_template(conversations=[conv], tools=None, chat_template=template,
                                           add_generation_prompt=add_generation_prompt, **kwargs)
        return out[0]

    return render, template


# ------------------------------------------------------------------------------------------------
# 5. tokenizer
# ------------------------------------------------------------------------------------------------


def inkling_added_tokens():
    tj = json.loads((INKLING_DATA / "tokenizer.json").read_text())
    return [a["content"] for a in sorted(tj["added_tokens"], key=lambda a: a["id"])]


def train_tokenizer(texts, added):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PAT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=N_ORDINARY, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.get_vocab_size() == N_ORDINARY, tok.get_vocab_size()
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken(a, special=True, normalized=False) for a in added])
    assert tok.get_vocab_size() == N_ORDINARY + len(added)
    return tok


def tokenizer_config(tok, added):
    base = json.loads((INKLING_DATA / "tokenizer_config.json").read_text())
    dec = {}
    for a in added:
        i = tok.token_to_id(a)
        dec[str(i)] = {"content": a, "lstrip": False, "normalized": False, "rstrip": False,
                       "single_word": False, "special": True}
    return {"tokenizer_class": base.get("tokenizer_class", "TokenizersBackend"),
            "clean_up_tokenization_spaces": False, "model_max_length": 4096,
            "added_tokens_decoder": dec, "pad_token": "<|endoftext|>",
            "eos_token": "<|content_model_end_sampling|>"}


# ------------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "build-demo" / "data"))
    ap.add_argument("--model-dir", default=str(ROOT / "models" / "inkling-demo"))
    ap.add_argument("--n-chats", type=int, default=24000)
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--stage", type=int, choices=(1, 2), default=1,
                    help="2: fine-tuning data (headed verse answers, new chats, the model folder's tokenizer)")
    args = ap.parse_args()
    if args.stage == 2 and args.n_chats == 24000:
        args.n_chats = 36000
    out, mdir = Path(args.out), Path(args.model_dir)
    out.mkdir(parents=True, exist_ok=True)
    mdir.mkdir(parents=True, exist_ok=True)
    if not args.no_install:
        install(PACKAGES)
    rng = random.Random(SEED)

    chapters = bible_chapters()
    fort = fortunes()
    jarg = jargon_entries()
    print(f"bible chapters {len(chapters)}, verses {sum(len(c[2]) for c in chapters)}, "
          f"fortunes {len(fort)}, jargon entries {len(jarg)}", file=sys.stderr)

    docs = {
        "bible": ["\n".join(t for _, t in vs) for _, _, vs in chapters],
        "fortunes": fort,
        "jargon": [f"{t}: {pos}\n" + "\n".join(ps) if pos else f"{t}:\n" + "\n".join(ps) for t, pos, ps in jarg],
    }
    split = {"train": {}, "val": {}}
    for name, ds in docs.items():
        idx = list(range(len(ds)))
        random.Random(f"{SEED}-{name}").shuffle(idx)
        n_val = max(1, len(ds) // 20)
        split["val"][name] = [ds[i] for i in sorted(idx[:n_val])]
        split["train"][name] = [ds[i] for i in sorted(idx[n_val:])]

    # chats: from training chapters/fortunes/jargon only for the train split, val from val
    render, template = make_renderer()
    val_chapters = set(split["val"]["bible"])
    ch_train = [c for c in chapters if "\n".join(t for _, t in c[2]) not in val_chapters]
    ch_val = [c for c in chapters if "\n".join(t for _, t in c[2]) in val_chapters]
    jv = set(split["val"]["jargon"])
    j_train = [e for e in jarg if (f"{e[0]}: {e[1]}\n" + "\n".join(e[2]) if e[1] else f"{e[0]}:\n" + "\n".join(e[2])) not in jv]
    j_val = [e for e in jarg if e not in j_train]
    seed = SEED if args.stage == 1 else SEED + 100
    headed = args.stage == 2
    makers = {"train": ChatMaker(random.Random(seed + 1), ch_train, split["train"]["fortunes"], j_train, headed),
              "val": ChatMaker(random.Random(seed + 2), ch_val, split["val"]["fortunes"], j_val, headed)}
    chats = {"train": [], "val": []}
    for part, n in (("train", args.n_chats), ("val", max(200, args.n_chats // 20))):
        for _ in range(n):
            msgs, effort = makers[part].conversation()
            chats[part].append({"messages": msgs, "reasoning_effort": effort, "text": render(msgs, effort)})

    # tokenizer: trained on the training text (plain documents + message bodies, no markers)
    added = inkling_added_tokens()
    assert len(added) == 60
    tok_texts = [d for ds in split["train"].values() for d in ds]
    for c in chats["train"][:5000]:
        for m in c["messages"]:
            tok_texts.append(m["content"])
            if m.get("reasoning_content"):
                tok_texts.append(m["reasoning_content"])
    if args.stage == 1:
        tok = train_tokenizer(tok_texts, added)
        tok.save(str(mdir / "tokenizer.json"))
        (mdir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(tok, added), indent=1) + "\n")
        shutil.copyfile(INKLING_DATA / "chat_template.jinja", mdir / "chat_template.jinja")
    else:
        tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    eot = tok.token_to_id("<|endoftext|>")

    # token streams: documents (shuffled, plain and chat mixed) joined by <|endoftext|>
    stats = {}
    for part in ("train", "val"):
        items = [("plain", d) for ds in split[part].values() for d in ds] + [("chat", c["text"]) for c in chats[part]]
        random.Random(f"{SEED}-mix-{part}").shuffle(items)
        enc = tok.encode_batch([t for _, t in items], add_special_tokens=False)
        ids, n_plain, n_chat = [], 0, 0
        for (kind, _), e in zip(items, enc):
            ids.extend(e.ids)
            ids.append(eot)
            if kind == "plain":
                n_plain += len(e.ids) + 1
            else:
                n_chat += len(e.ids) + 1
        arr = np.array(ids, dtype=np.uint16)
        arr.tofile(out / f"{part}.bin")
        stats[part] = {"tokens": len(ids), "plain_tokens": n_plain, "chat_tokens": n_chat,
                       "documents": {k: len(v) for k, v in split[part].items()}, "chats": len(chats[part])}
        with open(out / f"{part}_chats.jsonl", "w") as f:
            for c in chats[part]:
                f.write(json.dumps(c, ensure_ascii=False) + "\n")
        with open(out / f"{part}_text.txt", "w") as f:
            for ds in split[part].values():
                for d in ds:
                    f.write(d + "\n\n")
    stats["sources"] = SOURCES
    stats["fortune_files"] = FORTUNE_FILES
    stats["verse_words"] = makers["train"].words
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(json.dumps({k: v for k, v in stats.items() if k in ("train", "val")}, indent=1))


if __name__ == "__main__":
    main()
