// Checks app/server/web/chat.html with node (not run in CI; needs node):
//   node tools/check_chat_page.js [app/server/web/chat.html]
// 1. the page's script parses (the same check as `node --check`);
// 2. its Markdown renderer escapes model output: no tag, attribute or script URL gets through,
//    and the Markdown it supports renders as expected;
// 3. its media helpers: file kinds, the WAV header reader, content parts, storage without media.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const assert = require("assert");

const file = process.argv[2] || path.join(__dirname, "..", "app/server/web/chat.html");
const html = fs.readFileSync(file, "utf8");
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
assert.strictEqual(scripts.length, 1, "expected exactly one inline <script>");
const src = scripts[0];
new vm.Script(src, { filename: "chat.html <script>" });  // throws on a syntax error

// The renderer and the media helpers are the part of the script before the page wiring.
const cut = src.indexOf("// ---- conversations");
assert(cut > 0, "renderer section not found");
const ctx = { btoa };
vm.runInNewContext(src.slice(0, cut) + "\nthis.md = md; this.kindOf = kindOf; this.wavInfo = wavInfo;" +
  " this.toBase64 = toBase64; this.apiContent = apiContent; this.withoutMedia = withoutMedia;", ctx);
const md = ctx.md;

const hostile = [
  "<script>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  "[x](javascript:alert(1))",
  "[x](https://e.com/\"onmouseover=\"alert(1))",
  "**<b>bold</b>**",
  "`<i>code</i>`",
  "```html\n<script>alert(1)</script>\n```",
  "> <iframe src=x>",
  "- <svg onload=alert(1)>",
  "# <style>*{}</style>",
  "[<img src=x>](https://e.com)",
];
for (const h of hostile) {
  const out = md(h);
  // Only the renderer's own tags may appear.
  const tags = [...out.matchAll(/<\/?([a-zA-Z0-9]+)([^>]*)>/g)];
  for (const t of tags) {
    assert(/^(p|br|h[1-6]|strong|em|code|pre|div|span|button|ul|ol|li|blockquote|hr|a)$/.test(t[1]),
      `unexpected tag <${t[1]}> from ${JSON.stringify(h)}: ${out}`);
    assert(!/\son\w+=/i.test(t[2]), `event handler from ${JSON.stringify(h)}: ${out}`);
  }
  for (const m of out.matchAll(/href="([^"]*)"/g))
    assert(/^(https?:|mailto:)/i.test(m[1]), `link to ${m[1]} from ${JSON.stringify(h)}`);
}
assert(!md("[x](javascript:alert(1))").includes("<a"), "javascript: link rendered");
assert(md('[x](https://e.com/"a)').includes('href="https://e.com/&quot;a"'), "href not escaped");

const expect = (src, want) => {
  const got = md(src);
  assert.strictEqual(got, want, `md(${JSON.stringify(src)})`);
};
expect("hello **bold** and *it* and `c<d`",
  "<p>hello <strong>bold</strong> and <em>it</em> and <code>c&lt;d</code></p>");
expect("# Title\n\npara one\nline two",
  "<h1>Title</h1><p>para one<br>line two</p>");
expect("- a\n- b\n\n1. x\n2. y", "<ul><li>a</li><li>b</li></ul><ol><li>x</li><li>y</li></ol>");
assert(md("```cpp\nint a = 1 < 2;\n```").includes("<pre><code>int a = 1 &lt; 2;</code></pre>"));
assert(md("```\nunterminated").includes("<pre><code>unterminated</code></pre>"));
expect("> quoted", "<blockquote><p>quoted</p></blockquote>");
// Odd input terminates and stays text.
for (const odd of ["", "\n\n", "#", "1.", "- ", "***", "`", "**", "[", "](", "> ", "~~~"]) md(odd);

