/* Kasse checkout, EVM wallets: "Pay with browser wallet" sends the exact transfer through the page's EIP-1193
   provider (window.ethereum); "Pay by signature" has the wallet sign an EIP-3009 TransferWithAuthorization for
   Kasse to relay (POST /p/<id>/gasless); "Authorize with wallet" (a held payment) signs an EIP-3009
   ReceiveWithAuthorization for the escrow's collector (POST /p/<id>/hold). On the subscription page, "Set up
   automatic payment" has the wallet sign the permit and the terms Kasse offers (POST …/grant/offer, then …/grant),
   and "Turn off" the revoke. The buttons stay hidden without a wallet. Loaded after pay.js, whose window.kassePage
   it uses (onRender, say, text: the words in the page's language). Progressive enhancement only; no dependencies. */
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), not a module: the directive applies
  'use strict';
  var d = document, w = window, page = w.kassePage;
  if (!page) return;

  function $(s, el) { return (el || d).querySelector(s); }
  function $$(s, el) { return Array.prototype.slice.call((el || d).querySelectorAll(s)); }

  page.onRender(() => {
    if (w.ethereum) $$('[data-wallet],[data-gasless],[data-hold]').forEach((b) => { b.hidden = false; });
  });
  if (w.ethereum) $$('[data-grant][data-family="evm"],[data-revoke][data-family="evm"]').forEach((b) => { b.hidden = false; });
  if ($('[data-grant-pending]')) setTimeout(() => { location.reload(); }, 3000);

  function eth(method, params) { return w.ethereum.request({ method: method, params: params || [] }); }
  function connect(chain) {
    var from;
    return eth('eth_requestAccounts').then((a) => { from = a[0]; return eth('eth_chainId'); })
      .then((c) => c === chain ? null : eth('wallet_switchEthereumChain', [{ chainId: chain }]))
      .then(() => from);
  }
  function failed(b, err) {
    var p = $('[data-wallet-error]');
    if (p) p.textContent = (err && err.message) || page.text.walletFailed;
    b.disabled = false;
  }
  function walletPay(b) {
    var ds = b.dataset;
    b.disabled = true;
    connect(ds.chain).then((from) => {
      var tx = { from: from, to: ds.to, value: ds.value };
      if (ds.data) tx.data = ds.data;
      return eth('eth_sendTransaction', [tx]);
    }).then(() => { page.say(page.text.walletSent); }, (err) => { failed(b, err); });
  }

  /* Pay by signature: EIP-3009 TransferWithAuthorization, relayed by Kasse (POST /p/<id>/gasless). */
  function word(hex, i) { return parseInt(hex.substr(i * 64, 64), 16); }
  function abiString(hex, head) {
    var at = word(hex, head) / 32, len = word(hex, at), bytes = new Uint8Array(len);
    for (let i = 0; i < len; i++) bytes[i] = parseInt(hex.substr((at + 1) * 64 + i * 2, 2), 16);
    return new TextDecoder().decode(bytes);
  }
  function call(to, data) { return eth('eth_call', [{ to: to, data: data }, 'latest']).then((r) => r.slice(2)); }
  function domain(token, chain) {
    var base = { chainId: parseInt(chain, 16), verifyingContract: token };
    return call(token, '0x84b0196e').then((r) => { base.name = abiString(r, 1); base.version = abiString(r, 2); return base; }, () => Promise.all([call(token, '0x06fdde03'), call(token, '0x54fd4d50')]).then((r) => { base.name = abiString(r[0], 0); base.version = abiString(r[1], 0); return base; }));
  }
  function gaslessPay(b) {
    var ds = b.dataset, from, nonce = '0x';
    crypto.getRandomValues(new Uint8Array(32)).forEach((x) => { nonce += (x + 256).toString(16).slice(1); });
    var msg;
    b.disabled = true;
    connect(ds.chain).then((f) => { from = f; return domain(ds.token, ds.chain); }).then((dom) => {
      msg = { from: from, to: ds.to, value: ds.value, validAfter: '0', validBefore: ds.validBefore, nonce: nonce };
      var a = 'address', u = 'uint256';
      var types = {
        EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: u }, { name: 'verifyingContract', type: a }],
        TransferWithAuthorization: [{ name: 'from', type: a }, { name: 'to', type: a }, { name: 'value', type: u }, { name: 'validAfter', type: u }, { name: 'validBefore', type: u }, { name: 'nonce', type: 'bytes32' }]
      };
      return eth('eth_signTypedData_v4', [from, JSON.stringify({ types: types, primaryType: 'TransferWithAuthorization', domain: dom, message: msg })]);
    }).then((sig) => fetch(ds.gasless, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ attempt_id: ds.attempt, from: from, to: ds.to, value: ds.value, valid_after: 0, valid_before: Number(ds.validBefore), nonce: nonce, signature: sig })
      })).then((r) => r.json().then((body) => {
        if (!r.ok) throw new Error(body.error ? body.error.message : page.text.walletNotSent);
        page.say(page.text.walletSigned);
      })).catch((err) => { failed(b, err); });
  }

  /* Authorize a hold: EIP-3009 ReceiveWithAuthorization for the escrow's collector, exactly as the button says
     (its nonce commits to the hold's terms); Kasse submits it to the escrow (POST /p/<id>/hold). */
  function holdPay(b) {
    var ds = b.dataset, from;
    b.disabled = true;
    connect(ds.chain).then((f) => { from = f; return domain(ds.token, ds.chain); }).then((dom) => {
      var a = 'address', u = 'uint256';
      var types = {
        EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: u }, { name: 'verifyingContract', type: a }],
        ReceiveWithAuthorization: [{ name: 'from', type: a }, { name: 'to', type: a }, { name: 'value', type: u }, { name: 'validAfter', type: u }, { name: 'validBefore', type: u }, { name: 'nonce', type: 'bytes32' }]
      };
      var msg = { from: from, to: ds.to, value: ds.value, validAfter: '0', validBefore: ds.validBefore, nonce: ds.nonce };
      return eth('eth_signTypedData_v4', [from, JSON.stringify({ types: types, primaryType: 'ReceiveWithAuthorization', domain: dom, message: msg })]);
    }).then((sig) => fetch(ds.hold, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ attempt_id: ds.attempt, from: from, signature: sig })
      })).then((r) => r.json().then((body) => {
        if (!r.ok) throw new Error(body.error ? body.error.message : page.text.walletNotSent);
        page.say(page.text.walletAuthorizing);
      })).catch((err) => { failed(b, err); });
  }

  /* Subscriptions: grant recurring charges (permit + terms, relayed by Kasse), or revoke them. */
  function post(url, body) {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      .then((r) => r.json().then((j) => { if (!r.ok) throw new Error(j.error ? j.error.message : page.text.walletNotSent); return j; }));
  }
  function sign(from, typed) { return eth('eth_signTypedData_v4', [from, JSON.stringify(typed)]); }
  function grantFailed(b, err) {
    var p = $('[data-grant-error]', b.closest('section'));
    if (p) { p.textContent = (err && err.message) || page.text.walletFailed; p.hidden = false; }
    b.disabled = false;
  }
  function chainHex(b) { return `0x${Number(b.dataset.chainId).toString(16)}`; }
  function grant(b) {
    var ds = b.dataset, from, offer, sigs = {};
    b.disabled = true;
    connect(chainHex(b)).then((f) => { from = f; return post(ds.offer, { network: ds.network, payer: from }); })
      .then((o) => { offer = o; page.say(page.text.grantSigning); return sign(from, o.sign.permit); })
      .then((s) => { sigs.permit = s; return sign(from, offer.sign.terms); })
      .then((s) => {
        sigs.terms = s;
        sigs.permit_deadline = offer.sign.permit_deadline;
        sigs.permit_value = offer.sign.permit_value;
        return post(ds.submit, { network: ds.network, payer: from, terms: offer.terms, signatures: sigs });
      })
      .then(() => { page.say(page.text.grantSent); setTimeout(() => { location.reload(); }, 1500); })
      .catch((err) => { grantFailed(b, err); });
  }
  function revoke(b) {
    var ds = b.dataset, from;
    b.disabled = true;
    connect(chainHex(b)).then((f) => { from = f; return post(ds.offer, {}); })
      .then((o) => { page.say(page.text.revokeSigning); return sign(from, o.sign.revoke); })
      .then((s) => post(ds.submit, { signatures: { revoke: s } }))
      .then(() => { page.say(page.text.revokeSent); setTimeout(() => { location.reload(); }, 1500); })
      .catch((err) => { grantFailed(b, err); });
  }

  d.addEventListener('click', (e) => {
    var b = e.target.closest('button');
    if (!b) return;
    if (b.hasAttribute('data-wallet')) walletPay(b);
    else if (b.dataset.gasless) gaslessPay(b);
    else if (b.dataset.hold) holdPay(b);
    else if (b.hasAttribute('data-grant') && b.dataset.family === 'evm') grant(b);
    else if (b.hasAttribute('data-revoke') && b.dataset.family === 'evm') revoke(b);
  });
})();
