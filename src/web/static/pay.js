/* Kasse pages: live status, countdowns, copy buttons, the POS keypad and the modal's messages. Chain families' wallet
   scripts load after this one and use window.kassePage: onRender(fn) runs fn now and after every live update of the
   page, say(text) announces a status. Progressive enhancement only: every page works without this file. No
   dependencies. Its few words come from the page (<html data-text>: JSON in the page's language). */
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), not a module: the directive applies
  'use strict';
  var d = document, root = d.documentElement, w = window;
  var embed = root.dataset.embed === '1', parentOrigin = root.dataset.parentOrigin;
  var FINAL = ['paid', 'expired', 'cancelled', 'refunded'];
  var status = d.getElementById('k-status'), main = d.getElementById('k-main');
  var offset = 0, told = false, key = () => {}, rendered = [];
  var T = JSON.parse(root.dataset.text || '{}'), lang = T.lang || 'en';
  var nf = (o) => new Intl.NumberFormat(lang, o), two = nf({ minimumIntegerDigits: 2 }), usd = nf({ style: 'currency', currency: 'USD' });

  function $(s, el) { return (el || d).querySelector(s); }
  function $$(s, el) { return Array.prototype.slice.call((el || d).querySelectorAll(s)); }
  /* The status line is shown while the payer is to send money, and announced only when the page says the same. */
  function say(text, quiet) { if (status) { status.textContent = text; status.classList.toggle('k-sr', !!quiet); } }
  w.kassePage = { say: say, text: T, onRender: (fn) => { rendered.push(fn); if (main && main.dataset.events) fn(); } };

  /* Give the modal (checkout.js) its close button's words in the page's language. */
  if (embed && parentOrigin && w.parent !== w) w.parent.postMessage({ kasse: 1, lang: lang, close: T.close, dialog: T.dialog }, parentOrigin);

  /* Tell the merchant page (checkout.js) the outcome, once. */
  function tell(result) {
    if (!embed || !parentOrigin || told || w.parent === w) return;
    told = true;
    w.parent.postMessage({ kasse: 1, status: result }, parentOrigin);
  }

  function outcome(st, redirect) {
    if (st === 'paid') {
      if (embed) setTimeout(() => { tell('paid'); }, 1200);
      else if (redirect && /^https?:\/\//i.test(redirect)) setTimeout(() => { location.assign(redirect); }, 1500);
    } else if (st === 'expired' || st === 'cancelled') tell(st);
  }

  /* Countdowns run from the server's clock (data-now), never from the browser's. */
  function setup() {
    var t = $('time[data-expires]');
    if (t) offset = Date.parse(t.dataset.now) - Date.now();
    rendered.forEach((fn) => { fn(); });
    var f = $('[data-autofocus]');
    if (f) f.focus();
  }
  function tick() {
    $$('time[data-expires]').forEach((t) => {
      var left = Math.max(0, Math.floor((Date.parse(t.dataset.expires) - Date.now() - offset) / 1000));
      var text = `${nf({}).format(Math.floor(left / 60))}:${two.format(left % 60)}`;
      if (t.textContent !== text) t.textContent = text;
      if (!left && !t.dataset.over) { t.dataset.over = 1; say(T.over); }
    });
  }

  if (main && main.dataset.events) {
    setup();
    setInterval(tick, 1000);
    outcome(main.dataset.status, main.dataset.redirect);
    if (FINAL.indexOf(main.dataset.status) < 0 && w.EventSource) {
      const es = new EventSource(`${main.dataset.events}&fp=${encodeURIComponent(main.dataset.fp)}`);
      es.addEventListener('state', (e) => {
        var s = JSON.parse(e.data);
        if (s.fp === main.dataset.fp) return;
        main.dataset.fp = s.fp;
        main.dataset.status = s.status;
        main.innerHTML = s.html;
        setup();
        say(s.say, s.quiet);
        if (s.final) es.close();
        outcome(s.status, s.redirect);
      });
    }
  }

  function copy(b) {
    var v = b.dataset.copy, label = b.textContent;
    function done() { b.textContent = T.copied; setTimeout(() => { b.textContent = label; }, 1500); }
    function fallback() {
      var r = d.createRange(), s = getSelection();
      r.selectNodeContents(b.previousElementSibling);
      s.removeAllRanges();
      s.addRange(r);
      try { if (d.execCommand('copy')) done(); } catch { /* selected: the payer copies by hand */ }
    }
    if (navigator.clipboard) navigator.clipboard.writeText(v).then(done, fallback); else fallback();
  }

  d.addEventListener('click', (e) => {
    var b = e.target.closest('button,a');
    if (!b) return;
    var ds = b.dataset;
    if (ds.copy !== undefined) copy(b);
    else if (b.hasAttribute('data-kasse-cancel') && embed) { e.preventDefault(); tell('cancelled'); }
    else if (ds.key) key(ds.key);
  });

  /* Forms: one submission at a time; the coin picker speaks JSON so errors show in place. */
  d.addEventListener('submit', (e) => {
    var f = e.target, sub = e.submitter;
    if (e.defaultPrevented) return;
    if (f.dataset.busy) { e.preventDefault(); return; }
    if (f.hasAttribute('data-enhance') && sub && sub.value && w.fetch) {
      e.preventDefault();
      f.dataset.busy = 1;
      const err = $('.k-error', f);
      const fail = (m) => { delete f.dataset.busy; if (err) err.textContent = m; };
      fetch(f.action, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: sub.value, lang: lang }) })
        .then((r) => r.json().then((body) => { if (r.ok) location.reload(); else fail(body.error.message); }))
        .catch(() => { fail(T.network); });
    } else if (f.hasAttribute('data-once')) f.dataset.busy = 1;
  });
  /* In the modal, Escape closes it like its close button. */
  d.addEventListener('keydown', (e) => { if (e.key === 'Escape') tell('closed'); });
  w.addEventListener('pageshow', () => { $$('form[data-busy]').forEach((f) => { delete f.dataset.busy; }); });

  /* POS keypad: digits shift in from the right as cents, like a card terminal. */
  var pad = $('form[data-keypad]');
  if (pad) {
    const input = $('input[name=amount]', pad), charge = $('.k-charge', pad);
    $$('.k-keypad,[data-key=clear]', pad).forEach((el) => { el.hidden = false; });
    const cents = () => Math.round(parseFloat(input.value.replace(',', '.').replace(/[^0-9.]/g, '')) * 100) || 0;
    const label = (c) => { charge.textContent = c ? T.chargeAmount.replace('{amount}', usd.format(c / 100)) : T.charge; };
    const show = (c) => {
      input.value = c ? (c / 100).toFixed(2) : '';
      label(c);
    };
    key = (k) => {
      var c = cents();
      if (k === 'back') c = Math.floor(c / 10);
      else if (k === 'clear') c = 0;
      else if (c < 1e8) c = c * 10 ** k.length + Number(k);
      show(c);
    };
    input.addEventListener('input', () => { label(cents()); });
    /* Charging nothing says so instead of doing nothing. */
    pad.addEventListener('submit', (e) => {
      if (cents() > 0) return;
      e.preventDefault();
      var err = $('.k-error', pad);
      if (err) err.textContent = T.enterFirst;
      input.focus();
    });
  }
})();