// ---- media helpers ----
const kind = (n, t) => JSON.stringify(ctx.kindOf(n, t));
assert.strictEqual(kind("a.PNG", ""), '["image","image/png"]');
assert.strictEqual(kind("photo.jpeg", "image/jpeg"), '["image","image/jpeg"]');
assert.strictEqual(kind("x", "audio/x-wav"), '["audio","audio/wav"]');
assert.strictEqual(kind("x.wav", "application/octet-stream"), '["audio","audio/wav"]');
assert.strictEqual(ctx.kindOf("x.gif", "image/gif"), null);
assert.strictEqual(ctx.kindOf("song.mp3", "audio/mpeg"), null);
// A 16 kHz mono int16 WAV of 0.5 s with a LIST chunk (odd size, padded) before the data.
function wav(rate, channels, bits, seconds) {
  const data = Math.round(rate * seconds) * channels * bits / 8;
  const b = Buffer.alloc(12 + 24 + 8 + 3 + 1 + 8 + data);
  b.write("RIFF", 0); b.writeUInt32LE(b.length - 8, 4); b.write("WAVE", 8);
  b.write("fmt ", 12); b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(channels, 22);
  b.writeUInt32LE(rate, 24); b.writeUInt32LE(rate * channels * bits / 8, 28);
  b.writeUInt16LE(channels * bits / 8, 32); b.writeUInt16LE(bits, 34);
  b.write("LIST", 36); b.writeUInt32LE(3, 40); b.write("abc", 44);
  b.write("data", 48); b.writeUInt32LE(data, 52);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
}
let w = ctx.wavInfo(wav(16000, 1, 16, 0.5));
assert(w && w.rate === 16000 && Math.abs(w.seconds - 0.5) < 1e-9, JSON.stringify(w));
w = ctx.wavInfo(wav(44100, 2, 16, 2));
assert(w && w.rate === 44100 && Math.abs(w.seconds - 2) < 1e-6, JSON.stringify(w));
assert.strictEqual(ctx.wavInfo(new ArrayBuffer(0)), null);
const ab = (s) => { const b = Buffer.from(s, "latin1"); return b.buffer.slice(b.byteOffset, b.byteOffset + b.length); };
assert.strictEqual(ctx.wavInfo(ab("RIFF\x04\0\0\0WAVEdata")), null);  // no fmt chunk
assert.strictEqual(ctx.wavInfo(ab("RIFF\x04\0\0\0WAVEfmt \xff\xff\xff\xff")), null);  // runs off the end
assert.strictEqual(ctx.wavInfo(ab("not a wav file at all")), null);
const trunc = wav(16000, 1, 16, 1).slice(0, 1000);  // data chunk cut short: length from the bytes
assert(Math.abs(ctx.wavInfo(trunc).seconds - (1000 - 56) / 32000) < 1e-9);
assert.strictEqual(ctx.toBase64(new Uint8Array([0, 255, 1, 2]).buffer), "AP8BAg==");
const big = new Uint8Array(100000).map((_, i) => i * 7);
assert.strictEqual(ctx.toBase64(big.buffer), Buffer.from(big).toString("base64"));
const img = { kind: "image", name: "a.png", mime: "image/png", size: 3, data: "AAAA" };
const au = { kind: "audio", name: "b.wav", mime: "audio/wav", size: 3, data: "BBBB", seconds: 1 };
assert.strictEqual(ctx.apiContent({ role: "user", content: "hi" }), "hi");
assert.strictEqual(JSON.stringify(ctx.apiContent({ role: "user", content: "hi",
  attachments: [img, au] })), JSON.stringify([
  { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
  { type: "input_audio", input_audio: { data: "BBBB", format: "wav" } },
  { type: "text", text: "hi" }]));
assert.strictEqual(JSON.stringify(ctx.apiContent({ content: "", attachments: [img] })),
  '[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]');
// Media whose bytes were not stored is left out of the request.
assert.strictEqual(ctx.apiContent({ content: "t", attachments: [{ kind: "image", dropped: true }] }), "t");
const chats = [{ id: "1", title: "t", messages: [{ role: "user", content: "x", attachments: [img, au] },
  { role: "assistant", content: "y" }] }];
const lean = ctx.withoutMedia(chats);
assert(!JSON.stringify(lean).includes("AAAA") && !JSON.stringify(lean).includes("BBBB"));
assert(lean[0].messages[0].attachments.every((a) => a.dropped && a.name && !a.data));
assert.strictEqual(lean[0].messages[1].content, "y");
assert.strictEqual(chats[0].messages[0].attachments[0].data, "AAAA", "the page's copy is kept");
console.log("media helpers OK");
console.log("chat page OK: script parses, Markdown renderer escapes " + hostile.length +
  " hostile inputs");
