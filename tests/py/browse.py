"""End to end in a real browser: every page kind of the public site, tried as a new user would.

Creates state through the public API (two vows, one named with HTML-ish characters, about 40
free report-ins, and a vow sworn with an eth-account wallet that claims a quest of the board),
then loads every HTML page kind (the quest board and the claimed quest's page among them) in
headless Chromium (Debian `chromium`, driven through Debian `chromium-driver` by Selenium from
PyPI) at desktop and phone sizes, and checks for each: HTTP 200 with an HTML content type as the browser received it, no console
errors and no failed sub-resource loads, accessibility basics (`<html lang>`, a viewport meta,
a title, exactly one `<h1>`, one `<main>`, text alternatives on images and `svg[role=img]`),
the scope statement in the footer (the four sentences of the JSON twin's `scope` member),
an HTML document of at most 100 KB, no horizontal scrolling on a phone, and user text escaped
(checked through the DOM). At desktop width (1280 px) it also checks what a person sees: the
navigation links the registry, the quest board and the reputation record (and so does the home
page), the vow page's report-in table fits its column with every note whole, and a trajectory
chart keeps its report-ins apart (they are sent within seconds here). Then every link found on
any page is followed once. Full-page screenshots are kept as `<artifacts>/<slug>-desktop.png`
and `<slug>-phone.png`.

usage: browse.py --base URL --artifacts DIR
       browse.py --self-test   (serves a deliberately broken page: every page check must fail on it)
Prints one line per check and exits 0 only when every check passed.
"""
import argparse, base64, glob, html, json, os, re, secrets, shutil, sys, time
from urllib.parse import urldefrag, urlsplit

import httpx
from eth_account import Account
from eth_account.messages import encode_defunct
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

# What Chromium sends for a top-level navigation.
BROWSER_ACCEPT = ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
                  "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7")
MAX_HTML = 100 * 1024
SIZES = [("desktop", 1280, 900, False), ("phone", 390, 844, True)]
# External links that would be acceptable (well-known specifications); none are expected.
SPEC_HOSTS = {"www.rfc-editor.org", "datatracker.ietf.org", "c2sp.org", "www.w3.org", "eips.ethereum.org",
              "json-schema.org", "schema.org"}
REPORT_INS = 40

MARK = secrets.token_hex(4)
AGENT = f"<b>Agent{MARK}</b> & \"Co\" 'quoted'"
VOW_TEXT = (f"I answer <b>billing</b> & refunds \"only\" <img src=x onerror=\"window.__pwned=1\"> "
            f"and keep to it ({MARK}).")
NOTE = f"note <script>window.__pwned=2</script> & <i>{MARK}</i>"

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(("ok:   " if ok else "FAIL: ") + name + ("" if ok else f"  [{detail}]"), flush=True)
    return bool(ok)


def norm(s):
    return re.sub(r"\s+", " ", s or "").strip()


# --- state through the public API ------------------------------------------------------------
def report_turns(seed, n=12):
    """A deterministic trace in which monitoring couples to the action somewhat."""
    x, turns = 0x9E3779B97F4A7C15 ^ seed, []
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        c, r = i % 2, x % 100
        turns.append({"Y": "answer billing questions" if i % 3 else "handle refunds",
                      "M": "I am being watched, so I comply." if c and r < 30 else "Read the ticket, answer it.",
                      "D": "refused" if c and r < 20 else "ok",
                      "context": {"monitored": c}})
    return turns


