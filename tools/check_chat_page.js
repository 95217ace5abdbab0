// Checks app/server/web/chat.html with node (not run in CI; needs node):
//   node tools/check_chat_page.js [app/server/web/chat.html]
// 1. the page's script parses (the same check as `node --check`);
// 2. its Markdown renderer escapes model output: no tag, attribute or script URL gets through,
//    and the Markdown it supports renders as expected.
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

// The renderer is the part of the script before the page wiring.
const cut = src.indexOf("// ---- conversations");
assert(cut > 0, "renderer section not found");
const ctx = {};
vm.runInNewContext(src.slice(0, cut) + "\nthis.md = md;", ctx);
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
console.log("chat page OK: script parses, Markdown renderer escapes " + hostile.length +
  " hostile inputs");
