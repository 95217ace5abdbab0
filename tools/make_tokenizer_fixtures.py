#!/usr/bin/env python3
"""Tokenizer parity fixtures: a deterministic corpus encoded by tiktoken and HF `tokenizers`.

Writes tests/fixtures/tokenizer/corpus.jsonl ({"text", "tiktoken", "hf"[, "ordinary"]} per line)
and tests/fixtures/tokenizer/decode.jsonl ({"ids", "text"}: reference lossy decodes).
Reads only tests/data (no downloads). Usage: python3 tools/make_tokenizer_fixtures.py
"""
import hashlib
import json
import os
import random
import sys

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
RANKS = os.path.join(DATA, "o200k_base.tiktoken")
INKLING = os.path.join(DATA, "inkling")
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# tiktoken_ext/openai_public.py o200k_base(), verbatim.
O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def load_references():
    with open(RANKS, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != O200K_SHA256:
        sys.exit(f"{RANKS}: sha256 {digest} != {O200K_SHA256}")
    ranks = load_tiktoken_bpe(RANKS, expected_hash=O200K_SHA256)
    with open(os.path.join(INKLING, "special_tokens.json")) as f:
        st = json.load(f)
    specials = {s["content"]: s["id"] for s in st["special_tokens"]}
    with open(os.path.join(INKLING, "tokenizer.json")) as f:
        tj = json.load(f)
    hf_pat = tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    assert st["pat_str"] == O200K_PAT, "special_tokens.json pat_str differs from tiktoken's o200k"
    assert hf_pat == O200K_PAT, "tokenizer.json Split regex differs from tiktoken's o200k"
    # tokenizer.json must be the same vocabulary as the ranks file + specials.
    b2u = bytes_to_unicode()
    expect_vocab = {"".join(b2u[b] for b in tok): r for tok, r in ranks.items()}
    assert tj["model"]["vocab"] == expect_vocab, "tokenizer.json vocab != o200k_base ranks"
    assert {a["content"]: a["id"] for a in tj["added_tokens"]} == specials
    # tiktoken/tokenizer.model = ranks + specials.
    model_ranks = load_tiktoken_bpe(os.path.join(INKLING, "tiktoken", "tokenizer.model"))
    assert model_ranks == {**ranks, **{k.encode(): v for k, v in specials.items()}}
    enc = tiktoken.Encoding(
        name="inkling", pat_str=O200K_PAT, mergeable_ranks=ranks, special_tokens=specials
    )
    hf = Tokenizer.from_file(os.path.join(INKLING, "tokenizer.json"))
    return enc, hf, specials


# ---------------------------------------------------------------------------------------------
# Corpus generation (deterministic).

SCRIPTS = {
    "latin": [(0x61, 0x7A), (0x41, 0x5A), (0xE0, 0xFF), (0x100, 0x17F)],
    "cyrillic": [(0x430, 0x44F), (0x410, 0x42F), (0x450, 0x45F)],
    "greek": [(0x3B1, 0x3C9), (0x391, 0x3A9), (0x1F00, 0x1F15)],
    "cjk": [(0x4E00, 0x4FFF), (0x3041, 0x3096), (0x30A1, 0x30FA), (0xAC00, 0xAD00)],
    "arabic": [(0x621, 0x64A), (0x660, 0x669), (0x64B, 0x652)],
    "hebrew": [(0x5D0, 0x5EA), (0x5B0, 0x5BD)],
    "devanagari": [(0x905, 0x939), (0x93E, 0x94D), (0x966, 0x96F)],
    "thai": [(0xE01, 0xE2E), (0xE30, 0xE3A), (0xE40, 0xE4E), (0xE50, 0xE59)],
    "armenian": [(0x561, 0x586)],
    "georgian": [(0x10D0, 0x10FA)],
    "ethiopic": [(0x1200, 0x1248)],
    "tamil": [(0xB85, 0xBB9), (0xBBE, 0xBCD)],
}

SAMPLES = [
    "The capital of France is",
    "Hello, world! How's it going?",
    "Москва — столица России. Привет, мир!",
    "Καλημέρα κόσμε, τι κάνεις;",
    "北京是中国的首都。我爱自然语言处理。",
    "東京は日本の首都です。ひらがなとカタカナ。",
    "서울은 대한민국의 수도입니다.",
    "مرحبا بالعالم، كيف حالك؟ ١٢٣٤٥",
    "שלום עולם! מה שלומך?",
    "नमस्ते दुनिया, आप कैसे हैं? १२३",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
    "Ṫḧë qüïċḳ ḃṛöẅṅ ḟöẍ",
    "naïve café résumé coöperate façade",
    "Straße, Grüße, Äpfel, Öl, Übermut",
    "İstanbul'da ıslak ılık",
    "Ελληνικά: ΑΒΓΔ αβγδ ΆΈΉ",
    "ǅemal ǈudevit ǋunja",  # titlecase digraphs (Lt)
    "ʰʲʷ ˈhɛloʊ ˌwɜːld",  # modifier letters (Lm)
]

EMOJI = [
    "😀", "🎉", "👍", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "🇯🇵🇺🇸", "1️⃣", "#️⃣", "❤️", "🧑🏿‍🚀",
    "🤷‍♀️", "🫠", "🪿", "🫎", "\U0001FAE9", "☕", "✨", "🐈‍⬛", "👁️‍🗨️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿",
]

COMBINING = [chr(c) for c in range(0x300, 0x370)] + ["\u20DD", "\u20E3", "\u0E31", "\u093F", "\u05B7"]

WS = [" ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", "\x0b", "\x0c", "\x85", "\xa0", "\u1680",
      "\u2000", "\u2003", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b",
      "\ufeff", "\x1c", "\x1f", "\u180e"]

CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]