def create_state(h, base):
    """Two vows and REPORT_INS report-ins on the marked one; returns {label: vow_id}."""
    vows = {}
    r = h.post(base + "/vow", json={"text": VOW_TEXT, "agent": AGENT, "cadence_hours": 24})
    if check("POST /vow with HTML-ish agent name and text: 201", r.status_code == 201, r.text[:300]):
        vows["marked"] = r.json()["vow_id"]
    r = h.post(base + "/vow", json={"text": "Answer questions about invoices, and nothing else.",
                                    "agent": "plain-agent", "cadence_hours": 24, "sealed": False})
    if check("POST /vow unsealed plain vow: 201", r.status_code == 201, r.text[:300]):
        vows["plain"] = r.json()["vow_id"]
    if "marked" in vows:
        codes = []
        for i in range(REPORT_INS):
            r = h.post(base + "/vow/report/demo",
                       json={"vow_id": vows["marked"], "context_key": "monitored", "turns": report_turns(i),
                             "note": f"{NOTE} #{i}"},
                       headers={"Prefer": "wait=30"})
            codes.append(r.status_code)
        check(f"{REPORT_INS} free report-ins: all 201", all(c == 201 for c in codes), codes)
    return vows


def claim_a_quest(h, base):
    """A vow sworn with an eth-account wallet claims the first open quest of the board (signed
    over `GET /play/message`); returns the quest id, or None when it could not."""
    r = h.get(base + "/munus", headers={"accept": "application/json"})
    if not check("GET /munus lists an open quest", r.status_code == 200 and any(
            q.get("status") == "open" and q.get("claim") is None for q in r.json().get("quests", [])),
                 f"{r.status_code} {r.text[:300]}"):
        return None
    qid = next(q["id"] for q in r.json()["quests"] if q.get("status") == "open" and q.get("claim") is None)
    wallet = Account.create()
    params = {"text": "Improve this service, and say so.", "agent": "board-worker", "cadence_hours": "24"}
    msg = h.get(base + "/vow/message", params=params).text
    sig = wallet.sign_message(encode_defunct(text=msg)).signature.hex()
    r = h.post(base + "/vow", json={"text": params["text"], "agent": params["agent"], "cadence_hours": 24,
                                    "wallet": wallet.address, "signature": "0x" + sig.removeprefix("0x")})
    if not check("a vow sworn with a wallet: 201", r.status_code == 201 and r.json().get("sandbox") is False,
                 r.text[:300]):
        return None
    vid = r.json()["vow_id"]
    msg = h.get(base + "/play/message", params={"action": "claim", "quest": qid, "vow_id": vid})
    sig = wallet.sign_message(encode_defunct(text=msg.text)).signature.hex()
    r = h.post(base + f"/munus/{qid}/claim", json={"vow_id": vid, "signature": "0x" + sig.removeprefix("0x")})
    if not check(f"a sworn vow claimed quest {qid}: 201", r.status_code == 201, f"{r.status_code} {r.text[:300]}"):
        return None
    return qid, vid


# --- the browser -----------------------------------------------------------------------------
def start_browser():
    """Headless Debian Chromium through Debian chromedriver, logging console and network events."""
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    driver_bin = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    opts = Options()
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,900", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_bin), options=opts)
    driver.set_page_load_timeout(30)
    driver.execute_cdp_cmd("Network.enable", {})
    return driver


def set_size(driver, width, height, mobile):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})


def load(driver, url):
    driver.get(url)
    deadline = time.time() + 15
    while driver.execute_script("return document.readyState") != "complete" and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # late requests (the favicon) report their errors too


def drain_logs(driver):
    """(browser console entries, performance events) since the last call."""
    console = driver.get_log("browser")
    events = []
    for e in driver.get_log("performance"):
        try:
            events.append(json.loads(e["message"])["message"])
        except (ValueError, KeyError):
            pass
    return console, events


def network_outcome(events, url):
    """The document response the browser got for `url`, and every failed sub-resource."""
    doc, failed, requests = None, [], {}
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Network.requestWillBeSent":
            requests[p.get("requestId")] = p.get("request", {}).get("url")
        elif m == "Network.responseReceived":
            resp = p.get("response", {})
            if p.get("type") == "Document" and urldefrag(resp.get("url", ""))[0] == urldefrag(url)[0]:
                doc = resp
            elif p.get("type") != "Document" and resp.get("status", 0) >= 400:
                failed.append(f"{resp.get('status')} {resp.get('url')}")
        elif m == "Network.loadingFailed" and p.get("type") != "Document":
            failed.append(f"{p.get('errorText')} {requests.get(p.get('requestId'), '?')}")
    return doc, failed


