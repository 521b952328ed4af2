// The VIN form in a real browser: Debian's chromium driven by playwright-core against vin-gateway
// and vpic-sim on loopback (started by run.sh, which passes their URLs). The tests run in order
// and share the two servers: the breaker is tripped last.
//
// Every wait is on a DOM condition or a server counter, never a fixed sleep. Timing bounds are
// generous (sanitizer builds may share the machine).
import {after, before, test} from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {chromium} from 'playwright-core';

const GATEWAY = required('GATEWAY_URL');
const SIM = required('SIM_URL');
const ARTIFACTS = process.env.ARTIFACT_DIR || path.join(os.tmpdir(), 'vin-web-artifacts');
const DOC_IMG = process.env.DOC_IMG_DIR || '';
const CALL_TIMEOUT_MS = Number(process.env.CALL_TIMEOUT_MS || 2000);
const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const VIEWPORT = {width: 900, height: 900};
// "Answers instantly": far below the 2 s upstream budget, with room for a loaded machine.
const INSTANT_MS = 1500;

const OK_VIN = '1FTMW1T88MFA00001';       // recorded: 2021 FORD F-150, Dearborn
const MISMATCH_VIN = 'WBA3A5C51CF256987';  // recorded: BMW 328i whose check digit fails
// Never decoded before their test (not in tests/data/vin-vectors.tsv): no stale copy stands in.
const HANG_VIN = '1HGCM82690A004352';
const TRIP_VINS = ['1G1ZT53826F109149', '2T1BURHEXJC043821', '5YJ3E1EA2KF317000'];
const OPEN_VIN = '3FA6P0H71HR100200';
const WARM_VIN = '1C6RR7LT1KS500100';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run the tests with tests/web/run.sh`);
  return value;
}

let context;
let userDataDir;

before(async () => {
  fs.mkdirSync(ARTIFACTS, {recursive: true});
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vin-web-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: VIEWPORT,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], {origin: GATEWAY});
});

after(async () => {
  await context?.close();
  if (userDataDir) fs.rmSync(userDataDir, {recursive: true, force: true});
});

// ---- helpers -----------------------------------------------------------------------------------

async function simStats() {
  const response = await fetch(`${SIM}/__control/stats`);
  return response.json();
}

async function simRequests() {
  return (await simStats()).requests_total;
}

async function setFault(fault) {
  const response = await fetch(`${SIM}/__control/faults`, {method: 'POST',
    body: JSON.stringify(fault)});
  assert.equal(response.status, 200, await response.text());
}

async function resetSim() {
  await fetch(`${SIM}/__control/reset`, {method: 'POST'});
}

async function until(predicate, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// A fresh tab on the page, recording what it requests and anything that looks like script running
// where it should not (dialogs, page errors, CSP violations).
async function openPage(viewport = VIEWPORT) {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  const seen = {requests: [], dialogs: [], errors: [], console: []};
  page.on('request', (r) => seen.requests.push(r.url()));
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  page.on('console', (m) => seen.console.push(`${m.type()}: ${m.text()}`));
  const response = await page.goto(`${GATEWAY}/`);
  // The status strip has answered once: the page's script runs.
  await page.waitForFunction(() => document.getElementById('breaker-state').dataset.state !==
    'UNKNOWN');
  return {page, seen, response};
}

const apiRequests = (seen) => seen.requests.filter((u) => u.includes('/api/v1/vin/'));

async function messageText(page) {
  return page.locator('#message').innerText();
}

// Waits until #message (or another element) contains `text`.
async function waitForText(page, selector, text, timeout = 10000) {
  await page.waitForFunction(([s, t]) => {
    const node = document.querySelector(s);
    return node !== null && node.textContent.includes(t);
  }, [selector, text], {timeout});
}

async function decode(page, vin) {
  await page.fill('#vin', vin);
  await page.click('#decode');
}

async function shot(page, name, {doc = false} = {}) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({path: file});
  if (doc && DOC_IMG) {
    fs.mkdirSync(DOC_IMG, {recursive: true});
    fs.copyFileSync(file, path.join(DOC_IMG, `${name}.png`));
  }
}

function assertNoScriptRan(seen) {
  assert.deepEqual(seen.dialogs, [], 'no dialog opened');
  assert.deepEqual(seen.errors, [], 'no script error');
  const violations = seen.console.filter((line) => /Content Security Policy/i.test(line));
  assert.deepEqual(violations, [], 'nothing tried to run inline');
}

// ---- the page itself ---------------------------------------------------------------------------

test('the page loads only from the gateway, under a strict policy, with labeled controls',
    async () => {
      const {page, seen, response} = await openPage();
      const headers = response.headers();
      assert.match(headers['content-security-policy'], /default-src 'self'/);
      assert.doesNotMatch(headers['content-security-policy'], /unsafe-inline/);
      assert.equal(headers['x-content-type-options'], 'nosniff');
      const origin = new URL(GATEWAY).origin;
      assert.ok(seen.requests.length >= 4, seen.requests.join('\n'));  // page, css, js, icon, status
      for (const url of seen.requests) assert.equal(new URL(url).origin, origin, url);
      // The VIN form is the first form; its VIN field the first text input, labeled.
      const first = await page.evaluate(() => {
        const input = document.forms[0].querySelector('input[type="text"]');
        return {formId: document.forms[0].id, id: input.id, label: input.labels[0].textContent};
      });
      assert.deepEqual(first, {formId: 'vin-form', id: 'vin',
        label: 'Vehicle Identification Number (VIN)'});
      assert.equal(await page.getAttribute('#message', 'aria-live'), 'polite');
      assert.equal(await page.getAttribute('#batch-message', 'aria-live'), 'polite');
      // Keyboard: the field is among the first few stops (skip link, transitions, field).
      const stops = [];
      for (let i = 0; i < 3 && stops.at(-1) !== 'vin'; i++) {
        await page.keyboard.press('Tab');
        stops.push(await page.evaluate(() => document.activeElement.id ||
          document.activeElement.tagName));
      }
      assert.equal(stops.at(-1), 'vin', stops.join(' > '));
      assertNoScriptRan(seen);
      await page.close();
    });

// ---- decoding ----------------------------------------------------------------------------------

test('a valid VIN decodes into a vehicle card', async () => {
  await resetSim();
  const {page, seen} = await openPage();
  const before = await simRequests();
  await decode(page, OK_VIN);
  const card = page.locator('#result .card');
  await card.waitFor();
  assert.equal(await card.locator('h3').innerText(), '2021 FORD F-150');
  const facts = await card.locator('.facts').innerText();
  for (const text of ['FORD', 'F-150', '2021', 'Pickup', 'TRUCK', 'FORD MOTOR COMPANY, USA',
    'DEARBORN, MICHIGAN, UNITED STATES (USA)']) {
    assert.ok(facts.includes(text), `${text} in ${facts}`);
  }
  // The upstream's other fields are in the details section.
  const more = card.locator('details.more');
  await more.locator('summary').click();
  assert.ok((await more.textContent()).includes('Engine model'));
  assert.equal(await card.locator('.check-warning').count(), 0);
  assert.match(await messageText(page), /Decoded 1FTMW1T88MFA00001/);
  assert.equal(await simRequests(), before + 1);
  assert.equal(apiRequests(seen).length, 1);
  await more.locator('summary').click();
  await shot(page, 'form-ok', {doc: true});
  await page.close();
});

test('a VIN with an O is flagged at its position and nothing is sent', async () => {
  const {page, seen} = await openPage();
  const before = await simRequests();
  await page.locator('#vin').pressSequentially('1FTMW1T88MFA0O001');
  const bad = page.locator('#vin-chars .cell.bad');
  await bad.waitFor();
  assert.equal(await bad.count(), 1);
  assert.equal(await bad.getAttribute('title'), 'Position 14');
  assert.equal(await bad.innerText(), 'O');
  assert.match(await page.locator('#vin-problems').innerText(),
      /Position 14 is 'O': I, O and Q are never used/);
  assert.equal(await page.getAttribute('#vin', 'aria-invalid'), 'true');
  await page.keyboard.press('Enter');
  await waitForText(page, '#message', 'This VIN is invalid.');
  assert.match(await messageText(page), /Position 14 is 'O'/);
  assert.match(await messageText(page), /nothing was sent/);
  assert.deepEqual(apiRequests(seen), []);
  assert.equal(await simRequests(), before);
  await shot(page, 'form-invalid');
  await page.close();
});

test('pasting normalizes the VIN (case, spaces, dashes) and the count follows', async () => {
  const {page} = await openPage();
  await page.evaluate(() => navigator.clipboard.writeText(' 1ftmw1t8-8mfa 00001 '));
  await page.focus('#vin');
  await page.keyboard.press('Control+V');
  await page.waitForFunction(() => document.getElementById('vin').value === '1FTMW1T88MFA00001');
  assert.equal(await page.locator('#vin-count').innerText(), '17 / 17');
  await page.click('#clear');
  assert.equal(await page.inputValue('#vin'), '');
  await page.evaluate(() => navigator.clipboard.writeText('wba3a5c5-1cf256987'));
  await page.click('#paste');
  await page.waitForFunction(() => document.getElementById('vin').value === 'WBA3A5C51CF256987');
  await page.close();
});

test('a check-digit mismatch still decodes and shows the warning', async () => {
  const {page} = await openPage();
  await decode(page, MISMATCH_VIN);
  const warning = page.locator('#result .card .check-warning');
  await warning.waitFor();
  const text = await warning.innerText();
  assert.match(text, /Check digit does not compute/);
  assert.match(text, /Position 9 is '1', but this VIN's check digit works out to '7'/);
  assert.match(await page.locator('#result .card h3').innerText(), /BMW 328i/);
  assert.doesNotMatch(await messageText(page), /invalid/i);
  await shot(page, 'form-check-digit');
  await page.close();
});

test('a VIN containing <script> is shown as text and never runs', async () => {
  const {page, seen} = await openPage();
  const payloads = ['<script>window.__xss=1</script>', '<img/src=x/onerror=alert(1)>',
    '"><svg/onload=window.__xss=3>'];
  // In the field: flagged locally, shown literally, nothing sent.
  await page.fill('#vin', payloads[0]);
  await page.click('#decode');
  await waitForText(page, '#message', 'This VIN is invalid.');
  assert.match(await messageText(page), /Position 1 is '<'/);
  assert.equal(await page.locator('#vin-chars').innerText().then((t) => t.replace(/\s/g, '')),
      '<SCRIPT>WINDOW.__XSS=1</SCRIPT>');
  assert.deepEqual(apiRequests(seen), []);
  // Through the server: the batch echoes each VIN and its problems back.
  await page.fill('#batch-vins', payloads.join('\n'));
  const answered = page.waitForResponse((r) => r.url().endsWith('/api/v1/vin/batch'));
  await page.click('#batch-submit');
  const echoed = (await (await answered).json()).results.map((r) => r.vin);
  assert.deepEqual(echoed, ['<SCRIPT>WINDOW.__XSS=1</SCRIPT>', '<IMG/SRC=X/ONERROR=ALERT(1)>',
    '"><SVG/ONLOAD=WINDOW.__XSS=3>']);
  await page.locator('#batch-result tbody tr').nth(2).waitFor();
  const cells = await page.locator('#batch-result td.vin-cell').allTextContents();
  assert.deepEqual(cells, echoed);
  const injected = await page.evaluate(() => document.querySelectorAll(
      'main script, main img, main svg, main iframe, [onerror], [onload]').length);
  assert.equal(injected, 0);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assertNoScriptRan(seen);
  await page.locator('#batch-result').scrollIntoViewIfNeeded();
  await shot(page, 'form-xss');
  await page.close();
});

test('a batch answers in a table with the invalid lines marked', async () => {
  const {page, seen} = await openPage();
  const lines = ['1GNKRHKD2GJ223195', '1FTMW1T88MFAOOO01', '  1n4bl3ap5dn508203 ', 'TOOSHORT',
    '19UUA65694A043249'];
  await page.fill('#batch-vins', lines.join('\n'));
  assert.equal(await page.locator('#batch-count').innerText(), '5 / 50');
  await page.click('#batch-submit');
  await page.locator('#batch-result tbody tr').nth(4).waitFor();
  const rows = page.locator('#batch-result tbody tr');
  assert.equal(await rows.count(), 5);
  const invalid = await page.evaluate(() => Array.from(
      document.querySelectorAll('#batch-result tbody tr'), (tr) => tr.classList.contains('invalid')));
  assert.deepEqual(invalid, [false, true, false, true, false]);
  const marked = await rows.nth(1).locator('.cell.bad').allTextContents();
  assert.deepEqual(marked, ['O', 'O', 'O']);
  assert.match(await rows.nth(3).innerText(), /this one has 8/);
  assert.match(await rows.nth(2).innerText(), /Decoded/);
  assert.match(await page.locator('#batch-message').innerText(), /5 VINs: 3 decoded, 2 invalid/);
  // More than 50 lines: refused in the page, nothing sent.
  const sent = apiRequests(seen).length;
  await page.fill('#batch-vins', Array(51).fill(OK_VIN).join('\n'));
  await page.click('#batch-submit');
  await waitForText(page, '#batch-message', 'this one has 51');
  assert.equal(apiRequests(seen).length, sent);
  await page.fill('#batch-vins', lines.join('\n'));
  await page.click('#batch-submit');
  await waitForText(page, '#batch-message', '5 VINs');
  await page.locator('#batch-result').scrollIntoViewIfNeeded();
  await shot(page, 'form-batch');
  await page.close();
});

test('each upstream problem has its own honest message, and none says "invalid"', async () => {
  const {page} = await openPage();
  const canned = {
    CIRCUIT_OPEN: [503, 12, /not responding.*in 12 s/s],
    CIRCUIT_HALF_OPEN: [503, 1, /Decode recovering.*being tested/s],
    CIRCUIT_RECOVERING: [503, 1, /Decode recovering.*back and traffic is being let in gradually/s],
    UPSTREAM_SLOW: [504, null, /Decode timed out.*slow/s],
    UPSTREAM_ERROR: [502, null, /Decode failed.*returned an error/s],
    OVERLOADED: [503, 1, /Too many decodes in progress/],
    RATE_LIMITED: [429, 3, /Too many decodes from your address.*in 3 s/s],
    UPSTREAM_LATE: [504, null, /Live decode late.*not answered yet/s],
  };
  const seenTexts = new Set();
  for (const [status, [http, retry, pattern]] of Object.entries(canned)) {
    await page.route('**/api/v1/vin/**', (route) => route.fulfill({
      status: http,
      headers: retry ? {'Retry-After': String(retry)} : {},
      contentType: 'application/json',
      body: JSON.stringify({status, message: 'server words', vin: OK_VIN, stale: false,
        ...(retry ? {retry_after_s: retry} : {})}),
    }));
    await decode(page, OK_VIN);
    await waitForText(page, '#message .status-code', status);
    const text = await messageText(page);
    assert.match(text, pattern, status);
    assert.doesNotMatch(text, /invalid/i, status);
    seenTexts.add(text.split('\n')[0]);
    await page.unroute('**/api/v1/vin/**');
  }
  assert.equal(seenTexts.size, Object.keys(canned).length, 'every message is distinct');
  await page.close();
});

test('an offline decode is labeled with the snapshot date, alone and in a batch', async () => {
  const {page} = await openPage();
  // The gateway's fallback while vPIC cannot be asked (docs/offline-decode.md): HTTP 200, the
  // reason in `status`, `source` "offline" and the snapshot's date.
  const offline = {status: 'CIRCUIT_OPEN', message: 'server words', vin: OK_VIN,
    check_digit: 'valid', source: 'offline', stale: false, offline_snapshot: '2026-02-17',
    fetched_at: '2026-02-17T00:00:00Z', upstream_codes: [0],
    vehicle: {make: 'FORD', model: 'F-150', model_year: '2021', manufacturer: 'FORD MOTOR COMPANY',
      vehicle_type: 'TRUCK', body_class: 'Pickup'}};
  await page.route('**/api/v1/vin/batch', (route) => route.fulfill({
    status: 200, contentType: 'application/json',
    body: JSON.stringify({status: 'OK', message: 'Batch answered; see each result.',
      results: [offline]}),
  }));
  await page.route('**/api/v1/vin/1*', (route) => route.fulfill({
    status: 200, contentType: 'application/json', body: JSON.stringify(offline)}));
  const label = "Decoded from NHTSA's offline database of 2026-02-17; live decoding is paused.";
  await decode(page, OK_VIN);
  const cardLabel = page.locator('#result .card .offline-label');
  await cardLabel.waitFor();
  assert.equal(await cardLabel.innerText(), label);
  assert.equal(await page.locator('#result .card .badge').innerText(), 'Offline');
  assert.equal(await page.locator('#result .card h3').innerText(), '2021 FORD F-150');
  const text = await messageText(page);
  assert.match(text, /offline database of 2026-02-17; live decoding is paused/);
  assert.doesNotMatch(text, /invalid|Cached earlier/i);
  await shot(page, 'form-offline');
  await page.fill('#batch-vins', OK_VIN);
  await page.click('#batch-submit');
  const row = page.locator('#batch-result tbody tr').first();
  await row.waitFor();
  assert.match(await row.innerText(), /Offline/);
  assert.match(await row.innerText(), /offline database of 2026-02-17; live decoding is paused/);
  await page.unroute('**/api/v1/vin/batch');
  await page.unroute('**/api/v1/vin/1*');
  await page.close();
});

test('the page fits a 375 px phone screen', async () => {
  const {page} = await openPage({width: 375, height: 812});
  await decode(page, OK_VIN);
  await page.locator('#result .card').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(overflow <= 375, `page is ${overflow} px wide`);
  const box = await page.locator('#decode').boundingBox();
  assert.ok(box.height >= 44, 'the submit button is a comfortable touch target');
  await shot(page, 'form-phone');
  await page.close();
});

// ---- the rules ----------------------------------------------------------------------------------

// Late: it decodes every valid vector VIN, and the tests above want live decodes.
test('the page\'s VIN rules give the server\'s verdicts on every test vector', async () => {
  const {page} = await openPage();
  const rows = fs.readFileSync(path.join(REPO, 'tests/data/vin-vectors.tsv'), 'utf8')
      .split('\n').slice(1).filter(Boolean)
      .map((line) => line.split('\t')[0].replace(/\\([ntr\\])/g,
          (_, c) => ({n: '\n', t: '\t', r: '\r', '\\': '\\'})[c]));
  const extras = [' 1ftmw1t88-mfa00001 ', '1FTMW1T88\tMFA00001', 'é1FTMW1T88MFA0000',
    '1FTMW1T88MFA0000\u{1F697}', 'straße', 'A'.repeat(65), 'ü'.repeat(33), '--', '\u00a0X'];
  const inputs = [...rows, ...extras];
  assert.ok(rows.length >= 280, 'the vectors file is there');
  const local = await page.evaluate((list) => list.map((raw) => {
    const check = window.VinRules.validateVin(raw);
    const expected = window.VinRules.computeCheckDigit(check.vin);
    return {vin: check.vin, problems: check.problems,
      check_digit: check.problems.length ? undefined :
        expected === check.vin[8] ? 'valid' : 'mismatch'};
  }), inputs);
  let compared = 0;
  for (let i = 0; i < inputs.length; i += 50) {
    const response = await fetch(`${GATEWAY}/api/v1/vin/batch`, {method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({vins: inputs.slice(i, i + 50)})});
    assert.equal(response.status, 200);
    const {results} = await response.json();
    results.forEach((server, k) => {
      const mine = local[i + k];
      const what = JSON.stringify(inputs[i + k]);
      if (server.status === 'VIN_INVALID') {
        assert.deepEqual(mine.problems, server.problems, what);
        if (server.vin !== undefined) assert.equal(mine.vin, server.vin, what);
      } else {
        assert.deepEqual(mine.problems, [], `${what}: the server took it (${server.status})`);
        assert.equal(mine.vin, server.vin, what);
        assert.equal(mine.check_digit, server.check_digit, what);
      }
      compared++;
    });
  }
  assert.equal(compared, inputs.length);
  await page.close();
});

// ---- failures of the vehicle database ----------------------------------------------------------

test('while vPIC hangs: one spinner, the other controls stay usable, then the slow message',
    async (t) => {
      const {page} = await openPage();
      await setFault({mode: 'hang'});
      const started = Date.now();
      await decode(page, HANG_VIN);
      await until(async () => (await simStats()).in_flight === 1, 'the upstream call to hang');
      // One spinner, on the only disabled control.
      assert.equal(await page.locator('.spinner:visible').count(), 1);
      assert.equal(await page.locator('#decode').isDisabled(), true);
      const disabled = await page.evaluate(() => Array.from(
          document.querySelectorAll('button:disabled, input:disabled, textarea:disabled'),
          (n) => n.id));
      assert.deepEqual(disabled, ['decode']);
      await shot(page, 'form-slow-pending');
      // Clear, the field, help and the batch box all work meanwhile.
      await page.click('#clear');
      assert.equal(await page.inputValue('#vin'), '');
      await page.locator('#vin').pressSequentially('1ftm');
      assert.equal(await page.inputValue('#vin'), '1ftm');
      assert.equal(await page.locator('#vin-count').innerText(), '4 / 17');
      await page.click('#help-toggle');
      assert.equal(await page.locator('#help').isVisible(), true);
      await page.click('#help-toggle');
      await page.fill('#batch-vins', OK_VIN);
      assert.equal(await page.locator('#batch-count').innerText(), '1 / 50');
      assert.equal(await page.locator('#batch-submit').isEnabled(), true);
      // The answer: the gateway's budget ran out.
      await waitForText(page, '#message', 'Decode timed out', CALL_TIMEOUT_MS + 15000);
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= CALL_TIMEOUT_MS - 100, `answered after ${elapsed} ms`);
      t.diagnostic(`UPSTREAM_SLOW shown ${elapsed} ms after the submit`);
      const text = await messageText(page);
      assert.match(text, /slow right now/);
      assert.doesNotMatch(text, /invalid/i);
      assert.equal(await page.locator('.spinner:visible').count(), 0);
      assert.equal(await page.locator('#decode').isEnabled(), true);
      await shot(page, 'form-slow');
      await page.close();
      await resetSim();
    });

test('a tripped breaker: instant open message with a countdown, OPEN strip, stale card',
    async (t) => {
      const {page, seen} = await openPage();
      // A good decode first: the hang above counted one failure, a success clears the run.
      await decode(page, WARM_VIN);
      await waitForText(page, '#message', `Decoded ${WARM_VIN}`);
      await setFault({mode: 'error', status: 503});
      // Three failures open the breaker (--failure-threshold 3); each says what happened.
      for (const vin of TRIP_VINS) {
        await decode(page, vin);
        await waitForText(page, '#message .status-code', 'UPSTREAM_ERROR');
        const text = await messageText(page);
        assert.match(text, /Decode failed.*returned an error/s);
        assert.doesNotMatch(text, /invalid/i);
      }
      // The next submit is answered at once, without reaching vPIC.
      const upstreamBefore = await simRequests();
      const started = Date.now();
      await decode(page, OPEN_VIN);
      await waitForText(page, '#message .status-code', 'CIRCUIT_OPEN');
      const elapsed = Date.now() - started;
      assert.ok(elapsed < INSTANT_MS, `answered in ${elapsed} ms`);
      t.diagnostic(`CIRCUIT_OPEN shown ${elapsed} ms after the submit`);
      assert.equal(await simRequests(), upstreamBefore);
      const text = await messageText(page);
      assert.match(text, /Decode temporarily unavailable/);
      // Opened by 503s: the words say the database returns errors, not that it is silent.
      assert.match(text, /returning errors/);
      assert.doesNotMatch(text, /invalid/i);
      // The countdown comes from Retry-After and goes down live.
      const countdown = page.locator('#message .countdown');
      const first = Number(await countdown.getAttribute('data-seconds'));
      assert.ok(first > 20 && first <= 30, `countdown starts at ${first} s`);
      assert.match(await countdown.innerText(), new RegExp(`in ${first} s`));
      await page.waitForFunction((n) => Number(
          document.querySelector('#message .countdown').dataset.seconds) < n, first);
      // The status strip shows OPEN, its own countdown, and the transition.
      await waitForText(page, '#breaker-state', 'OPEN');
      assert.equal(await page.locator('#breaker-state').innerText(), 'OPEN');
      await waitForText(page, '#breaker-detail', 'next probe in');
      await page.click('#transitions-box summary');
      await waitForText(page, '#transitions', 'CLOSED \u2192 OPEN');
      assert.match(await page.locator('#transitions').innerText(), /consecutive failures/);
      await shot(page, 'form-open', {doc: true});
      // A VIN decoded earlier (and no longer fresh) comes back stale, labeled with its date.
      const staleBefore = await simRequests();
      await decode(page, OK_VIN);
      const label = page.locator('#result .card .stale-label');
      await label.waitFor();
      assert.match(await label.innerText(), /Cached earlier; live refresh paused/);
      const date = await label.locator('time').getAttribute('datetime');
      assert.ok(Date.now() - Date.parse(date) < 10 * 60 * 1000, `decoded at ${date}`);
      assert.match(await label.locator('time').innerText(), /\d{4}/);
      assert.match(await messageText(page), /Cached earlier; live refresh paused/);
      assert.equal(await page.locator('#result .card h3').innerText(), '2021 FORD F-150');
      assert.equal(await simRequests(), staleBefore);
      assert.equal(apiRequests(seen).length, 6);
      await shot(page, 'form-stale');
      await page.close();
    });