CODE = [
    "def main(argv):\n    for i in range(10):\n        print(f\"{i:>3}\")\n    return 0\n",
    "int main(int argc, char** argv) {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() > 2 ? 0 : 1;\n}\n",
    "const f = async (x) => { await fetch(`/api/${x}?q=1&r=2`); };\r\n",
    "{\"name\": \"get_weather\", \"args\": {\"city\": \"Paris\", \"days\": 3, \"units\": null}}",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
    "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do echo \"$f\" | wc -c; done\n",
    "fn add(a: i32, b: i32) -> i32 {\n    a + b // sum\n}\n",
    "    if (x != nullptr && *x == '\\n') { ++line; }\n",
    "x = [1,2,3]\ny = {k: v**2 for k, v in zip('abc', x)}\n\n\n",
    "// comment\n/* block\n   comment */\n",
    "matrix[i][j] += a[i][k] * b[k][j];",
    "$ git log --oneline -n 5 | grep -v 'WIP'",
]

URLS = [
    "https://www.example.com/path/to/page.html?query=value&other=123#section",
    "http://localhost:8080/v1/chat/completions",
    "ftp://user:pass@ftp.example.org/file.tar.gz",
    "mailto:someone@example.com",
    "file:///home/user/Documents/report%20final.pdf",
    "https://ja.wikipedia.org/wiki/東京都",
    "git@github.com:owner/repo.git",
    "C:\\Users\\Admin\\AppData\\Local\\Temp\\x.log",
    "/usr/local/lib/python3.11/site-packages/tokenizers/__init__.py",
]