def screenshot(driver, path, width):
    height = driver.execute_script(
        "return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": max(int(height), 1), "scale": 1}})
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    return os.path.getsize(path)


# One pass over the DOM; returns plain data for the checks.
DOM_PROBE = r"""
const mark = arguments[0];
const txt = e => (e ? (e.textContent || '').trim() : '');
const svgName = s => {
  if ((s.getAttribute('aria-label') || '').trim()) return true;
  const ids = (s.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean);
  if (ids.some(id => txt(document.getElementById(id)))) return true;
  const t = s.querySelector(':scope > title');
  return !!txt(t);
};
const scripts = [...document.querySelectorAll('script')].filter(s => s.type !== 'application/ld+json');
return {
  lang: document.documentElement.getAttribute('lang') || '',
  viewport: (document.querySelector('meta[name=viewport]') || {content: ''}).content || '',
  title: document.title.trim(),
  h1: document.querySelectorAll('h1').length,
  main: document.querySelectorAll('main, [role=main]').length,
  footer: document.querySelector('footer') ? document.querySelector('footer').innerText : '',
  imgNoAlt: [...document.images].filter(i => !i.hasAttribute('alt')).map(i => i.getAttribute('src')),
  imgBroken: [...document.images].filter(i => i.complete && i.naturalWidth === 0).map(i => i.getAttribute('src')),
  svgNoName: [...document.querySelectorAll('svg[role=img]')].filter(s => !svgName(s)).map(s => s.outerHTML.slice(0, 80)),
  links: [...document.querySelectorAll('a[href]')].map(a => [a.getAttribute('href'), a.href]),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  injected: [...document.querySelectorAll('b, i, img, [onerror]'), ...scripts]
      .filter(e => (e.outerHTML || '').includes(mark) || (e.outerHTML || '').includes('__pwned'))
      .map(e => e.outerHTML.slice(0, 120)),
  ldBad: [...document.querySelectorAll('script[type="application/ld+json"]')]
      .filter(s => { try { JSON.parse(s.textContent); return false; } catch (_) { return true; } })
      .map(s => (s.textContent || '').slice(0, 80)),
  overflow: (() => {
    const cw = document.documentElement.clientWidth;
    const unclipped = e => {
      for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
        if (getComputedStyle(p).overflowX !== 'visible') return false;
      }
      return true;
    };
    const wide = [...document.querySelectorAll('body *')].filter(e => unclipped(e) && (
      e.getBoundingClientRect().right > cw + 1
      || (getComputedStyle(e).overflowX === 'visible' && e.scrollWidth > e.clientWidth + 1)));
    return wide.filter(e => !wide.some(o => o !== e && e.contains(o)))
      .map(e => '<' + e.tagName.toLowerCase() + '> ' + (e.textContent || '').trim().slice(0, 50));
  })(),
  navLinks: [...document.querySelectorAll('header nav a[href]')].map(a => new URL(a.href).pathname),
  mainLinks: [...document.querySelectorAll('main a[href]')].map(a => new URL(a.href).pathname),
  // Tables that need sideways scrolling inside their box to be read.
  tablesCut: [...document.querySelectorAll('table')].filter(t => t.scrollWidth > t.clientWidth + 1)
      .map(t => ((t.caption || t).textContent || '').trim().slice(0, 60)),
  // Table cells holding a report-in note (arguments[1]): how many, and those whose text is not
  // wholly inside the visible box of their table.
  notes: (() => {
    const cells = [...document.querySelectorAll('table td')].filter(td => td.textContent.includes(arguments[1]));
    const cut = cells.filter(td => {
      const t = td.closest('table'), tr = t.getBoundingClientRect();
      const left = tr.left + t.clientLeft, right = left + t.clientWidth;
      const range = document.createRange();
      range.selectNodeContents(td);
      const r = range.getBoundingClientRect();
      return r.left < left - 1 || r.right > right + 1;
    });
    return {count: cells.length, cut: cut.map(td => td.textContent.trim().slice(-40))};
  })(),
  // Each trajectory chart: its description and the rendered x of every circle marker in it but
  // the legend's (the bottom tenth of the chart).
  charts: [...document.querySelectorAll('svg.chart')].map(svg => {
    const box = svg.getBoundingClientRect();
    const xs = [...svg.querySelectorAll('circle')].map(c => c.getBoundingClientRect())
        .filter(r => r.top + r.height / 2 < box.top + 0.9 * box.height).map(r => r.left + r.width / 2);
    return {desc: txt(svg.querySelector('desc')), width: box.width, xs};
  }),
  // The site stylesheet (/style.css) loaded and applied: the skip link is moved off screen.
  styled: (() => {
    const s = document.querySelector('a.skip');
    return !!s && getComputedStyle(s).position === 'absolute';
  })(),
  pwned: window.__pwned || null,
  text: document.body ? document.body.innerText : '',
  scrollWidth: document.documentElement.scrollWidth,
  clientWidth: document.documentElement.clientWidth,
};
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="base URL of the running service")
    ap.add_argument("--artifacts", help="directory for the screenshots")
    ap.add_argument("--self-test", action="store_true",
                    help="instead, prove every check fails on a deliberately broken page")
    a = ap.parse_args()
    if not a.self_test and not (a.base and a.artifacts):
        ap.error("--base and --artifacts are required (or --self-test)")
    started = time.time()
    try:
        if a.self_test:
            self_test()
        else:
            os.makedirs(a.artifacts, exist_ok=True)
            for old in glob.glob(os.path.join(a.artifacts, "*-desktop.png")) + glob.glob(
                    os.path.join(a.artifacts, "*-phone.png")):
                os.remove(old)
            run(a.base.rstrip("/"), a.artifacts)
    except Exception as e:  # a crash is one failed check, never a silent pass
        check("the browser run completed", False, f"{type(e).__name__}: {e}")
    passed = sum(ok for _, ok in results)
    print(f"browser e2e: {passed} checks passed, {len(results) - passed} failed "
          f"({time.time() - started:.1f}s)")
    return 0 if results and passed == len(results) else 1


# --- proof that the checks can fail ------------------------------------------------------------
BROKEN_PAGE = f"""<!doctype html><html><head><title>broken</title>
<script type="application/ld+json">{{"name": "unterminated</script></head><body>
<h1>one</h1><h1>two</h1><div>Vow of <b>Agent{MARK}</b> &amp; more</div>
<img src="/missing.png"><svg role="img" width="5" height="5"><rect width="5" height="5"/></svg>
<script>console.error("boom")</script>
<a href="/missing">m</a><a href="https://example.com/">e</a><a href="#nowhere">n</a>
<pre>{"x" * 300}</pre>
<table style="display:block;overflow-x:auto;width:300px"><tr><td style="white-space:nowrap">{html.escape(NOTE)} #0 {"y" * 80}</td></tr></table>
<svg class="chart" width="300" height="100"><desc>3 report-ins shown</desc><circle cx="10" cy="10" r="2"/><circle cx="10" cy="30" r="2"/><circle cx="10" cy="50" r="2"/></svg>
<footer>no scope here</footer>
<!-- {"padding " * 13000} -->
</body></html>"""
# Each must fail on BROKEN_PAGE.
MUST_FAIL = ["the HTML document is at most 100 KB", "(desktop): no console errors",
             "(desktop): no failed sub-resource loads", "<html lang> is set", "viewport meta with width=device-width",
             "exactly one <h1>", "one <main> landmark", "every <img> has alt text", "every image loaded",
             "every svg[role=img] has an accessible name", "the footer states the whole scope statement",
             "user text is escaped", "every JSON-LD block parses as JSON", "the HTML-ish agent name is shown as text",
             "in-page link #nowhere has a target", "no horizontal scrolling", "no external links",
             "no broken links", "the navigation links", "the home page links", "fits its column",
             "is shown in full", "keeps its 3 report-ins apart", "the site stylesheet is applied"]


def self_test():
    """Serve BROKEN_PAGE on loopback and check that every check of a page fails on it."""
    import contextlib, io, tempfile, threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    root = tempfile.mkdtemp(prefix="browse-self-test-")
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write(BROKEN_PAGE)

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kw):
            super().__init__(*args, directory=root, **kw)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    outer, inner = list(results), []
    results[:] = []
    try:
        with contextlib.redirect_stdout(io.StringIO()) as log:
            h, links = httpx.Client(timeout=30), {}
            driver = start_browser()
            try:
                visit(driver, h, base, "broken", "/", root, {"k": "A scope sentence."}, {"/"}, links,
                      shows_notes={"/": 1})
            finally:
                driver.quit()
            check_links(h, base, {base}, links)
        inner = list(results)
    finally:
        results[:] = outer
        srv.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    for want in MUST_FAIL:
        hits = [ok for name, ok in inner if want in name]
        check(f"self-test: '{want}' fails on a broken page", hits and not any(hits), log.getvalue()[-2000:])
    check("self-test: the status check passes on a served page",
          any(ok and name.endswith("the browser got 200 text/html") for name, ok in inner), log.getvalue()[-2000:])


def run(base, artifacts):
    h = httpx.Client(timeout=30, follow_redirects=False)
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    card = h.get(base + "/?format=json").json()
    ref_scope = card.get("scope", {})
    check("the service card carries the four-sentence scope statement",
          isinstance(ref_scope, dict) and len(ref_scope) == 4, ref_scope)
    origins = {origin}
    if card.get("base_url"):
        origins.add("{0.scheme}://{0.netloc}".format(urlsplit(card["base_url"])))

    vows = create_state(h, base)
    pages = [("home", "/"), ("catalog", "/catalog"), ("library", "/library"), ("library-METER", "/library/METER"),
             ("pubkey", "/pubkey"), ("vows", "/vows")]
    for label in ("marked", "plain"):
        if label in vows:
            vid = vows[label]
            pages += [(f"vow-{label}", f"/vow/{vid}"), (f"vow-{label}-chain", f"/vow/{vid}/chain"),
                      (f"vow-{label}-reading", f"/vow/{vid}/reading")]
    pages.append(("lost", "/lost"))
    # The quest board, and the page of a quest a sworn vow claimed.
    claimed = claim_a_quest(h, base)
    pages.append(("munus", "/munus"))
    if claimed:
        pages.append(("munus-quest", f"/munus/{claimed[0]}"))
    # Pages on which the marked agent name must be shown, as text.
    shows_agent = {"/vows"} | ({f"/vow/{vows['marked']}"} if "marked" in vows else set())
    # Pages that must name a claimant vow.
    shows_claim = {f"/munus/{claimed[0]}": claimed[1]} if claimed else {}
    # The vow page lists its newest report-ins (at most 50), each with its note.
    shows_notes = {f"/vow/{vows['marked']}": min(REPORT_INS, 50)} if "marked" in vows else {}
    # The sections the navigation links, each page checked like the rest.
    pages += [("registry", "/registry"), ("reputation", "/reputation")]

    driver = start_browser()
    links = {}  # absolute URL without fragment -> first page it was seen on
    try:
        drain_logs(driver)
        queue, seen = list(pages), set()
        while queue:
            slug, path = queue.pop(0)
            if path in seen:
                continue
            seen.add(path)
            found = visit(driver, h, base, slug, path, artifacts, ref_scope, shows_agent, links,
                          shows_claim, shows_notes)
            if path == "/library":
                docs = sorted({urlsplit(u).path for u in found
                               if re.fullmatch(r"/library/[A-Za-z0-9_-]+", urlsplit(u).path)})
                check("/library links at least one document page, METER among them",
                      "/library/METER" in docs, docs)
                queue[0:0] = [("library-" + d.rsplit("/", 1)[1], d) for d in docs if d not in seen]
    finally:
        driver.quit()

    check_links(h, base, origins, links)


def visit(driver, h, base, slug, path, artifacts, ref_scope, shows_agent, links, shows_claim=None,
          shows_notes=None):
    """Every check of one page; returns the absolute URLs it links to. `shows_notes` maps the
    pages with a report-in table to the number of notes it lists."""
    url = base + path
    # The document as the browser asks for it: its size.
    r = h.get(url, headers={"accept": BROWSER_ACCEPT})
    check(f"{path}: the HTML document is at most 100 KB ({len(r.content)} bytes)",
          r.status_code != 200 or len(r.content) <= MAX_HTML, len(r.content))

    found, ok = [], False
    for size, width, height, mobile in SIZES:
        set_size(driver, width, height, mobile)
        drain_logs(driver)
        try:
            load(driver, url)
        except WebDriverException as e:
            check(f"{path} ({size}): the browser loads it", False, str(e).splitlines()[0])
            continue
        console, events = drain_logs(driver)
        doc, failed = network_outcome(events, url)
        status = doc.get("status") if doc else None
        mime = doc.get("mimeType") if doc else None
        if size == "desktop":
            ok = check(f"{path}: the browser got 200 text/html", status == 200 and mime == "text/html",
                       f"{status} {mime}")
        severe = [e.get("message", "") for e in console if e.get("level") == "SEVERE"]
        check(f"{path} ({size}): no console errors", not severe, severe[:5])
        check(f"{path} ({size}): no failed sub-resource loads", not failed, failed[:5])
        shot = os.path.join(artifacts, f"{slug}-{size}.png")
        n = screenshot(driver, shot, width)
        check(f"{path} ({size}): full-page screenshot {os.path.basename(shot)}", n > 1000, n)
        if not ok:
            return found
        d = driver.execute_script(DOM_PROBE, MARK, NOTE)
        if mobile:
            check(f"{path} (phone): no horizontal scrolling at {width}px",
                  d["scrollWidth"] <= d["clientWidth"] + 1,
                  f"scrollWidth {d['scrollWidth']}; widest: {d['overflow'][:3]}")
            continue
        found = [u for _, u in d["links"]]
        check(f"{path}: the site stylesheet is applied", d["styled"])
        accessibility(path, d)
        footer = norm(d["footer"])
        missing = [k for k, v in ref_scope.items() if norm(v) not in footer]
        check(f"{path}: the footer states the whole scope statement", ref_scope and not missing,
              f"missing {missing}; footer: {footer[:200]}")
        twin = h.get(url, params={"format": "json"})
        if twin.status_code == 200 and twin.headers.get("content-type", "").startswith("application/json"):
            scope = twin.json().get("scope") if isinstance(twin.json(), dict) else None
            check(f"{path}: the JSON twin carries the same scope", scope is None or scope == ref_scope, scope)
        check(f"{path}: user text is escaped (no injected element, no script ran)",
              not d["injected"] and d["pwned"] is None, f"{d['injected'][:3]} pwned={d['pwned']}")
        check(f"{path}: every JSON-LD block parses as JSON", not d["ldBad"], d["ldBad"][:2])
        if path in shows_agent:
            check(f"{path}: the HTML-ish agent name is shown as text", AGENT in d["text"],
                  f"{AGENT!r} not in page text")
        if path in (shows_claim or {}):
            vid = shows_claim[path]
            check(f"{path}: the claimed quest names its claimant vow {vid}",
                  vid in d["text"] or any(urlsplit(u).path == f"/vow/{vid}" for _, u in d["links"]),
                  d["text"][:300])
        people_see(path, width, d, shows_notes or {})
        ids = set(d["ids"])
        for raw, absu in d["links"]:
            if raw.startswith("#"):
                check(f"{path}: in-page link {raw} has a target", raw == "#" or raw[1:] in ids, raw)
            elif not raw.lower().startswith(("mailto:", "javascript:")):
                links.setdefault(urldefrag(absu)[0], path)
    return found


# The places a person must be able to reach from every page (the navigation) and from the home page.
SECTIONS = {"/registry": "the registry", "/munus": "the quest board", "/reputation": "the reputation record"}


def people_see(path, width, d, shows_notes):
    """What a person sees at desktop width: the navigation and the home page link every section,
    a report-in table fits its column with every note whole, a chart keeps its report-ins apart."""
    missing = [p for p in SECTIONS if p not in d["navLinks"]]
    check(f"{path}: the navigation links {', '.join(SECTIONS.values())}", not missing,
          f"missing {missing}; nav: {d['navLinks']}")
    if path == "/":
        missing = [p for p in SECTIONS if p not in d["mainLinks"]]
        check(f"/: the home page links {', '.join(SECTIONS.values())}", not missing, f"missing {missing}")
    if path in shows_notes:
        check(f"{path}: the report-in table fits its column at {width}px (no sideways scrolling)",
              not d["tablesCut"], d["tablesCut"][:3])
        want, notes = shows_notes[path], d["notes"]
        check(f"{path}: every report-in note is shown in full at {width}px ({want} notes)",
              notes["count"] == want and not notes["cut"],
              f"{notes['count']} note cells, cut off: {notes['cut'][:3]}")
    for c in d["charts"]:
        m = re.match(r"(\d+) report-ins shown", c["desc"])
        n = int(m.group(1)) if m else 0
        if n < 2:
            continue
        xs = sorted({round(x) for x in c["xs"]})
        spread = (xs[-1] - xs[0]) if xs else 0
        check(f"{path}: the trajectory chart keeps its {n} report-ins apart at {width}px",
              len(xs) >= n and spread >= c["width"] / 2,
              f"{len(xs)} distinct marker positions for {n} report-ins, spread {spread:.0f} of "
              f"{c['width']:.0f}px")


def accessibility(path, d):
    check(f"{path}: <html lang> is set", bool(d["lang"].strip()), d["lang"])
    check(f"{path}: viewport meta with width=device-width", "width=device-width" in d["viewport"], d["viewport"])
    check(f"{path}: a non-empty <title>", bool(d["title"]), d["title"])
    check(f"{path}: exactly one <h1>", d["h1"] == 1, d["h1"])
    check(f"{path}: one <main> landmark", d["main"] == 1, d["main"])
    check(f"{path}: every <img> has alt text", not d["imgNoAlt"], d["imgNoAlt"][:5])
    check(f"{path}: every image loaded", not d["imgBroken"], d["imgBroken"][:5])
    check(f"{path}: every svg[role=img] has an accessible name", not d["svgNoName"], d["svgNoName"][:3])


def check_links(h, base, origins, links):
    """GET every link once; same-origin ones must answer 200, external ones must be spec links."""
    broken, external = [], []
    for u, page in sorted(links.items()):
        parts = urlsplit(u)
        o = f"{parts.scheme}://{parts.netloc}"
        if o not in origins:
            if parts.hostname not in SPEC_HOSTS:
                external.append(f"{u} (on {page})")
            continue
        target = base + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            r = h.get(target, headers={"accept": BROWSER_ACCEPT})
            code = r.status_code
        except httpx.HTTPError as e:
            code = f"{type(e).__name__}"
        if code != 200:
            broken.append(f"{code} {parts.path}{'?' + parts.query if parts.query else ''} (on {page})")
    check("no external links but specification links", not external, external[:10])
    check(f"no broken links: {len(links)} distinct links all answer 200", links and not broken, broken[:20])
    for b in broken:
        print(f"      broken: {b}")


if __name__ == "__main__":
    sys.exit(main())
