#!/usr/bin/python3
"""Loads a local, self-contained HTML page in headless Chromium and reports what it did:

    tests/report/browser.py PAGE.html SHOT.png [EXPR]     # prints check_page()'s dict as JSON

check_page() returns {"console": [...], "exceptions": [...], "requests": [...], "failed": [...],
"value": ..., "title": ...}: console errors, warnings and failed asserts plus the browser's own
log (CSP violations, failed loads), uncaught exceptions, the URLs fetched other than the page
and data:/about:/blob: ones, the failed loads, EXPR's value after load, and document.title; it
writes a full-page PNG to SHOT. `with Browser() as b:` keeps one Chromium for several pages.
DevTools protocol on a pipe (--remote-debugging-pipe: NUL-terminated JSON, commands to fd 3,
replies and events from fd 4); host names resolve to nothing, so no request leaves the machine."""
import base64
import contextlib
import fcntl
import json
import math
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

LOCAL_SCHEMES = ("data:", "about:", "blob:")
QUIET_S = 0.3        # after the load event, wait until the page is this long without events
SETTLE_CAP_S = 3.0   # ... but no longer than this (a page may log forever)
MAX_HEIGHT = 16000   # screenshot height cap, CSS px


def chromium_path():
    """The Chromium binary: $CHROMIUM, else /usr/bin/chromium, else `chromium` on PATH, or None."""
    debian = "/usr/bin/chromium"
    return os.environ.get("CHROMIUM") or (debian if os.access(debian, os.X_OK)
                                          else shutil.which("chromium"))


