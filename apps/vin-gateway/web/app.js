// The VIN decode page. Plain script, no framework, no inline code: the page is served with a
// strict Content-Security-Policy. Everything shown that came from the user or the server is put in
// the page as text (textContent, text nodes), never parsed as HTML.
'use strict';

(() => {
  const VIN_LENGTH = 17;
  const MAX_SEGMENT_BYTES = 64;
  const MAX_BATCH = 50;
  const REQUEST_TIMEOUT_MS = 30000;
  const POLL_CLOSED_MS = 3000;
  const POLL_BUSY_MS = 1000;

  // ---- VIN rules: a mirror of apps/vin-gateway/core/vin.cc (the server stays the authority) ---

  const isAsciiSpace = (c) => c === ' ' || c === '\t' || c === '\n' || c === '\r' ||
      c === '\f' || c === '\v';

  // Trims surrounding ASCII whitespace, drops inner spaces and dashes, upper-cases a-z only.
  function normalizeVin(raw) {
    let begin = 0;
    let end = raw.length;
    while (begin < end && isAsciiSpace(raw[begin])) begin++;
    while (end > begin && isAsciiSpace(raw[end - 1])) end--;
    let out = '';
    for (let i = begin; i < end; i++) {
      const c = raw[i];
      if (c === ' ' || c === '-') continue;
      out += c >= 'a' && c <= 'z' ? c.toUpperCase() : c;
    }
    return out;
  }

  const isVinChar = (c) => /^[0-9A-HJ-NPR-Z]$/.test(c);

  // How vin.cc names a refused character: 'x' when printable ASCII, else U+XXXX.
  function describeChar(ch) {
    const cp = ch.codePointAt(0);
    if (cp >= 0x20 && cp < 0x7f) return `'${ch}'`;
    return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  }

  // The problems vin.cc reports for `raw`, same positions (1-based, code points), rules, words.
  function validateVin(raw) {
    const bytes = new TextEncoder().encode(raw).length;
    if (bytes > MAX_SEGMENT_BYTES) {
      return {
        vin: '', chars: [],
        problems: [{position: 0, rule: 'length',
          message: `A VIN has 17 characters; this input is ${bytes} bytes long.`}],
      };
    }
    const vin = normalizeVin(raw);
    const chars = Array.from(vin);
    const problems = [];
    if (chars.length === 0) {
      problems.push({position: 0, rule: 'length',
        message: 'The VIN is empty; a VIN has 17 characters.'});
      return {vin, chars, problems};
    }
    if (chars.length !== VIN_LENGTH) {
      problems.push({position: 0, rule: 'length',
        message: `A VIN has 17 characters; this one has ${chars.length}.`});
    }
    chars.forEach((ch, i) => {
      if (isVinChar(ch)) return;
      const position = i + 1;
      const message = ch === 'I' || ch === 'O' || ch === 'Q' ?
        `Position ${position} is '${ch}': I, O and Q are never used in VINs; did you mean 1 or 0?` :
        `Position ${position} is ${describeChar(ch)}, which is never used in VINs (only 0-9 and ` +
          'A-Z without I, O, Q).';
      problems.push({position, rule: 'charset', message});
    });
    return {vin, chars, problems};
  }

  // ISO 3779 check digit of a 17-character VIN, or null.
  function computeCheckDigit(vin) {
    if (vin.length !== VIN_LENGTH || !Array.from(vin).every(isVinChar)) return null;
    const weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];
    // ISO 3779 transliteration: A-H 1-8, J-N 1-5, P 7, R 9, S-Z 2-9.
    const letters = {A: 1, B: 2, C: 3, D: 4, E: 5, F: 6, G: 7, H: 8, J: 1, K: 2, L: 3, M: 4, N: 5,
      P: 7, R: 9, S: 2, T: 3, U: 4, V: 5, W: 6, X: 7, Y: 8, Z: 9};
    let total = 0;
    for (let i = 0; i < VIN_LENGTH; i++) {
      const c = vin[i];
      total += (c >= '0' && c <= '9' ? Number(c) : letters[c]) * weights[i];
    }
    const r = total % 11;
    return r === 10 ? 'X' : String(r);
  }

  // The rules, for anyone who wants to check them (the browser tests hold them against the
  // server's).
  window.VinRules = Object.freeze({normalizeVin, validateVin, computeCheckDigit});

  // ---- DOM helpers ---------------------------------------------------------------------------

  const $ = (id) => document.getElementById(id);

  // el('p', {class: 'x'}, 'text', child): children are nodes or strings (as text nodes).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'class') node.className = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function formatDate(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    return d.toLocaleString(undefined, {dateStyle: 'medium', timeStyle: 'short'});
  }

  function formatTime(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    return d.toLocaleTimeString(undefined, {hour: '2-digit', minute: '2-digit', second: '2-digit'});
  }

  const humanize = (key) => {
    const words = String(key).replace(/_/g, ' ');
    return words.charAt(0).toUpperCase() + words.slice(1);
  };

  // The VIN as one cell per character, the refused positions marked.
  function vinCells(chars, badPositions) {
    return chars.map((ch, i) => el('span', {
      class: badPositions.has(i + 1) ? 'cell bad' : 'cell',
      title: `Position ${i + 1}`,
    }, ch));
  }

  function retrySeconds(response, body) {
    const header = response && response.headers.get('Retry-After');
    const n = header !== null && header !== undefined ? Number.parseInt(header, 10) : NaN;
    if (Number.isFinite(n) && n >= 0) return n;
    if (body && Number.isFinite(body.retry_after_s)) return body.retry_after_s;
    return null;
  }

  // ---- countdowns (the message's and the status strip's) --------------------------------------

  const countdowns = new Map();  // element -> {deadline, render(seconds), shown, attached}

  // Renders at once (the node is usually put in the page right after) and every tick after.
  function startCountdown(node, seconds, render) {
    countdowns.set(node, {deadline: Date.now() + seconds * 1000, render, shown: null,
      attached: false});
    tickCountdowns();
  }

  function tickCountdowns() {
    for (const [node, c] of countdowns) {
      if (node.isConnected) {
        c.attached = true;
      } else if (c.attached) {
        countdowns.delete(node);  // replaced by a newer message
        continue;
      }
      const left = Math.max(0, Math.ceil((c.deadline - Date.now()) / 1000));
      if (left !== c.shown) {
        c.shown = left;
        node.textContent = c.render(left);
        node.dataset.seconds = String(left);
      }
    }
  }
  setInterval(tickCountdowns, 250);

  // ---- the single-VIN form -------------------------------------------------------------------

  const form = $('vin-form');
  const field = $('vin');
  const yearField = $('modelyear');
  const submit = $('decode');
  const spinner = submit.querySelector('.spinner');
  const submitLabel = submit.querySelector('.button-label');
  const count = $('vin-count');
  const charsBox = $('vin-chars');
  const fieldProblems = $('vin-problems');
  const message = $('message');
  const result = $('result');
  const help = $('help');
  const helpToggle = $('help-toggle');

  let pending = null;  // the running decode's AbortController

  // Count, per-character view and charset problems while typing (length waits for submit).
  function renderField(serverProblems) {
    const check = validateVin(field.value);
    const n = Array.from(check.vin || normalizeVin(field.value)).length;
    count.textContent = `${n} / ${VIN_LENGTH}`;
    count.className = n > VIN_LENGTH ? 'count over' : n === VIN_LENGTH ? 'count full' : 'count';
    const problems = serverProblems || check.problems;
    const charset = problems.filter((p) => p.rule === 'charset');
    charsBox.replaceChildren(...vinCells(check.chars, new Set(charset.map((p) => p.position))));
    let note = charset.map((p) => p.message).join(' ');
    if (!note && check.problems.length === 0) {
      const expected = computeCheckDigit(check.vin);
      if (expected !== null && expected !== check.vin[8]) {
        note = `Position 9 (the check digit) would be '${expected}' for this VIN; it will still ` +
          'be decoded, but double-check it.';
      }
    }
    if (fieldProblems.textContent !== note) fieldProblems.textContent = note;
    fieldProblems.className = charset.length ? 'problems bad' : 'problems';
    if (charset.length) field.setAttribute('aria-invalid', 'true');
    else field.removeAttribute('aria-invalid');
    return check;
  }

  // tone: ok | info | warn | error. parts: nodes or strings after the title.
  function showMessage(tone, title, ...parts) {
    message.className = `message ${tone}`;
    message.replaceChildren(el('strong', {class: 'message-title'}, title),
      ...parts.flat().filter((p) => p !== null && p !== undefined && p !== false));
  }

  function clearAnswer() {
    message.className = 'message';
    message.replaceChildren();
    result.replaceChildren();
  }

  function setBusy(busy) {
    submit.disabled = busy;
    spinner.hidden = !busy;
    submitLabel.textContent = busy ? 'Decoding\u2026' : 'Decode';
    result.setAttribute('aria-busy', busy ? 'true' : 'false');
  }

  // "Try again in 12 s." ticking; not announced each second (only the message around it is).
  function countdownNode(seconds, verb) {
    const node = el('span', {class: 'countdown', 'aria-live': 'off'});
    startCountdown(node, seconds, (left) => left > 0 ?
      `${verb} in ${left} s.` : 'You can try again now.');
    return node;
  }

  // What each status means for the person at the form; only VIN_INVALID says "invalid".
  const STATUS_TEXT = {
    CIRCUIT_OPEN: ['Decode temporarily unavailable',
      'the vehicle database is not responding, so decoding is paused to keep this form fast.'],
    CIRCUIT_HALF_OPEN: ['Decode recovering',
      'the vehicle database is being tested with one request before decoding resumes.'],
    CIRCUIT_RECOVERING: ['Decode recovering',
      'the vehicle database is back and traffic is being let in gradually.'],
    UPSTREAM_SLOW: ['Decode timed out',
      'the vehicle database is slow right now. Your VIN looks fine; try again in a moment.'],
    UPSTREAM_ERROR: ['Decode failed',
      'the vehicle database returned an error. Your VIN looks fine; try again in a moment.'],
    OVERLOADED: ['Too many decodes in progress', 'the gateway is busy with other decodes.'],
    RATE_LIMITED: ['Too many decodes from your address',
      'decodes from each address are limited to keep the service fair.'],
    LOCAL_OVERLOADED: ['The gateway is short of resources',
      'it cannot reach the vehicle database right now. Your VIN looks fine.'],
    UPSTREAM_LATE: ['Live decode late',
      'the vehicle database has not answered yet; its answer will refresh this copy.'],
    THROTTLED: ['Decode held back',
      'the vehicle database is refusing many decodes, so fewer are being sent. Your VIN looks fine.'],
  };

  // The words of a pause follow what the vehicle database did (the answer's upstream_problem):
  // a database that answers errors is not "not responding".
  const ERROR_TEXT = {
    CIRCUIT_OPEN: ['Decode temporarily unavailable',
      'the vehicle database is returning errors, so decoding is paused to keep this form fast.'],
    CIRCUIT_HALF_OPEN: ['Decode recovering',
      'the vehicle database was returning errors and is being tested before decoding resumes.'],
  };
  function statusText(status, body) {
    if (body && body.upstream_problem === 'errors' && ERROR_TEXT[status]) {
      return ERROR_TEXT[status];
    }
    return STATUS_TEXT[status];
  }

  // The first few problems, then how many more (a pasted paragraph has dozens).
  function problemList(problems, shown = 5) {
    const items = problems.slice(0, shown).map((p) => el('li', null, p.message));
    if (problems.length > shown) {
      items.push(el('li', {class: 'muted'}, `\u2026and ${problems.length - shown} more.`));
    }
    return el('ul', {class: 'problem-list'}, items);
  }

  function showInvalid(problems, where) {
    showMessage('error', 'This VIN is invalid.', problemList(problems),
      el('span', {class: 'status-code'}, where));
    result.replaceChildren();
  }

  // An answer from NHTSA's offline database (the gateway's fallback while vPIC cannot be asked;
  // docs/offline-decode.md): the label names the snapshot's date.
  function offlineLabel(body) {
    const date = body.offline_snapshot || 'unknown date';
    return body.status === 'OK' ? `Decoded from NHTSA's offline database of ${date}.` :
      `Decoded from NHTSA's offline database of ${date}; live decoding is paused.`;
  }

  function renderAnswer(response, body) {
    if (!body || typeof body.status !== 'string') {
      showMessage('error', 'Unexpected answer',
        `The decode service answered HTTP ${response.status} without a readable body. ` +
        'Try again in a moment.');
      result.replaceChildren();
      return;
    }
    const status = body.status;
    const code = el('span', {class: 'status-code'}, status);
    if (body.vehicle && (status === 'OK' || body.stale || body.source === 'offline')) {
      result.replaceChildren(renderCard(body));
      if (body.source === 'offline') {
        const [title, text] = statusText(status, body) || [null, null];
        showMessage('warn', offlineLabel(body), title ? ` ${title}: ${text}` : '',
          status === 'OK' ? null : code);
      } else if (body.stale) {
        const [title, text] = statusText(status, body) || ['Live decode unavailable', body.message];
        const retry = retrySeconds(null, body);
        showMessage('warn', 'Cached earlier; live refresh paused.',
          ` ${title}: ${text}`, retry ? [' ', countdownNode(retry, 'Live decode retried')] : null,
          code);
      } else {
        const mismatch = body.check_digit === 'mismatch';
        showMessage(mismatch ? 'warn' : 'ok', `Decoded ${body.vin}.`,
          body.source === 'cache' ? ' From the cache (decoded recently).' : '',
          mismatch ? ' Its check digit does not compute: compare the VIN with the vehicle.' : '');
      }
      return;
    }
    result.replaceChildren();
    if (status === 'VIN_INVALID') {
      const problems = Array.isArray(body.problems) ? body.problems : [];
      showInvalid(problems.length ? problems : [{message: body.message}], status);
      renderField(problems);
      return;
    }
    const known = statusText(status, body);
    if (known) {
      const retry = retrySeconds(response, body);
      const verb = status === 'CIRCUIT_OPEN' ? 'Next try of the vehicle database' : 'Try again';
      showMessage(status === 'UPSTREAM_ERROR' ? 'error' : 'warn', known[0],
        ` \u2014 ${known[1]} `, retry !== null ? countdownNode(retry, verb) : null, code);
      return;
    }
    showMessage('error', 'Not decoded', ` ${body.message || `HTTP ${response.status}.`}`, code);
  }

  function renderCard(body) {
    const v = body.vehicle || {};
    const title = [v.model_year, v.make, v.model].filter(Boolean).join(' ') || 'Vehicle';
    const plant = [v.plant_city, v.plant_state, v.plant_country].filter(Boolean).join(', ');
    const facts = [
      ['Make', v.make], ['Model', v.model], ['Model year', v.model_year],
      ['Body', v.body_class], ['Vehicle type', v.vehicle_type],
      ['Manufacturer', v.manufacturer], ['Plant', plant],
    ];
    const shown = new Set(['make', 'model', 'model_year', 'body_class', 'vehicle_type',
      'manufacturer', 'plant_city', 'plant_state', 'plant_country', 'vin']);
    const others = Object.keys(v).filter((k) => !shown.has(k) && String(v[k]).trim() !== '')
        .sort();
    const offline = body.source === 'offline';
    const badge = offline ? el('span', {class: 'badge warn'}, 'Offline') :
      body.stale ? el('span', {class: 'badge warn'}, 'Cached') :
      el('span', {class: body.source === 'cache' ? 'badge' : 'badge ok'},
        body.source === 'cache' ? 'From cache' : 'Live');
    const card = el('article', {class: body.stale || offline ? 'card stale' : 'card',
      'aria-labelledby': 'card-title'});
    card.append(el('div', {class: 'card-head'},
      el('div', null, el('p', {class: 'eyebrow'}, 'VIN ', el('span', {class: 'mono'}, body.vin)),
        el('h3', {id: 'card-title'}, title)),
      badge));
    if (offline) {
      card.append(el('p', {class: 'stale-label offline-label'},
        el('strong', null, offlineLabel(body))));
    }
    if (body.stale) {
      card.append(el('p', {class: 'stale-label'},
        el('strong', null, 'Cached earlier; live refresh paused'), ' \u00b7 decoded ',
        el('time', {datetime: body.fetched_at}, formatDate(body.fetched_at))));
    }
    if (body.check_digit === 'mismatch') {
      const expected = computeCheckDigit(body.vin || '');
      card.append(el('p', {class: 'check-warning', role: 'note'},
        el('strong', null, 'Check digit does not compute.'),
        ` Position 9 is '${(body.vin || '')[8] || '?'}'` +
          (expected ? `, but this VIN's check digit works out to '${expected}'.` : '.') +
          ' Some real VINs fail this check, so it was decoded anyway: compare the VIN with the ' +
          'vehicle.'));
    }
    card.append(el('dl', {class: 'facts'}, facts.map(([label, value]) => el('div', null,
      el('dt', null, label), el('dd', {class: value ? null : 'muted'}, value || '\u2014')))));
    if (others.length) {
      card.append(el('details', {class: 'more'},
        el('summary', null, `More details (${others.length} fields)`),
        el('dl', {class: 'all'}, others.map((k) => el('div', null,
          el('dt', null, humanize(k)), el('dd', null, v[k]))))));
    }
    if (!body.stale && !offline && body.fetched_at) {
      card.append(el('p', {class: 'card-foot'}, 'Decoded by the vehicle database ',
        el('time', {datetime: body.fetched_at}, formatDate(body.fetched_at)), '.'));
    }
    return card;
  }

  async function decode(vin, year) {
    const controller = new AbortController();
    pending = controller;
    setBusy(true);
    showMessage('info', `Decoding ${vin}\u2026`);
    const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
    let response = null;
    let body = null;
    try {
      const query = year ? `?modelyear=${encodeURIComponent(year)}` : '';
      response = await fetch(`/api/v1/vin/${encodeURIComponent(vin)}${query}`,
        {signal: controller.signal, headers: {Accept: 'application/json'}});
      body = await response.json().catch(() => null);
    } catch (err) {
      response = null;
    } finally {
      clearTimeout(timer);
      pending = null;
      setBusy(false);
    }
    if (response === null) {
      showMessage('error', 'Could not reach the decode service',
        ' \u2014 check your connection and try again.');
      result.replaceChildren();
    } else {
      renderAnswer(response, body);
    }
    pollStatusNow();
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (pending) return;
    field.value = normalizeVin(field.value);
    const check = renderField();
    if (check.problems.length) {
      showInvalid(check.problems, 'checked in your browser; nothing was sent');
      field.focus();
      return;
    }
    const year = yearField.value.trim();
    if (year && !/^[0-9]{4}$/.test(year)) {
      showMessage('error', 'Model year', ' must be four digits, for example 2021 (or left empty).');
      yearField.focus();
      return;
    }
    decode(check.vin, year);
  });

  field.addEventListener('input', (event) => {
    if (event.inputType === 'insertFromPaste' || event.inputType === 'insertFromDrop') {
      field.value = normalizeVin(field.value);
    }
    renderField();
  });

  $('clear').addEventListener('click', () => {
    field.value = '';
    renderField();
    if (!pending) clearAnswer();
    field.focus();
  });

  $('paste').addEventListener('click', async () => {
    field.focus();
    try {
      const text = await navigator.clipboard.readText();
      field.value = normalizeVin(text);
      renderField();
    } catch (err) {
      fieldProblems.className = 'problems';
      fieldProblems.textContent = 'This browser did not let the page read the clipboard; ' +
        'paste into the field with Ctrl+V (or a long press).';
    }
  });

  helpToggle.addEventListener('click', () => {
    const open = help.hidden;
    help.hidden = !open;
    helpToggle.setAttribute('aria-expanded', open ? 'true' : 'false');
  });

  // ---- batch ---------------------------------------------------------------------------------

  const batchForm = $('batch-form');
  const batchVins = $('batch-vins');
  const batchSubmit = $('batch-submit');
  const batchCount = $('batch-count');
  const batchMessage = $('batch-message');
  const batchResult = $('batch-result');
  let batchPending = false;

  const batchLines = () => batchVins.value.split(/\r?\n/).map((s) => s.trim()).filter(Boolean);

  function renderBatchCount() {
    const n = batchLines().length;
    batchCount.textContent = `${n} / ${MAX_BATCH}`;
    batchCount.className = n > MAX_BATCH ? 'count over' : 'count';
  }

  function showBatchMessage(tone, text) {
    batchMessage.className = `message ${tone}`;
    batchMessage.textContent = text;
  }

  const BATCH_LABEL = {
    OK: 'Decoded', VIN_INVALID: 'Invalid', CIRCUIT_OPEN: 'Paused', CIRCUIT_HALF_OPEN: 'Recovering',
    CIRCUIT_RECOVERING: 'Recovering', UPSTREAM_SLOW: 'Timed out', UPSTREAM_ERROR: 'Database error', OVERLOADED: 'Busy',
    RATE_LIMITED: 'Rate limited', LOCAL_OVERLOADED: 'Busy', UPSTREAM_LATE: 'Late', THROTTLED: 'Held back',
  };

  function batchRow(item, index, line) {
    const status = item && typeof item.status === 'string' ? item.status : 'UNKNOWN';
    const invalid = status === 'VIN_INVALID';
    const problems = invalid && Array.isArray(item.problems) ? item.problems : [];
    const bad = new Set(problems.map((p) => p.position));
    const vin = item && typeof item.vin === 'string' ? item.vin : line;
    const v = (item && item.vehicle) || {};
    let label = BATCH_LABEL[status] || status;
    let tone = status === 'OK' ? 'ok' : invalid ? 'error' : 'warn';
    const offline = item && item.source === 'offline';
    if (item && item.stale) {
      label = 'Cached';
      tone = 'warn';
    } else if (offline) {
      label = 'Offline';
      tone = 'warn';
    }
    let note;
    if (invalid) {
      note = problemList(problems, 3);
    } else if (offline) {
      note = offlineLabel(item);
    } else if (item && item.stale) {
      note = `Cached earlier; live refresh paused (decoded ${formatDate(item.fetched_at)}).`;
    } else if (status === 'OK') {
      note = item.check_digit === 'mismatch' ?
        'Check digit does not compute; compare the VIN.' : '';
    } else {
      const text = (statusText(status, item) || [null, item && item.message])[1] || '';
      note = text.charAt(0).toUpperCase() + text.slice(1);
    }
    return el('tr', {class: invalid ? 'invalid' : null},
      el('td', {class: 'num'}, String(index + 1)),
      el('td', {class: 'mono vin-cell'}, bad.size ? vinCells(Array.from(vin), bad) : vin),
      el('td', null, el('span', {class: `badge ${tone}`}, label)),
      el('td', null, [v.model_year, v.make, v.model].filter(Boolean).join(' ')),
      el('td', {class: 'note'}, note));
  }

  batchForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (batchPending) return;
    const lines = batchLines();
    if (lines.length === 0) {
      showBatchMessage('error', 'Paste at least one VIN, one per line.');
      return;
    }
    if (lines.length > MAX_BATCH) {
      showBatchMessage('error', `A batch holds up to ${MAX_BATCH} VINs; this one has ` +
        `${lines.length}. Split it and try again.`);
      return;
    }
    batchPending = true;
    batchSubmit.disabled = true;
    batchSubmit.textContent = `Decoding ${lines.length}\u2026`;
    batchResult.setAttribute('aria-busy', 'true');
    showBatchMessage('info', `Decoding ${lines.length} VIN${lines.length === 1 ? '' : 's'}\u2026`);
    let response = null;
    let body = null;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
    try {
      response = await fetch('/api/v1/vin/batch', {
        method: 'POST', signal: controller.signal,
        headers: {'Content-Type': 'application/json', Accept: 'application/json'},
        body: JSON.stringify({vins: lines}),
      });
      body = await response.json().catch(() => null);
    } catch (err) {
      response = null;
    } finally {
      clearTimeout(timer);
      batchPending = false;
      batchSubmit.disabled = false;
      batchSubmit.textContent = 'Decode batch';
      batchResult.setAttribute('aria-busy', 'false');
    }
    pollStatusNow();
    if (response === null) {
      showBatchMessage('error', 'Could not reach the decode service; try again.');
      return;
    }
    if (!body || !Array.isArray(body.results)) {
      showBatchMessage('error',
        (body && body.message) || `Batch not decoded (HTTP ${response.status}).`);
      batchResult.replaceChildren();
      return;
    }
    const tally = {ok: 0, invalid: 0, other: 0};
    body.results.forEach((r) => {
      if (r.status === 'VIN_INVALID') tally.invalid++;
      else if (r.status === 'OK' && !r.stale) tally.ok++;
      else tally.other++;
    });
    showBatchMessage(tally.invalid || tally.other ? 'warn' : 'ok',
      `${body.results.length} VINs: ${tally.ok} decoded, ${tally.invalid} invalid` +
      (tally.other ? `, ${tally.other} not decoded live right now.` : '.'));
    batchResult.replaceChildren(el('table', {class: 'batch'},
      el('caption', {class: 'visually-hidden'}, 'Batch results'),
      el('thead', null, el('tr', null, ['#', 'VIN', 'Result', 'Vehicle', 'Notes'].map(
        (h) => el('th', {scope: 'col'}, h)))),
      el('tbody', null, body.results.map((r, i) => batchRow(r, i, lines[i])))));
  });

  batchVins.addEventListener('input', renderBatchCount);
  $('batch-clear').addEventListener('click', () => {
    batchVins.value = '';
    renderBatchCount();
    if (!batchPending) {
      batchMessage.className = 'message';
      batchMessage.replaceChildren();
      batchResult.replaceChildren();
    }
    batchVins.focus();
  });

  // ---- status strip: polls /status ------------------------------------------------------------

  const stateNode = $('breaker-state');
  const detailNode = $('breaker-detail');
  const transitionsList = $('transitions');
  const transitionsCount = $('transitions-count');
  let pollTimer = null;
  let lastTransitionsKey = '';

  const STATE_TEXT = {
    CLOSED: 'Responding normally',
    HALF_OPEN: 'Testing recovery with one request',
    FORCED_OPEN: 'Paused by an operator',
    DISABLED: 'Breaker off: every decode goes to the database',
    METRICS_ONLY: 'Breaker observing only',
  };

  const CAUSE_TEXT = {
    consecutive_failures: 'after consecutive failures',
    failure_rate: 'failure rate too high',
    slow_call_rate: 'too many slow calls',
    cooldown_elapsed: 'cooldown over',
    probe_failed: 'probe failed',
    probe_timed_out: 'probe timed out',
    probes_succeeded: 'probe succeeded',
    operator: 'by an operator',
  };

  function renderStatus(body) {
    const breakers = Array.isArray(body && body.breakers) ? body.breakers : [];
    const b = breakers.find((x) => x.name === 'vpic') || breakers[0];
    if (!b) {
      renderStatusUnknown();
      return 'UNKNOWN';
    }
    const state = String(b.state);
    stateNode.textContent = state;
    stateNode.dataset.state = state;
    if (state === 'OPEN' && Number.isFinite(b.retry_after_s)) {
      const node = el('span', {class: 'countdown'});
      detailNode.replaceChildren('Not responding \u00b7 ', node);
      startCountdown(node, b.retry_after_s, (left) => left > 0 ?
        `next probe in ${left} s` : 'next decode probes it');
    } else if (state === 'CLOSED' && b.recovery && typeof b.recovery.share === 'number') {
      detailNode.textContent = 'Back; letting decodes in gradually ' +
        `(${Math.round(b.recovery.share * 100)}% now)`;
    } else {
      detailNode.textContent = STATE_TEXT[state] || (state === 'OPEN' ? 'Not responding' : '');
    }
    const transitions = Array.isArray(b.recent_transitions) ? b.recent_transitions : [];
    const key = JSON.stringify(transitions);
    if (key !== lastTransitionsKey) {
      lastTransitionsKey = key;
      transitionsCount.textContent = transitions.length ? `(${transitions.length})` : '';
      transitionsList.replaceChildren(...transitions.slice().reverse().map((t) => el('li', null,
        el('time', {datetime: t.at}, formatTime(t.at)), ' ',
        el('span', {class: 'mono'}, `${t.from} \u2192 ${t.to}`), ' ',
        el('span', {class: 'muted'}, CAUSE_TEXT[t.cause] || String(t.cause || '')))));
      if (!transitions.length) {
        transitionsList.replaceChildren(
          el('li', {class: 'muted'}, 'None since the gateway started.'));
      }
    }
    return state;
  }

  function renderStatusUnknown() {
    stateNode.textContent = 'UNKNOWN';
    stateNode.dataset.state = 'UNKNOWN';
    detailNode.textContent = 'Status unavailable';
  }

  async function pollStatus() {
    pollTimer = null;
    let state = 'UNKNOWN';
    try {
      const response = await fetch('/status', {cache: 'no-store',
        headers: {Accept: 'application/json'}});
      state = renderStatus(await response.json());
    } catch (err) {
      renderStatusUnknown();
    }
    if (pollTimer === null) {
      pollTimer = setTimeout(pollStatus, state === 'CLOSED' ? POLL_CLOSED_MS : POLL_BUSY_MS);
    }
  }

  function pollStatusNow() {
    if (pollTimer !== null) clearTimeout(pollTimer);
    pollTimer = null;
    pollStatus();
  }

  renderField();
  renderBatchCount();
  pollStatus();
})();