EDGE = [
    "\ufffd", "\ufeff", "\ufeffHello", "\ue000", "\uf8ff", "\U000F0000", "\U0010FFFD", "\U0010FFFF",
    "\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001FFFE", "\U0010FFFE", "\x00", "\x01", "\x7f",
    "\x80", "\x9f", "\u0378", "\U000E0001", "\U000E0041", "\u200d", "\u200c", "\u2060", "\u00ad",
    "\U00011F00", "\U0002EBF0", "\U00031350", "\U0001CC00", "\U0001F6DC", "\u0e3f", "\u20ac",
    "\U0001D400\U0001D41A", "\u2160\u2161\u2162", "\u00b2\u00b3\u00bd", "\uff10\uff11\uff12",
    "\U0001D7CE\U0001D7CF", "\u3007", "\u0300", "\u0488", "\u1ab0", "\U0001F3FB",
]

SPECIAL_CONTEXTS = [
    "{s}", "Hello{s}world", "{s}{s}", " {s} ", "\n{s}\n", "abc{s}123", "{s}'s", "<|{s}|>",
    "<{s}", "{s}>", "x{s}{t}y", "  {s}  {t}  ",
]

PROSE_WORDS = (
    "the of and to in is was that for on with as by at from it his an were are which this be "
    "or has had not but have they first one their its new after who also two been more when "
    "there other during into all time can may such between some would about year over most "
    "world people these city under later many while where then only through used known state "
    "being however three part made team both since united national several school found group "
    "John London American English French Paris government university system music history"
).split()


def rand_script_word(rng, ranges):
    n = rng.randint(1, 12)
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(n))


def rand_number(rng, n):
    first = str(rng.randint(1, 9)) if n > 1 else str(rng.randint(0, 9))
    return first + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))


def prose_sentence(rng):
    words = [rng.choice(PROSE_WORDS) for _ in range(rng.randint(4, 20))]
    s = " ".join(words)
    s = s[0].upper() + s[1:]
    if rng.random() < 0.3:
        i = rng.randrange(len(words))
        words[i] = words[i] + rng.choice([",", ";", " -", ":"])
        s = " ".join(words)
    return s + rng.choice([".", "!", "?", "...", ".\n", ".\n\n", "\n"])


def fuzz_char(rng):
    k = rng.random()
    if k < 0.25:
        return chr(rng.randint(0x20, 0x7E))
    if k < 0.35:
        return rng.choice(WS)
    if k < 0.45:
        return rng.choice(COMBINING)
    if k < 0.55:
        return rng.choice(EMOJI)
    if k < 0.62:
        return rng.choice(EDGE)
    if k < 0.70:
        return rng.choice(CONTRACTIONS + ["'", "’", "ſ", "K"])
    if k < 0.90:
        ranges = rng.choice(list(SCRIPTS.values()))
        return chr(rng.randint(*rng.choice(ranges)))
    # Any scalar value, including unassigned code points.
    while True:
        c = rng.randint(0, 0x10FFFF)
        if not (0xD800 <= c <= 0xDFFF):
            return chr(c)


