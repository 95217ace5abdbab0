#!/usr/bin/env python3
"""Drives the chat page of `inkling serve` in headless Chromium (Debian `chromium` and
`chromium-driver`, selenium from pip; no browser download) as a user would:

  1. load the page, send a message to the demo model, see the streamed answer with its
     reasoning block and its tokens/s line, expand the reasoning;
  2. change the effort to `none` and see an answer without reasoning;
  3. reload and find the conversation again (local storage);
  4. press Stop in the middle of a long (scripted) answer;
  5. Markdown from the model is rendered, never executed (a scripted answer with HTML in it);
  6. screenshots at desktop and phone width (docs/chat-page.png is chat-page-reasoning.png);
  7. attachments, on a tiny random model with towers (make_tiny_chat_model --towers 1): a PNG
     and a WAV picked with the file input, their previews, removing one, the message sent as
     content parts and answered, the media in the conversation and after a reload; a full
     storage quota (simulated) saves the chat without its media and says so; a 44.1 kHz WAV is
     flagged in its preview and the server's 400 is shown;
  8. an image sent to the text-only demo model: the server's 400 is shown in the conversation
     and the next message still works; a WAV over the server's --max-body-bytes gets its 413.

    python3 tools/test_chat_page_browser.py --inkling build/inkling --out build/chat-page-shots

Exit 0 when every check passes, 77 when chromium, chromedriver or selenium is missing (skipped).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import wave

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_server(inkling, model, extra=()):
    p = subprocess.Popen([inkling, "serve", "-m", model, "--port", "0", "-t", "2", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if "listening on" not in line:
        p.kill()
        raise SystemExit("server did not start: " + line)
    return p, int(line.rsplit(":", 1)[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inkling", default=os.path.join(ROOT, "build/inkling"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models/inkling-demo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/chat-page-shots"))
    ap.add_argument("--maker", default=os.path.join(ROOT, "build/make_tiny_chat_model"),
                    help="builds the tiny model with towers for the attachment checks")
    ap.add_argument("--tokenizer-dir", default=os.path.join(ROOT, "tests/data/inkling"))
    args = ap.parse_args()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import Select
        from selenium.webdriver.support.ui import WebDriverWait as Wait
    except ImportError:
        print("SKIP: selenium is not installed (pip install selenium)")
        return 77
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        print("SKIP: chromium / chromedriver not installed (apt-get install chromium chromium-driver)")
        return 77
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="inkling_page_")
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:  # the first entry found in the rendered prompt answers
        json.dump([{"when": "a long story", "output":  # thousands of tokens: time to press Stop
                    "<|message_model|><|content_text|>" + "Once upon a time. " * 1500 +
                    "<|end_message|><|content_model_end_sampling|>"},
                   {"when": "markdown please", "output":
                    "<|message_model|><|content_text|># Title\n\nSome **bold** and `code`, "
                    "<img src=x onerror=\"window.pwned=1\"> and [a link](javascript:window.pwned=2)."
                    "\n\n```python\nprint('<b>hi</b>')\n```\n<|end_message|>"
                    "<|content_model_end_sampling|>"},
                   {"when": "weather in Paris", "output":
                    "<|content_thinking|>Let me check.<|end_message|><|message_model|>get_weather"
                    "<|content_invoke_tool_json|>{\"name\":\"get_weather\",\"args\":"
                    "{\"city\":\"Paris\"}}<|end_message|><|content_model_end_sampling|>"}], f)
    # A small body limit: a 32 KB WAV (43 KB in base64) gets a 413 in check 8.
    demo, demo_port = start_server(args.inkling, args.model,
                                   ["--test-script", script, "--max-body-bytes", "30000"])
    mm_model = os.path.join(work, "tiny_mm_model")
    subprocess.run([args.maker, mm_model, args.tokenizer_dir, "--towers", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    mm, mm_port = start_server(args.inkling, mm_model, ["--ctx-size", "2048"])
    media = os.path.join(ROOT, "tests/fixtures/mm/media")

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,860", f"--user-data-dir={work}/profile"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(driver_bin), options=opts)
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    def send(text):
        box = driver.find_element(By.ID, "input")
        box.send_keys(text)
        box.send_keys(Keys.ENTER)

    def WebDriverWait(drv, timeout):  # the page redraws a streaming answer every frame
        return Wait(drv, timeout, ignored_exceptions=[StaleElementReferenceException])

    def setting(field, value):  # Settings are in a collapsed <details> of the sidebar
        driver.execute_script(
            "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
            "e.dispatchEvent(new Event('change'));", field, value)

    def answers():
        return driver.find_elements(By.CSS_SELECTOR, ".msg.assistant")

    def wait_done(n, timeout=60):
        WebDriverWait(driver, timeout).until(
            lambda d: len(answers()) >= n and answers()[n - 1].get_attribute("data-done") == "1")
        return answers()[n - 1]

    try:
        base = f"http://127.0.0.1:{demo_port}/"
        driver.get(base)
        check(driver.title.endswith("inkling chat"), "page loads: " + driver.title)
        setting("temp", "0")  # greedy: the demo model's answers are then fixed
        # 1. a streamed answer with reasoning (the template's default effort)
        send("Give me a verse about light")
        a = wait_done(1)
        body = a.find_element(By.CLASS_NAME, "body").text
        check(len(body.split()) >= 4, "answer has words: " + body[:80])
        stats = a.find_element(By.CLASS_NAME, "stats").text
        check("tokens/s" in stats, "tokens/s under the answer: " + stats)
        details = a.find_elements(By.CSS_SELECTOR, "details.reasoning")
        check(len(details) == 1, "reasoning block present")
        if details:
            check(details[0].get_attribute("open") is None, "reasoning collapsed by default")
            details[0].find_element(By.TAG_NAME, "summary").click()
            check(details[0].get_attribute("open") is not None, "reasoning expands")
            check(len(details[0].find_element(By.CLASS_NAME, "text").text) > 0, "reasoning text")
        send("Tell me a fortune")
        wait_done(2)
        # 2. a new chat at effort none: no reasoning
        driver.find_element(By.ID, "new").click()
        Select(driver.find_element(By.ID, "effort")).select_by_value("none")
        send("Give me a verse about light")
        a = wait_done(1)
        check(not a.find_elements(By.CSS_SELECTOR, "details.reasoning"), "effort none: no reasoning")
        # tool calls are shown with their name and arguments
        send("What is the weather in Paris?")
        a = wait_done(2)
        tools = a.find_elements(By.CLASS_NAME, "tool")
        check(len(tools) == 1 and "get_weather" in tools[0].text and "Paris" in tools[0].text,
              "tool call shown: " + (tools[0].text if tools else "none"))
        # 5. Markdown rendered, model HTML inert
        send("markdown please")
        a = wait_done(3)
        check(bool(a.find_elements(By.CSS_SELECTOR, ".body h1")), "heading rendered")
        check(bool(a.find_elements(By.CSS_SELECTOR, ".body .code pre code")), "code block rendered")
        check(not a.find_elements(By.CSS_SELECTOR, ".body img"), "no <img> from model text")
        check(not a.find_elements(By.CSS_SELECTOR, ".body a"), "no javascript: link")
        check(driver.execute_script("return window.pwned === undefined"), "nothing executed")
        check("<img" in a.find_element(By.CLASS_NAME, "body").text, "HTML shown as text")
        driver.save_screenshot(os.path.join(args.out, "chat-page-desktop.png"))
        # 3. reload: the conversation is still there
        driver.refresh()
        WebDriverWait(driver, 10).until(lambda d: len(answers()) == 3)
        check("Title" in driver.find_element(By.ID, "log").text, "the open chat is restored")
        chats = driver.find_elements(By.CSS_SELECTOR, "#chats .open")
        check(len(chats) == 2 and all("verse about light" in c.get_attribute("title") for c in chats),
              "both conversations listed after reload")
        chats[1].click()  # the first conversation, with its two answers
        WebDriverWait(driver, 10).until(lambda d: len(answers()) == 2 and
                                        "fortune" in d.find_element(By.ID, "log").text)
        check(True, "an older conversation opens")
        driver.save_screenshot(os.path.join(args.out, "chat-page-reasoning.png"))
        check(Select(driver.find_element(By.ID, "effort")).first_selected_option.text == "none",
              "effort kept after reload")
        # phone width
        driver.set_window_size(390, 844)
        time.sleep(0.3)
        check(not driver.find_element(By.ID, "side").is_displayed() or
              driver.find_element(By.ID, "side").rect["x"] < 0, "sidebar hidden at phone width")
        driver.save_screenshot(os.path.join(args.out, "chat-page-phone.png"))
        driver.find_element(By.ID, "menu").click()
        time.sleep(0.3)
        check(driver.find_element(By.ID, "side").rect["x"] >= -1, "menu opens the sidebar")
        driver.find_element(By.ID, "new").click()
        driver.set_window_size(1200, 860)
        # 4. stop a long answer (a scripted story of some 6000 tokens)
        setting("maxtok", "8000")
        send("Tell me a long story")
        # Wait for the first streamed text (reasoning or answer), then stop.
        WebDriverWait(driver, 60).until(lambda d: answers() and (
            answers()[-1].find_elements(By.CSS_SELECTOR, "details.reasoning") or
            answers()[-1].find_element(By.CLASS_NAME, "body").text.strip()))
        check(driver.find_element(By.ID, "stop").is_displayed(), "Stop button shown while streaming")
        driver.find_element(By.ID, "stop").click()
        a = wait_done(len(answers()), 20)
        st = a.find_element(By.CLASS_NAME, "stats").text
        check("stopped" in st and "tokens" in st, "Stop ends the answer mid-way: " + st)
        check(not driver.find_element(By.ID, "stop").is_displayed(), "Stop button hidden again")
        # keyboard: the input has focus after an answer
        check(driver.switch_to.active_element.get_attribute("id") == "input", "focus back in input")

        # 7. attachments on a model with towers (another origin: its own local storage)
        def tray():
            return driver.find_elements(By.CSS_SELECTOR, "#tray .att")

        def attach(*names):
            n = len(tray())
            driver.find_element(By.ID, "file").send_keys(
                "\n".join(os.path.join(media, x) for x in names))
            WebDriverWait(driver, 10).until(lambda d: len(tray()) == n + len(names))

        driver.get(f"http://127.0.0.1:{mm_port}/")
        setting("temp", "0")
        setting("maxtok", "6")
        attach("photo_64x90.jpg", "chirp_1.01s.wav")
        items = tray()
        check(len(items[0].find_elements(By.TAG_NAME, "img")) == 1, "image preview is a thumbnail")
        check("chirp_1.01s.wav" in items[1].text and "1.0 s" in items[1].text,
              "audio preview has name and duration: " + items[1].text)
        items[0].find_element(By.TAG_NAME, "button").click()  # remove the photo
        check(len(tray()) == 1 and "chirp" in tray()[0].text, "an attachment can be removed")
        check(driver.switch_to.active_element.get_attribute("aria-label") == "Remove chirp_1.01s.wav",
              "focus moves to the next remove button")
        attach("rgb_37x53.png")
        driver.set_window_size(390, 844)  # phone width: the tray and the form fit
        time.sleep(0.3)
        width = driver.execute_script("return document.documentElement.clientWidth")
        check(all(e.rect["x"] + e.rect["width"] <= width + 1 for e in
                  tray() + driver.find_elements(By.CSS_SELECTOR, "#send button:not([hidden])")),
              "attachments and buttons fit at phone width")
        driver.save_screenshot(os.path.join(args.out, "chat-page-media-phone.png"))
        driver.set_window_size(1200, 860)
        send("What do you see and hear?")
        a = wait_done(1)
        check(not a.find_elements(By.CLASS_NAME, "error"),
              "media message answered without error: " + a.text[:200])
        check(len(tray()) == 0, "the tray is empty after sending")
        user = driver.find_elements(By.CSS_SELECTOR, ".msg.user")[0]
        check(len(user.find_elements(By.CSS_SELECTOR, ".media img")) == 1 and
              len(user.find_elements(By.CSS_SELECTOR, ".media audio")) == 1,
              "the conversation shows the image and an audio player")
        driver.save_screenshot(os.path.join(args.out, "chat-page-media.png"))
        driver.refresh()
        WebDriverWait(driver, 10).until(lambda d: len(answers()) == 1)
        img = driver.find_elements(By.CSS_SELECTOR, ".msg.user .media img")
        if img:  # decoded asynchronously
            WebDriverWait(driver, 10).until(
                lambda d: d.execute_script("return arguments[0].complete", img[0]))
        check(len(img) == 1 and img[0].get_attribute("src").startswith("data:image/png;base64,") and
              driver.execute_script("return arguments[0].naturalWidth", img[0]) == 53,  # 53x37 pixels
              "the image is kept in local storage: " + str([
                  (i.get_attribute("src")[:40], driver.execute_script(
                      "return arguments[0].naturalWidth", i)) for i in img]))
        send("And now?")  # the history with its media goes back to the server
        a = wait_done(2)
        check(not a.find_elements(By.CLASS_NAME, "error"), "second turn with media history works")
        # a full storage quota: the chat is saved without media, with a note
        driver.execute_script(
            "const set = Storage.prototype.setItem;"
            "Storage.prototype.setItem = function (k, v) {"
            "  if (String(v).length > 4000) throw new DOMException('full', 'QuotaExceededError');"
            "  return set.call(this, k, v); };")
        attach("photo_64x90.jpg")
        send("One more")
        wait_done(3)
        note = driver.find_element(By.ID, "note")
        check(note.is_displayed() and "storage is full" in note.text, "quota note shown: " + note.text)
        stored = driver.execute_script("return localStorage.getItem('inkling.chats.v1')")
        check('"dropped":true' in stored and "base64" not in stored and "One more" in stored,
              "saved without media, text kept")
        check(len(driver.find_elements(By.CSS_SELECTOR, ".msg.user .media img")) == 2,
              "media stays on the page until reload")
        driver.refresh()
        WebDriverWait(driver, 10).until(lambda d: len(answers()) == 3)
        check("not kept" in driver.find_element(By.ID, "log").text, "after reload: media marked not kept")

        # a WAV at 44.1 kHz: flagged in the preview, refused by the server, shown inline
        wav44 = os.path.join(work, "tone_44k.wav")
        with wave.open(wav44, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(44100)
            w.writeframes(b"\0\0" * 22050)
        driver.find_element(By.ID, "new").click()
        driver.find_element(By.ID, "file").send_keys(wav44)
        WebDriverWait(driver, 10).until(lambda d: len(tray()) == 1)
        check("0.5 s" in tray()[0].text and "44100 Hz" in tray()[0].text,
              "a 44.1 kHz WAV is flagged: " + tray()[0].text)
        send("Listen")
        a = wait_done(1)
        err = a.find_elements(By.CLASS_NAME, "error")
        check(bool(err) and "HTTP 400" in err[0].text and "44100" in err[0].text,
              "the server's refusal is shown: " + (err[0].text if err else "none"))

        # 8. media sent to the text-only demo model
        driver.get(base)
        driver.find_element(By.ID, "new").click()
        attach("tiny_3x2.png")
        send("What is in this picture?")
        a = wait_done(1)
        err = a.find_elements(By.CLASS_NAME, "error")
        check(bool(err) and "HTTP 400" in err[0].text and "left out" in err[0].text,
              "text-only model: the 400 is shown: " + (err[0].text if err else "none"))
        send("Tell me a fortune")
        a = wait_done(2)
        check(not a.find_elements(By.CLASS_NAME, "error"), "the next message works (refused turn left out)")
        attach("chirp_1.01s.wav")
        send("And this?")
        a = wait_done(3)
        err = a.find_elements(By.CLASS_NAME, "error")
        check(bool(err) and "HTTP 413" in err[0].text and "max-body-bytes" in err[0].text and
              "left out" in err[0].text, "a body over the limit: " + (err[0].text if err else "none"))
        driver.save_screenshot(os.path.join(args.out, "chat-page-media-error.png"))
    finally:
        driver.quit()
        demo.terminate()
        demo.wait(timeout=20)
        mm.terminate()
        mm.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    print(f"screenshots in {args.out}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
