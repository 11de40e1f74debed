// The browser test of benchops-app's status page: loads `GET /status` in
// headless Chromium (the system's, driven by playwright-core) and checks
// what a person sees there.
//
//   node status-page.mjs URL OUTDIR [--lane NAME]... [--drift CASE]...
//                                   [--text TEXT]... [--min-charts N]
//
// URL is the server's base URL (`/status` is loaded) or the page's own URL.
// OUTDIR receives full-page screenshots (status-desktop.png,
// status-mobile.png). Each --lane must be a row of the lane table, each
// --drift a case listed as open drift, each --text (hostile markup the
// caller put into records or webhooks) must show on the page as text.
// The browser is $CHROMIUM, else /usr/bin/chromium; STATUS_PAGE_TIMEOUT_MS
// bounds the whole run (default 60000).
//
// The page is loaded three times, each in a fresh browser context:
//   desktop  1280x900, as served (its Content-Security-Policy enforced):
//            HTTP 200, HTML, a CSP without script, the title, the lane
//            rows, open drift, trend charts drawn with non-zero boxes,
//            the hostile texts shown as text, no script element or
//            inline handler in the DOM and none run (`window.__pwned`);
//   mobile   375 px wide, touch, as a phone: no horizontal overflow of the
//            document, nothing outside a scrolling table wrapper wider
//            than the screen, charts within the screen;
//   no-csp   as desktop but with the CSP bypassed, so the escaping alone
//            has to keep the hostile texts inert.
// In every pass: no console error, no uncaught page error, and no request
// to another origin (such requests are recorded and aborted).
//
// Prints one JSON line on stdout: the results, `ok` and `failures`. Exit
// status: 0 every check passed, 1 a check failed, 2 the browser could not
// be started (run `bash scripts/test-deps.sh`), 3 the run timed out.

import { mkdirSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";

const USAGE =
  "usage: node status-page.mjs URL OUTDIR [--lane NAME]... [--drift CASE]... [--text TEXT]...\n" +
  "                            [--min-charts N]";
const TITLE = "benchops status";
const MOBILE_WIDTH = 375;
/** Elements that load or embed something; the page has none. */
const EMBEDS = "img, iframe, object, embed, link, base, meta[http-equiv]";
const started = Date.now();

function say(line) {
  process.stderr.write(`status-page: ${line}\n`);
}

function finish(result, code) {
  result.ms = Date.now() - started;
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exitCode = code;
}

let args;
try {
  args = parseArgs({
    allowPositionals: true,
    options: {
      lane: { type: "string", multiple: true, default: [] },
      drift: { type: "string", multiple: true, default: [] },
      text: { type: "string", multiple: true, default: [] },
      "min-charts": { type: "string", default: "1" },
    },
  });
} catch (e) {
  say(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (args.positionals.length !== 2) {
  say(USAGE);
  process.exit(2);
}
const [urlArg, outDir] = args.positionals;
const expect = {
  lanes: args.values.lane,
  drift: args.values.drift,
  texts: args.values.text,
  minCharts: Number.parseInt(args.values["min-charts"], 10),
};
let target;
try {
  target = new URL(urlArg);
} catch {
  say(`not a URL: ${urlArg}`);
  process.exit(2);
}
if (target.pathname === "/" || target.pathname === "") {
  target = new URL("/status", target);
}
const origin = target.origin;
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const timeoutMs = Number.parseInt(process.env.STATUS_PAGE_TIMEOUT_MS || "60000", 10);

const result = { ok: false, url: target.href, failures: [] };
const fail = (what) => result.failures.push(what);

let browser;
const watchdog = setTimeout(() => {
  fail(`timed out after ${timeoutMs} ms`);
  say(`FAILED: timed out after ${timeoutMs} ms`);
  finish(result, 3);
  // Closing may hang too; the exit ends Chromium through its pipe.
  process.exit(3);
}, timeoutMs);
watchdog.unref();

let chromium;
try {
  ({ chromium } = await import("playwright-core"));
} catch (e) {
  result.error = `playwright-core is not installed: ${e.message}`;
  say(`${result.error}\nrun \`bash scripts/test-deps.sh\` (it runs \`npm ci\` in tests/browser)`);
  finish(result, 2);
  process.exit(2);
}
try {
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-extensions",
    ],
  });
} catch (e) {
  result.error = `cannot start Chromium at ${executablePath}: ${e.message.split("\n")[0]}`;
  say(`${result.error}\nrun \`bash scripts/test-deps.sh\` (or set CHROMIUM)`);
  finish(result, 2);
  process.exit(2);
}
result.browser = browser.version();
mkdirSync(outDir, { recursive: true });

