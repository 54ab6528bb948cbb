/* Kasse checkout: paying a Solana coin choice from a browser wallet found through the Wallet Standard (the way
   Phantom, Solflare, Backpack and others announce themselves to a page). Kasse builds the transaction; the wallet
   signs it. "Pay with Solana wallet" signs and sends it from the wallet; "Pay USDC by signature" only signs (Kasse's
   hot wallet pays the fee, the payer needs no SOL) and posts it to Kasse's relay. On a subscription's page the wallet
   signs the grant Kasse built (an approval of the grant's total to its delegate) or its revoke, which Kasse relays as
   fee payer. Every button stays hidden without such a wallet. Loaded after pay.js, whose window.kassePage it uses (onRender, say, text: the words in the page's language). No dependencies. */
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), not a module: the directive applies
  'use strict';
  var d = document, w = window, wallets = [], page = w.kassePage;
  var GRANTS = '[data-grant][data-family="solana"],[data-revoke][data-family="solana"]';
  if (!page) return;

  function solanaWallet(x) {
    return x && x.features && x.features['standard:connect'] && (x.features['solana:signTransaction'] || x.features['solana:signAndSendTransaction']) &&
      (x.chains || []).some((c) => String(c).indexOf('solana:') === 0);
  }
  function register(...found) {
    found.forEach((x) => { if (solanaWallet(x) && wallets.indexOf(x) < 0) wallets.push(x); });
    show();
    return () => {};
  }
  var api = Object.freeze({ register: register });
  w.addEventListener('wallet-standard:register-wallet', (e) => { try { e.detail(api); } catch { /* a broken wallet */ } });
  try { w.dispatchEvent(new CustomEvent('wallet-standard:app-ready', { detail: api })); } catch { /* old browser */ }

  function buttons() { return Array.prototype.slice.call(d.querySelectorAll(`[data-solana-pay],[data-solana-gasless],${GRANTS}`)); }
  function show() {
    buttons().forEach((b) => {
      var wallet = wallets[0];
      var can = wallet && (b.hasAttribute('data-solana-pay') ? wallet.features['solana:signAndSendTransaction'] : wallet.features['solana:signTransaction']);
      b.hidden = !can;
    });
  }
  function error(text) { var e = d.querySelector('[data-wallet-error]'); if (e) e.textContent = text; }
  function b64(bytes) { var s = ''; for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]); return btoa(s); }
  function unb64(text) { var s = atob(text), out = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i); return out; }
  function post(url, body) {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), credentials: 'same-origin' })
      .then((r) => r.json().then((j) => { if (!r.ok) throw new Error((j.error && j.error.message) || (`HTTP ${r.status}`)); return j; }));
  }

  /* Subscriptions: the wallet signs what the page's offer endpoint built; the page posts it back. */
  function grantFailed(b, err) {
    var section = b.closest('section'), p = section && section.querySelector('[data-grant-error]');
    if (p) { p.textContent = String((err && err.message) || page.text.walletFailed); p.hidden = false; }
    b.disabled = false;
  }
  function grantOrRevoke(b) {
    var wallet = wallets[0], ds = b.dataset, grant = b.hasAttribute('data-grant'), account, offer;
    b.disabled = true;
    wallet.features['standard:connect'].connect()
      .then((r) => {
        account = (r && r.accounts && r.accounts[0]) || wallet.accounts[0];
        if (!account) throw new Error(page.text.walletNoAccount);
        return post(ds.offer, grant ? { network: ds.network, payer: account.address } : {});
      })
      .then((o) => {
        offer = o;
        page.say(grant ? page.text.grantSigning : page.text.revokeSigning);
        return wallet.features['solana:signTransaction'].signTransaction({ account: account, transaction: unb64(o.sign.transaction) });
      })
      .then((out) => {
        var signatures = { transaction: b64((out[0] || out).signedTransaction) };
        return post(ds.submit, grant ? { network: ds.network, payer: account.address, terms: offer.terms, signatures: signatures } : { signatures: signatures });
      })
      .then(() => { page.say(grant ? page.text.grantSent : page.text.revokeSent); setTimeout(() => { location.reload(); }, 1500); })
      .catch((err) => { grantFailed(b, err); });
  }

  d.addEventListener('click', (e) => {
    var g = e.target && e.target.closest && e.target.closest(GRANTS);
    if (g && wallets[0]) { grantOrRevoke(g); return; }
    var b = e.target && e.target.closest && e.target.closest('[data-solana-pay],[data-solana-gasless]');
    if (!b || !wallets[0]) return;
    var wallet = wallets[0], gasless = b.hasAttribute('data-solana-gasless'), base = b.dataset.base, chain = b.dataset.cluster;
    b.disabled = true;
    error('');
    var account;
    wallet.features['standard:connect'].connect()
      .then((r) => {
        account = (r && r.accounts && r.accounts[0]) || wallet.accounts[0];
        if (!account) throw new Error(page.text.walletNoAccount);
        return post(`${base}/transaction`, { attempt_id: b.dataset.attempt, account: account.address, gasless: gasless });
      })
      .then((built) => {
        var tx = unb64(built.transaction);
        if (gasless) {
          return wallet.features['solana:signTransaction'].signTransaction({ account: account, transaction: tx, chain: chain })
            .then((out) => post(`${base}/relay`, { attempt_id: b.dataset.attempt, transaction: b64((out[0] || out).signedTransaction) }));
        }
        return wallet.features['solana:signAndSendTransaction'].signAndSendTransaction({ account: account, transaction: tx, chain: chain });
      })
      .then(() => { b.textContent = page.text.walletSending; page.say(page.text.walletSent); })
      .catch((err) => { b.disabled = false; error(String((err && err.message) || err)); });
  });

  page.onRender(show);
})();
