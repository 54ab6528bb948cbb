/* Kasse pages: live status, countdowns, copy buttons, browser-wallet payments, the POS keypad and the modal's
   messages. Progressive enhancement only: every page works without this file. No dependencies. */
(function () {
  'use strict';
  var d = document, root = d.documentElement, w = window;
  var embed = root.dataset.embed === '1', parentOrigin = root.dataset.parentOrigin;
  var FINAL = ['paid', 'expired', 'cancelled', 'refunded'];
  var status = d.getElementById('k-status'), main = d.getElementById('k-main');
  var offset = 0, told = false, key = function () {};

  function $(s, el) { return (el || d).querySelector(s); }
  function $$(s, el) { return Array.prototype.slice.call((el || d).querySelectorAll(s)); }
  /* The status line is shown while the payer is to send money, and announced only when the page says the same. */
  function say(text, quiet) { if (status) { status.textContent = text; status.classList.toggle('k-sr', !!quiet); } }

  /* Tell the merchant page (checkout.js) the outcome, once. */
  function tell(result) {
    if (!embed || !parentOrigin || told || w.parent === w) return;
    told = true;
    w.parent.postMessage({ kasse: 1, status: result }, parentOrigin);
  }

  function outcome(st, redirect) {
    if (st === 'paid') {
      if (embed) setTimeout(function () { tell('paid'); }, 1200);
      else if (redirect && /^https?:\/\//i.test(redirect)) setTimeout(function () { location.assign(redirect); }, 1500);
    } else if (st === 'expired' || st === 'cancelled') tell(st);
  }

  /* Countdowns run from the server's clock (data-now), never from the browser's. */
  function setup() {
    var t = $('time[data-expires]');
    if (t) offset = Date.parse(t.dataset.now) - Date.now();
    if (w.ethereum) $$('[data-wallet],[data-gasless]').forEach(function (b) { b.hidden = false; });
    var f = $('[data-autofocus]');
    if (f) f.focus();
  }
  function tick() {
    $$('time[data-expires]').forEach(function (t) {
      var left = Math.max(0, Math.floor((Date.parse(t.dataset.expires) - Date.now() - offset) / 1000));
      var text = Math.floor(left / 60) + ':' + String(left % 60).padStart(2, '0');
      if (t.textContent !== text) t.textContent = text;
      if (!left && !t.dataset.over) { t.dataset.over = 1; say('The price hold has ended.'); }
    });
  }

  if (main && main.dataset.events) {
    setup();
    setInterval(tick, 1000);
    outcome(main.dataset.status, main.dataset.redirect);
    if (FINAL.indexOf(main.dataset.status) < 0 && w.EventSource) {
      var es = new EventSource(main.dataset.events + '&fp=' + encodeURIComponent(main.dataset.fp));
      es.addEventListener('state', function (e) {
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

  /* Browser wallets (EIP-1193). */
  function eth(method, params) { return w.ethereum.request({ method: method, params: params || [] }); }
  function connect(chain) {
    var from;
    return eth('eth_requestAccounts').then(function (a) { from = a[0]; return eth('eth_chainId'); })
      .then(function (c) { return c === chain ? null : eth('wallet_switchEthereumChain', [{ chainId: chain }]); })
      .then(function () { return from; });
  }
  function failed(b, err) {
    var p = $('[data-wallet-error]');
    if (p) p.textContent = (err && err.message) || 'The wallet did not complete the payment.';
    b.disabled = false;
  }
  function walletPay(b) {
    var ds = b.dataset;
    b.disabled = true;
    connect(ds.chain).then(function (from) {
      var tx = { from: from, to: ds.to, value: ds.value };
      if (ds.data) tx.data = ds.data;
      return eth('eth_sendTransaction', [tx]);
    }).then(function () { say('Transaction sent. Waiting for the network to see it.'); }, function (err) { failed(b, err); });
  }

  /* Pay by signature: EIP-3009 TransferWithAuthorization, relayed by Kasse (POST /p/<id>/gasless). */
  function word(hex, i) { return parseInt(hex.substr(i * 64, 64), 16); }
  function abiString(hex, head) {
    var at = word(hex, head) / 32, len = word(hex, at), bytes = new Uint8Array(len);
    for (var i = 0; i < len; i++) bytes[i] = parseInt(hex.substr((at + 1) * 64 + i * 2, 2), 16);
    return new TextDecoder().decode(bytes);
  }
  function call(to, data) { return eth('eth_call', [{ to: to, data: data }, 'latest']).then(function (r) { return r.slice(2); }); }
  function domain(token, chain) {
    var base = { chainId: parseInt(chain, 16), verifyingContract: token };
    return call(token, '0x84b0196e').then(function (r) { base.name = abiString(r, 1); base.version = abiString(r, 2); return base; }, function () {
      return Promise.all([call(token, '0x06fdde03'), call(token, '0x54fd4d50')]).then(function (r) { base.name = abiString(r[0], 0); base.version = abiString(r[1], 0); return base; });
    });
  }
  function gaslessPay(b) {
    var ds = b.dataset, from, nonce = '0x';
    crypto.getRandomValues(new Uint8Array(32)).forEach(function (x) { nonce += (x + 256).toString(16).slice(1); });
    var msg;
    b.disabled = true;
    connect(ds.chain).then(function (f) { from = f; return domain(ds.token, ds.chain); }).then(function (dom) {
      msg = { from: from, to: ds.to, value: ds.value, validAfter: '0', validBefore: ds.validBefore, nonce: nonce };
      var a = 'address', u = 'uint256';
      var types = {
        EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: u }, { name: 'verifyingContract', type: a }],
        TransferWithAuthorization: [{ name: 'from', type: a }, { name: 'to', type: a }, { name: 'value', type: u }, { name: 'validAfter', type: u }, { name: 'validBefore', type: u }, { name: 'nonce', type: 'bytes32' }]
      };
      return eth('eth_signTypedData_v4', [from, JSON.stringify({ types: types, primaryType: 'TransferWithAuthorization', domain: dom, message: msg })]);
    }).then(function (sig) {
      return fetch(ds.gasless, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ attempt_id: ds.attempt, from: from, to: ds.to, value: ds.value, valid_after: 0, valid_before: Number(ds.validBefore), nonce: nonce, signature: sig })
      });
    }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.error ? body.error.message : 'The payment could not be sent.');
        say('Signed. Kasse is sending your payment.');
      });
    }).catch(function (err) { failed(b, err); });
  }

  function copy(b) {
    var v = b.dataset.copy, label = b.textContent;
    function done() { b.textContent = 'Copied'; setTimeout(function () { b.textContent = label; }, 1500); }
    function fallback() {
      var r = d.createRange(), s = getSelection();
      r.selectNodeContents(b.previousElementSibling);
      s.removeAllRanges();
      s.addRange(r);
      try { if (d.execCommand('copy')) done(); } catch (e) { /* selected: the payer copies by hand */ }
    }
    if (navigator.clipboard) navigator.clipboard.writeText(v).then(done, fallback); else fallback();
  }

  d.addEventListener('click', function (e) {
    var b = e.target.closest('button,a');
    if (!b) return;
    var ds = b.dataset;
    if (ds.copy !== undefined) copy(b);
    else if (b.hasAttribute('data-kasse-cancel') && embed) { e.preventDefault(); tell('cancelled'); }
    else if (b.hasAttribute('data-wallet')) walletPay(b);
    else if (ds.gasless) gaslessPay(b);
    else if (ds.key) key(ds.key);
  });

  /* Forms: one submission at a time; the coin picker speaks JSON so errors show in place. */
  d.addEventListener('submit', function (e) {
    var f = e.target, sub = e.submitter;
    if (e.defaultPrevented) return;
    if (f.dataset.busy) { e.preventDefault(); return; }
    if (f.hasAttribute('data-enhance') && sub && sub.value && w.fetch) {
      e.preventDefault();
      f.dataset.busy = 1;
      var err = $('.k-error', f);
      var fail = function (m) { delete f.dataset.busy; if (err) err.textContent = m; };
      fetch(f.action, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: sub.value }) })
        .then(function (r) { return r.json().then(function (body) { if (r.ok) location.reload(); else fail(body.error.message); }); })
        .catch(function () { fail('Network error. Please try again.'); });
    } else if (f.hasAttribute('data-once')) f.dataset.busy = 1;
  });
  /* In the modal, Escape closes it like its close button. */
  d.addEventListener('keydown', function (e) { if (e.key === 'Escape') tell('closed'); });
  w.addEventListener('pageshow', function () { $$('form[data-busy]').forEach(function (f) { delete f.dataset.busy; }); });

  /* POS keypad: digits shift in from the right as cents, like a card terminal. */
  var pad = $('form[data-keypad]');
  if (pad) {
    var input = $('input[name=amount]', pad), charge = $('.k-charge', pad);
    $$('.k-keypad,[data-key=clear]', pad).forEach(function (el) { el.hidden = false; });
    var cents = function () { return Math.round(parseFloat(input.value.replace(',', '.').replace(/[^0-9.]/g, '')) * 100) || 0; };
    var show = function (c) {
      input.value = c ? (c / 100).toFixed(2) : '';
      charge.textContent = c ? 'Charge $' + (c / 100).toFixed(2) : 'Charge';
    };
    key = function (k) {
      var c = cents();
      if (k === 'back') c = Math.floor(c / 10);
      else if (k === 'clear') c = 0;
      else if (c < 1e8) c = c * Math.pow(10, k.length) + Number(k);
      show(c);
    };
    input.addEventListener('input', function () { var c = cents(); charge.textContent = c ? 'Charge $' + (c / 100).toFixed(2) : 'Charge'; });
    /* Charging nothing says so instead of doing nothing. */
    pad.addEventListener('submit', function (e) {
      if (cents() > 0) return;
      e.preventDefault();
      var err = $('.k-error', pad);
      if (err) err.textContent = 'Enter the amount to charge first.';
      input.focus();
    });
  }
})();