/** A fresh context and page that record console errors, page errors and
 * requests, and abort any request to another origin. */
async function open(name, options) {
  const context = await browser.newContext(options);
  context.setDefaultTimeout(15000);
  const seen = { name, consoleErrors: [], pageErrors: [], foreignRequests: [], requests: 0 };
  await context.route("**/*", (route) => {
    const url = route.request().url();
    let same = false;
    try {
      same = new URL(url).origin === origin;
    } catch {}
    if (same) return route.continue();
    if (!seen.foreignRequests.includes(url)) seen.foreignRequests.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") seen.consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => seen.pageErrors.push(String(e)));
  page.on("request", (r) => {
    seen.requests += 1;
    const url = r.url();
    if (url.startsWith("data:")) return;
    let same = false;
    try {
      same = new URL(url).origin === origin;
    } catch {}
    if (!same && !seen.foreignRequests.includes(url)) seen.foreignRequests.push(url);
  });
  // `networkidle`: an `onerror` that slipped through has had its chance.
  const response = await page.goto(target.href, { waitUntil: "networkidle" });
  return { context, page, response, seen };
}

/** The checks every pass makes. */
function common(seen, response) {
  const status = response ? response.status() : null;
  if (status !== 200) fail(`${seen.name}: HTTP ${status}, not 200`);
  if (seen.consoleErrors.length) {
    fail(`${seen.name}: console errors: ${JSON.stringify(seen.consoleErrors)}`);
  }
  if (seen.pageErrors.length) {
    fail(`${seen.name}: page errors: ${JSON.stringify(seen.pageErrors)}`);
  }
  if (seen.foreignRequests.length) {
    fail(`${seen.name}: requests to other origins: ${JSON.stringify(seen.foreignRequests)}`);
  }
  return {
    status,
    requests: seen.requests,
    consoleErrors: seen.consoleErrors,
    pageErrors: seen.pageErrors,
    foreignRequests: seen.foreignRequests,
  };
}

/** Whether script ran or could run, and whether the hostile texts show as
 * text. */
async function inert(name, page) {
  const dom = await page.evaluate(([texts, embeds]) => {
    const all = [...document.querySelectorAll("*")];
    const handlers = [];
    for (const el of all) {
      for (const a of el.attributes) {
        if (a.name.toLowerCase().startsWith("on")) handlers.push(`${el.localName}[${a.name}]`);
      }
    }
    const shown = document.body.innerText;
    return {
      pwned: typeof window.__pwned === "undefined" ? null : String(window.__pwned),
      scripts: document.querySelectorAll("script").length,
      embeds: document.querySelectorAll(embeds).length,
      handlers,
      texts: texts.map((t) => ({ text: t, shown: shown.includes(t) })),
    };
  }, [expect.texts, EMBEDS]);
  if (dom.pwned !== null) fail(`${name}: script ran: window.__pwned = ${dom.pwned}`);
  if (dom.scripts) fail(`${name}: ${dom.scripts} <script> element(s) in the DOM`);
  if (dom.embeds) fail(`${name}: ${dom.embeds} element(s) of ${EMBEDS} in the DOM`);
  if (dom.handlers.length) fail(`${name}: inline event handlers: ${dom.handlers.join(", ")}`);
  for (const t of dom.texts) {
    if (!t.shown) fail(`${name}: ${JSON.stringify(t.text)} is not shown as text`);
  }
  return dom;
}

const titles = (charts) => JSON.stringify(charts.map((c) => c.title));

/** The boxes of the trend charts and of their drawn points. */
async function charts(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll("#trends svg.trend")].map((svg) => {
      const r = svg.getBoundingClientRect();
      const drawn = [...svg.querySelectorAll(".pt, polyline")].filter((el) => {
        const b = el.getBoundingClientRect();
        return b.width > 0 || b.height > 0;
      }).length;
      const style = getComputedStyle(svg);
      return {
        title: svg.querySelector("title")?.textContent ?? "",
        left: r.left,
        right: r.right,
        width: r.width,
        height: r.height,
        visible: style.visibility !== "hidden" && style.display !== "none",
        points: svg.querySelectorAll(".pt").length,
        drawn,
      };
    }),
  );
}