def build_corpus(specials):
    rng = random.Random(20240601)
    out = []
    add = out.append
    for s in SAMPLES + CODE + URLS + EDGE + EMOJI + WS:
        add(s)
    # Scripts: words, sentences, mixed with ASCII and digits.
    for name, ranges in SCRIPTS.items():
        for _ in range(40):
            words = [rand_script_word(rng, ranges) for _ in range(rng.randint(1, 8))]
            sep = rng.choice([" ", " ", "", ", ", "\n", "  "])
            s = sep.join(words)
            if rng.random() < 0.3:
                s = rng.choice(["Re: ", "(", "\"", "1. ", "— "]) + s + rng.choice([".", "?", ")", "\""])
            if rng.random() < 0.2:
                s += " " + rand_number(rng, rng.randint(1, 6))
            add(s)
    # Emoji and ZWJ sequences.
    for _ in range(120):
        parts = [rng.choice(EMOJI) for _ in range(rng.randint(1, 5))]
        glue = rng.choice(["", " ", "\u200d", "abc", "\n"])
        add(rng.choice(["", "I ", "ok"]) + glue.join(parts) + rng.choice(["", "!", " yes"]))
    # Combining marks: stacked, leading, after digits/spaces/punctuation.
    for _ in range(120):
        base = rng.choice(["a", "E", "o", "n", "1", " ", ".", "ж", "α", "ก", "'", "\n", ""])
        marks = "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 6)))
        tail = rng.choice(["", "bc", "BC", " x", "'s", "9"])
        add(rng.choice(["", "x", "X "]) + base + marks + tail)
    # Numbers of every length, with separators and other scripts' digits.
    for n in range(1, 41):
        add(rand_number(rng, n))
        add("x" + rand_number(rng, n) + "y")
        add(" " + rand_number(rng, n) + ".")
    for _ in range(120):
        k = rng.random()
        if k < 0.3:
            s = f"{rng.randint(0, 10**rng.randint(1, 12)):,}"
        elif k < 0.5:
            s = f"{rng.random() * 10**rng.randint(0, 8):.{rng.randint(0, 6)}f}"
        elif k < 0.6:
            s = f"{rng.random():.3e}"
        elif k < 0.75:
            s = "-".join(rand_number(rng, rng.randint(1, 5)) for _ in range(rng.randint(2, 4)))
        else:
            digits = rng.choice(["٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "０１２３４５６７８９", "๐๑๒๓๔๕๖๗๘๙",
                                 "²³¹¼½¾", "ⅠⅡⅢⅣⅤⅥ"])
            s = "".join(rng.choice(digits) for _ in range(rng.randint(1, 9)))
        add(rng.choice(["", " ", "$", "v", "№"]) + s + rng.choice(["", "%", " km", "th", "s"]))
    # Contractions in every case.
    for c in CONTRACTIONS:
        variants = {c.lower(), c.upper(), c[:2].upper() + c[2:], c[:1] + c[1:].capitalize()}
        for v in sorted(variants):
            for word in ["it", "IT", "It", "they", "THEY", "", "42", "we", " you", "I", "Ж", "é"]:
                add(word + v)
                add(word + v + " ok")
                add(word + v.replace("'", "’"))
    for _ in range(60):
        add(" ".join(rng.choice(["don't", "DON'T", "I'M", "you'Re", "she'LL", "we'vE", "he'D",
                                 "it'S", "'tis", "o'clock", "rock'n'roll", "'ſ", "x'ſ", "'K"])
                     for _ in range(rng.randint(1, 6))))
    # Whitespace runs.
    for _ in range(200):
        parts = []
        for _ in range(rng.randint(1, 6)):
            parts.append("".join(rng.choice(WS) for _ in range(rng.randint(0, 8))))
            parts.append(rng.choice(["word", "W", "!", "1", "", "é", "中", "\t", "//"]))
        add("".join(parts))
    for n in [1, 2, 3, 5, 8, 17, 64, 200]:
        for w in [" ", "\t", "\n", "\r\n", " \n", "\u3000"]:
            add(w * n)
            add("a" + w * n + "b")
            add(w * n + "x")
    # Code, URLs, JSON-ish, paths.
    for _ in range(120):
        snippet = rng.choice(CODE)
        indent = rng.choice(["", "    ", "\t", "        "])
        add("\n".join(indent + line for line in snippet.split("\n")))
    for _ in range(80):
        u = rng.choice(URLS)
        add(rng.choice(["", "See ", "(", "<"]) + u + rng.choice(["", ".", ")", ">", " now"]))
    # Special-token strings inside text.
    names = sorted(specials)
    for ctx in SPECIAL_CONTEXTS:
        for _ in range(10):
            add(ctx.format(s=rng.choice(names), t=rng.choice(names)))
    for name in names:
        add(name)
        add(name[:-1])
        add(" " + name[1:])
    add("<|message_user|>What is 2+2?<|end_message|><|message_model|>")
    add("<|not_a_token|> <|endoftext|>")
    # English prose paragraphs.
    for _ in range(120):
        add("".join(prose_sentence(rng) + " " for _ in range(rng.randint(1, 6))).rstrip(" "))
    # Random fuzz of everything above.
    while len(out) < 2600:
        add("".join(fuzz_char(rng) for _ in range(rng.randint(1, 60))))
    # A sweep over all of Unicode (every 557th scalar value) in contexts where its general
    # category decides the split: letter/mark runs, case, digits, whitespace, contractions.
    for c in range(0, 0x110000, 557):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        add(f"x{ch}y {ch}1{ch}{ch}A{ch}a'S{ch}\u3000{ch} ")
    # A few long strings (long pieces exercise the long BPE path).
    add("a" * 3000)
    add("ab" * 1500)
    add("Z" * 1000 + "z" * 1000)
    add(" " * 5000 + "x")
    add("1" * 999)
    add("😀" * 600)
    add("!" * 2000)
    add("".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(3000)))
    add("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4000)))
    add("".join(fuzz_char(rng) for _ in range(5000)))
    return out


def build_decode_cases(enc, rng_seed=7):
    """Id sequences whose bytes are often invalid UTF-8 (cut multi-byte chars), decoded lossily."""
    rng = random.Random(rng_seed)
    cases = []
    # Single byte tokens and known partial-UTF-8 tokens.
    partial = [i for i in range(enc.n_vocab - 100) if i < 199998 and _invalid(enc, [i])][:4000]
    for _ in range(300):
        ids = [rng.choice(partial) if rng.random() < 0.6 else rng.randint(0, 199997)
               for _ in range(rng.randint(1, 8))]
        cases.append(ids)
    for text in ["😀", "👩‍💻", "中文", "é", "\U0010FFFF"]:
        toks = enc.encode(text)
        for i in range(len(toks)):
            cases.append(toks[:i])
            cases.append(toks[i:])
    cases.append([200000, 9029, 200006])
    return [{"ids": ids, "text": enc.decode_bytes(ids).decode("utf-8", errors="replace")}
            for ids in cases]


def _invalid(enc, ids):
    try:
        enc.decode_bytes(ids).decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def main():
    enc, hf, specials = load_references()
    corpus = build_corpus(specials)
    hf.encode_special_tokens = False
    disagreements = 0
    lines = []
    for text in corpus:
        a = enc.encode(text, allowed_special="all")
        b = hf.encode(text, add_special_tokens=False).ids
        if a != b:
            disagreements += 1
            print(f"DISAGREE {text!r}: tiktoken={a} hf={b}", file=sys.stderr)
        assert enc.decode(a) == text
        rec = {"text": text, "tiktoken": a, "hf": b}
        if any(s in text for s in specials):
            rec["ordinary"] = enc.encode_ordinary(text)
            hf.encode_special_tokens = True
            hf_ordinary = hf.encode(text, add_special_tokens=False).ids
            hf.encode_special_tokens = False
            if hf_ordinary != rec["ordinary"]:
                disagreements += 1
                print(f"DISAGREE(ordinary) {text!r}", file=sys.stderr)
        lines.append(json.dumps(rec, ensure_ascii=False))
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "corpus.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    hf_decode_mismatch = 0
    dec = build_decode_cases(enc)
    for case in dec:
        h = hf.decode(case["ids"], skip_special_tokens=False)
        if h != case["text"]:
            hf_decode_mismatch += 1
            print(f"DECODE DISAGREE {case['ids']}: {h!r} vs {case['text']!r}", file=sys.stderr)
    with open(os.path.join(OUT, "decode.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(c, ensure_ascii=False) for c in dec) + "\n")
    print(f"corpus: {len(corpus)} strings, {sum(len(t) for t in corpus)} chars, "
          f"tiktoken/hf disagreements: {disagreements}; decode cases: {len(dec)}, "
          f"hf decode disagreements: {hf_decode_mismatch}")


if __name__ == "__main__":
    main()