def _above_4(fd):
    """fd moved to a number above 4, so that the child's 3<& and 4>& cannot clobber it."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return new


class Browser:
    """One headless Chromium; check_page() opens each page in a new tab and closes it after."""

    def __init__(self, binary=None, timeout_s=60):
        self.binary = binary or chromium_path()
        if not self.binary:
            raise RuntimeError("Chromium not found (set $CHROMIUM or install Debian's chromium)")
        self.timeout_s = timeout_s
        self.proc = None
        self.next_id = 0
        self.buf = bytearray()   # what has come from Chromium, up to a NUL not yet found
        self.scanned = 0         # how much of buf is known to hold no NUL
        self.page = None   # the collector of the page being checked: its session's events go there

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="browser-check-")
        self.stderr = open(os.path.join(self.profile, "stderr.txt"), "w+b")
        cmd_r, self.cmd_w = os.pipe()
        self.msg_r, msg_w = os.pipe()
        cmd_r, msg_w = _above_4(cmd_r), _above_4(msg_w)
        flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--no-default-browser-check", "--disable-extensions",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,900",
                 f"--user-data-dir={self.profile}", "--remote-debugging-pipe"]
        try:
            # Popen's pass_fds keeps fd numbers, and Chromium wants exactly 3 and 4: a shell
            # puts them there and execs Chromium (no preexec_fn, so this is thread-safe).
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", f'exec "$0" "$@" 3<&{cmd_r} 4>&{msg_w}', self.binary, *flags],
                pass_fds=(cmd_r, msg_w), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.stderr, start_new_session=True,
                # Crash reports and dconf's cache would go to ~/.config, ~/.cache otherwise.
                env=dict(os.environ, XDG_CONFIG_HOME=self.profile, XDG_CACHE_HOME=self.profile))
        except BaseException:
            self.__exit__()
            raise
        finally:
            os.close(cmd_r)   # the child holds its own copies: EOF now means Chromium is gone
            os.close(msg_w)
        return self

    def __exit__(self, *exc):
        """Closes Chromium (politely, then by force), its pipes and its profile directory."""
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._send("Browser.close", {})
                self.proc.wait(5)
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)   # its group: renderers, zygotes
            self.proc.wait()
        for fd in (self.cmd_w, self.msg_r):
            os.close(fd)
        self.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _died(self):
        """An error telling that Chromium exited, with the end of what it wrote to stderr."""
        rc = self.proc.wait(5)
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-15:]
        return RuntimeError(f"Chromium exited (status {rc}):\n" + "\n".join(tail))

    def _send(self, method, params, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params,
               **({"sessionId": session} if session else {})}
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.cmd_w, data):]
        except BrokenPipeError:
            raise self._died() from None
        return self.next_id

    def _read(self, until, what):
        """The next message from Chromium; None once `until` (a time.monotonic()) has passed,
        or a TimeoutError mentioning `what` if the overall deadline has passed."""
        while (end := self.buf.find(b"\0", self.scanned)) < 0:
            self.scanned = len(self.buf)   # a screenshot may come in hundreds of reads
            now = time.monotonic()
            if now >= min(until, self.deadline):
                if now >= self.deadline:
                    raise TimeoutError(f"{self.url}: no {what} within {self.limit_s} s")
                return None
            if select.select([self.msg_r], [], [], min(until, self.deadline) - now)[0]:
                chunk = os.read(self.msg_r, 1 << 20)
                if not chunk:
                    raise self._died()
                self.buf += chunk
        raw, self.scanned = self.buf[:end], 0
        del self.buf[:end + 1]
        return json.loads(raw)

    def _call(self, method, params=None, session=None):
        """Sends a command and returns its result, handling the events that arrive meanwhile."""
        cid = self._send(method, params or {}, session)
        while True:
            msg = self._read(self.deadline, f"reply to {method}")
            if msg.get("id") == cid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error'].get('message')}")
                return msg["result"]
            self._event(msg)

    def _event(self, msg):
        """Files an event of the page being checked into its collector."""
        page, p = self.page, msg.get("params", {})
        if not page or msg.get("sessionId") != page["session"]:
            return
        page["last_event"] = time.monotonic()
        method = msg.get("method")
        if method == "Page.loadEventFired":
            page["loaded"] = True
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "warning", "assert"):
            frames = p.get("stackTrace", {}).get("callFrames") or [{}]
            where = f" ({frames[0]['url']}:{frames[0]['lineNumber'] + 1})" if frames[0] else ""
            text = " ".join(str(a.get("value", a.get("unserializableValue", a.get("description"))))
                            for a in p["args"])   # Runtime.RemoteObjects
            page["console"].append(f"console.{p['type']}: {text}{where}")
        elif method == "Runtime.exceptionThrown":
            d, exc = p["exceptionDetails"], p["exceptionDetails"].get("exception", {})
            # A thrown Error's description carries its stack; `throw "x"` has only a value.
            where = f"({d.get('url')}:{d['lineNumber'] + 1})"
            page["exceptions"].append(exc.get("description")
                                      or f"{d['text']} {exc.get('value', '')} {where}")
        elif method == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            e = p["entry"]
            url = f" ({e['url']})" if e.get("url") and e["url"] not in e["text"] else ""
            page["console"].append(f"{e['source']} {e['level']}: {e['text']}{url}")
        elif method == "Network.requestWillBeSent":
            url = p["request"]["url"]
            page["urls"][p["requestId"]] = url
            if url != page["url"] and not url.startswith(LOCAL_SCHEMES):
                page["requests"].append(url)
        elif method == "Network.loadingFailed":
            url = page["urls"].get(p["requestId"], "?")
            why = [p.get("errorText"), p.get("blockedReason"),
                   p.get("corsErrorStatus", {}).get("corsError")]
            page["failed"].append(f"{url}: " + ", ".join(w for w in why if w))

    def _evaluate(self, expression, session):
        """The JSON value of a JavaScript expression in the page (promises awaited)."""
        res = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                              "awaitPromise": True}, session)
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            raise RuntimeError(d.get("exception", {}).get("description") or d.get("text"))
        return res["result"].get("value")

    def check_page(self, html_path, screenshot_path, expression="null", timeout_s=None,
                   width=1280):
        """Loads html_path in a new tab `width` CSS px wide; returns what it reported (see the
        module's docstring) and writes a full-page PNG (at most MAX_HEIGHT px tall). If the
        expression throws, "value" is None and the error is listed in "exceptions"."""
        path = pathlib.Path(html_path).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no such page: {html_path}")
        self.url, self.limit_s = path.as_uri(), timeout_s or self.timeout_s
        self.deadline = time.monotonic() + self.limit_s
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        try:
            session = self._call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
            page = self.page = {"session": session, "url": self.url, "loaded": False,
                                "last_event": 0, "console": [], "exceptions": [],
                                "requests": [], "failed": [], "urls": {}}
            for domain in ("Runtime", "Log", "Network", "Page"):
                self._call(f"{domain}.enable", {}, session)
            self._call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900,
                       "deviceScaleFactor": 1, "mobile": False}, session)
            nav = self._call("Page.navigate", {"url": self.url}, session)
            if nav.get("errorText"):
                raise RuntimeError(f"{self.url}: {nav['errorText']}")
            while not page["loaded"]:
                self._event(self._read(self.deadline, "load event"))
            settle_end = time.monotonic() + SETTLE_CAP_S
            while (msg := self._read(min(settle_end, page["last_event"] + QUIET_S), "quiet")):
                self._event(msg)
            try:
                value = self._evaluate(expression, session)
            except RuntimeError as e:
                value = None
                page["exceptions"].append(f"evaluating {expression!r}: {e}")
            title = self._evaluate("document.title", session)
            size = self._call("Page.getLayoutMetrics", {}, session)
            size = size.get("cssContentSize") or size["contentSize"]
            clip = {"x": 0, "y": 0, "width": max(1, math.ceil(size["width"])),
                    "height": max(1, min(math.ceil(size["height"]), MAX_HEIGHT)), "scale": 1}
            shot = self._call("Page.captureScreenshot", {"format": "png", "clip": clip,
                              "captureBeyondViewport": True}, session)
            pathlib.Path(screenshot_path).write_bytes(base64.b64decode(shot["data"]))
        finally:
            self.page = None
            self.deadline = max(self.deadline, time.monotonic() + 5)  # a little past a timeout
            with contextlib.suppress(RuntimeError, TimeoutError):  # then the next call says so
                self._call("Target.closeTarget", {"targetId": target})
        return {key: page[key] for key in ("console", "exceptions", "requests", "failed")} | {
            "value": value, "title": title}


def check_page(html_path, screenshot_path, expression="null", timeout_s=60, width=1280):
    """Browser().check_page() in a Chromium of its own."""
    with Browser(timeout_s=timeout_s) as browser:
        return browser.check_page(html_path, screenshot_path, expression, width=width)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    print(json.dumps(check_page(*sys.argv[1:]), indent=2))