try {
  // ---------------------------------------------------------------- desktop
  {
    const { context, page, response, seen } = await open("desktop", {
      viewport: { width: 1280, height: 900 },
    });
    const desktop = common(seen, response);
    const headers = response ? await response.allHeaders() : {};
    desktop.contentType = headers["content-type"] ?? null;
    desktop.csp = headers["content-security-policy"] ?? null;
    if (!/^text\/html/.test(desktop.contentType ?? "")) {
      fail(`desktop: Content-Type ${desktop.contentType}, not text/html`);
    }
    if (!/default-src 'none'/.test(desktop.csp ?? "") || /script-src/.test(desktop.csp ?? "")) {
      fail(`desktop: Content-Security-Policy ${JSON.stringify(desktop.csp)} allows script`);
    }
    result.status = desktop.status;
    result.title = await page.title();
    if (result.title !== TITLE) {
      fail(`title ${JSON.stringify(result.title)}, not ${JSON.stringify(TITLE)}`);
    }
    result.heading = await page.evaluate(
      () => document.querySelector("h1")?.textContent.trim() ?? null,
    );

    result.lanes = await page.$$eval("#lanes table tbody tr", (rows) =>
      rows.map((tr) => {
        const cell = tr.cells[0];
        return (cell?.querySelector("code") ?? cell)?.textContent.trim() ?? "";
      }),
    );
    if (!result.lanes.length) fail("the lane table has no row");
    for (const lane of expect.lanes) {
      if (!result.lanes.includes(lane)) {
        fail(`lane ${lane} is not in the lane table (${result.lanes.join(", ")})`);
      }
    }
    const laneTableVisible = await page.locator("#lanes table").isVisible();
    if (!laneTableVisible) fail("the lane table is not visible");

    result.drift = await page.$$eval("#drift table tbody tr", (rows) =>
      rows.map((tr) => ({
        case: tr.cells[0]?.textContent.trim() ?? "",
        metric: tr.cells[1]?.textContent.trim() ?? "",
        standing: tr.cells[2]?.textContent.trim() ?? "",
        lanes: tr.cells[3]?.textContent.trim() ?? "",
        latest: tr.cells[5]?.textContent.trim() ?? "",
      })),
    );
    if (!result.drift.length) fail("no open drift is listed");
    for (const c of expect.drift) {
      if (!result.drift.some((d) => d.case === c)) fail(`open drift of ${c} is not listed`);
    }

    const boxes = await charts(page);
    const bad = boxes.filter((b) => !(b.width > 0 && b.height > 0 && b.visible));
    const withPoints = boxes.filter((b) => b.points > 0);
    result.charts = {
      count: boxes.length,
      withPoints: withPoints.length,
      drawnElements: boxes.reduce((n, b) => n + b.drawn, 0),
      minWidth: boxes.length ? Math.min(...boxes.map((b) => b.width)) : 0,
      minHeight: boxes.length ? Math.min(...boxes.map((b) => b.height)) : 0,
    };
    if (boxes.length < expect.minCharts) {
      fail(`${boxes.length} trend chart(s), expected at least ${expect.minCharts}`);
    }
    if (bad.length) fail(`trend charts without a visible non-zero box: ${titles(bad)}`);
    const undrawn = withPoints.filter((b) => b.drawn === 0);
    if (!withPoints.length && boxes.length) fail("no trend chart has a point");
    if (undrawn.length) fail(`trend charts whose points have empty boxes: ${titles(undrawn)}`);

    const dom = await inert("desktop", page);
    result.scriptRan = dom.pwned !== null;
    result.texts = dom.texts;
    const shot = path.join(outDir, "status-desktop.png");
    await page.screenshot({ path: shot, fullPage: true });
    result.screenshots = [shot];
    result.desktop = desktop;
    await context.close();
  }

  // ----------------------------------------------------------------- mobile
  {
    const { context, page, response, seen } = await open("mobile", {
      viewport: { width: MOBILE_WIDTH, height: 812 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    const mobile = common(seen, response);
    Object.assign(
      mobile,
      await page.evaluate(() => {
        const width = window.innerWidth;
        const outside = [];
        for (const el of document.body.querySelectorAll("*")) {
          if (el.closest(".scroll")) continue;
          const r = el.getBoundingClientRect();
          if (r.width > 0 && (r.right > width + 0.5 || r.left < -0.5)) {
            const id = el.id ? `#${el.id}` : "";
            const names = typeof el.className === "string" ? el.className.split(" ") : [];
            const cls = names.filter(Boolean).map((c) => `.${c}`).join("");
            const span = `[${Math.round(r.left)}, ${Math.round(r.right)}]`;
            outside.push(`${el.localName}${id}${cls} ${span}`);
          }
        }
        const wrappers = [...document.querySelectorAll(".scroll")].map(
          (w) => w.getBoundingClientRect().right,
        );
        return {
          innerWidth: width,
          scrollWidth: document.scrollingElement.scrollWidth,
          outside: outside.slice(0, 10),
          widestWrapperRight: wrappers.length ? Math.max(...wrappers) : 0,
        };
      }),
    );
    const width = mobile.innerWidth;
    if (width !== MOBILE_WIDTH) {
      fail(
        `mobile: the page is wider than the ${MOBILE_WIDTH} px screen: ` +
          `laid out ${width} px wide (zoomed out to fit)`,
      );
    }
    if (mobile.scrollWidth > width) {
      fail(`mobile: the document scrolls sideways: scrollWidth ${mobile.scrollWidth} > ${width}`);
    }
    if (mobile.outside.length) {
      fail(`mobile: elements beyond the screen: ${mobile.outside.join("; ")}`);
    }
    if (mobile.widestWrapperRight > width + 0.5) {
      fail(`mobile: a table wrapper ends at ${mobile.widestWrapperRight} px, beyond ${width}`);
    }
    const boxes = await charts(page);
    mobile.charts = boxes.length;
    const off = boxes.filter(
      (b) => !(b.width > 0 && b.height > 0) || b.right > width + 0.5 || b.left < -0.5,
    );
    if (off.length) fail(`mobile: trend charts not within the screen: ${titles(off)}`);
    const rows = await page.locator("#lanes table tbody tr").count();
    if (rows !== result.lanes.length) {
      fail(`mobile: ${rows} lane rows, desktop showed ${result.lanes.length}`);
    }
    const shot = path.join(outDir, "status-mobile.png");
    await page.screenshot({ path: shot, fullPage: true });
    result.screenshots.push(shot);
    result.mobile = mobile;
    await context.close();
  }

  // ----------------------------------------------------------------- no-csp
  {
    const { context, page, response, seen } = await open("no-csp", {
      viewport: { width: 1280, height: 900 },
      bypassCSP: true,
    });
    const noCsp = common(seen, response);
    const dom = await inert("no-csp", page);
    noCsp.scriptRan = dom.pwned !== null;
    noCsp.textsShown = dom.texts.filter((t) => t.shown).length;
    result.noCsp = noCsp;
    await context.close();
  }
} catch (e) {
  fail(`the browser run failed: ${e.message.split("\n")[0]}`);
}

await browser.close().catch(() => {});
clearTimeout(watchdog);
result.ok = result.failures.length === 0;
for (const f of result.failures) say(`FAILED: ${f}`);
finish(result, result.ok ? 0 : 1);
