/* Kasse checkout.js: Kasse.open(paymentIdOrCheckoutUrl) shows the hosted checkout in a modal and resolves with
   { status: 'paid' | 'expired' | 'cancelled' | 'closed' }. The result is a hint for the page only: never fulfil an
   order from it. The webhook or GET /v1/payments/{id} on your server is the truth. Docs: docs/checkout.md */
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), not a module: the directive applies
  'use strict';
  var d = document, w = window;
  var me = d.currentScript || d.querySelector('script[src*="/checkout.js"]');
  var base = new URL(me.src, location.href).origin;
  var ID = /^pay_[0-9A-Z]{36}$/;
  var current = null;

  function checkoutUrl(x) {
    if (ID.test(x)) return `${base}/p/${x}`;
    var u = new URL(x, base), m = /^\/p\/(pay_[0-9A-Z]{36})\/?$/.exec(u.pathname);
    if (u.origin !== base || !m) throw new TypeError(`Kasse.open: expected a payment id or a checkout URL of ${base}`);
    return `${base}/p/${m[1]}`;
  }

  function el(tag, style, attrs) {
    var e = d.createElement(tag);
    Object.assign(e.style, style);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  function open(target) {
    return new Promise((resolve) => {
      var url = checkoutUrl(String(target));
      if (current) current('closed');
      var before = d.activeElement, overflow = d.documentElement.style.overflow;
      var wide = w.matchMedia('(min-width: 40rem)').matches;
      var overlay = el('div', { position: 'fixed', inset: '0', zIndex: '2147483647', background: 'rgba(15,18,25,.6)', display: 'flex', alignItems: 'center', justifyContent: 'center' },
        { role: 'dialog', 'aria-modal': 'true', 'aria-label': 'Checkout' });
      var box = el('div', { position: 'relative', width: wide ? '28rem' : '100%', height: wide ? 'min(46rem, 92vh)' : '100%', background: '#fff', borderRadius: wide ? '1rem' : '0', overflow: 'hidden', boxShadow: '0 10px 40px rgba(0,0,0,.3)' });
      var frame = el('iframe', { width: '100%', height: '100%', border: '0', display: 'block' },
        { src: `${url}?embed=1&origin=${encodeURIComponent(location.origin)}`, title: 'Checkout', allow: 'clipboard-write' });
      var close = el('button', { position: 'absolute', top: '.4rem', insetInlineEnd: '.4rem', width: '2.75rem', height: '2.75rem', border: '0', borderRadius: '50%', background: '#f1f3f6', color: '#16181d', font: '600 1.5rem/1 system-ui,sans-serif', cursor: 'pointer' },
        { type: 'button', 'aria-label': 'Close checkout' });
      close.textContent = '\u00d7';

      function done(status) {
        w.removeEventListener('message', onMessage);
        d.removeEventListener('keydown', onKey, true);
        d.removeEventListener('focusin', onFocus);
        overlay.remove();
        d.documentElement.style.overflow = overflow;
        current = null;
        if (before && before.focus) before.focus();
        resolve({ status: status });
      }
      function onMessage(e) {
        var m = e.data;
        if (e.origin !== base || e.source !== frame.contentWindow || !m || m.kasse !== 1) return;
        /* The checkout names the dialog and its close button in the payer's language. */
        if (m.close) { close.setAttribute('aria-label', m.close); close.lang = overlay.lang = m.lang; overlay.setAttribute('aria-label', m.dialog); }
        if (/^(paid|expired|cancelled|closed)$/.test(m.status)) done(m.status);
      }
      /* Keep focus inside the dialog while it is open: Tab cycles between the checkout frame and the close button. */
      function onKey(e) {
        if (e.key === 'Escape') done('closed');
        else if (e.key === 'Tab' && !e.shiftKey && d.activeElement === close) { e.preventDefault(); frame.focus(); }
      }
      function onFocus(e) {
        if (!overlay.contains(e.target)) frame.focus();
      }
      close.addEventListener('click', () => { done('closed'); });
      w.addEventListener('message', onMessage);
      d.addEventListener('keydown', onKey, true);
      d.addEventListener('focusin', onFocus);
      box.appendChild(frame);
      box.appendChild(close);
      overlay.appendChild(box);
      d.body.appendChild(overlay);
      d.documentElement.style.overflow = 'hidden';
      current = done;
      frame.focus();
    });
  }

  w.Kasse = { open: open };
})();
