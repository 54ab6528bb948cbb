/**
 * Child process for the webhook benchmark: a keep-alive HTTP endpoint that acknowledges every POST after a cheap
 * plausibility check of the signature header (shape only, no HMAC, so the receiver's cost stays out of the
 * measurement). Prints one JSON line with its URL; `GET /count` answers how many deliveries it acknowledged.
 */
import { createServer } from 'node:http';

let count = 0;
let bad = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count, bad }));
    return;
  }
  req.resume();
  req.on('end', () => {
    const sig = req.headers['service-signature'];
    if (typeof sig !== 'string' || !/^t=\d+,v1=[0-9a-f]{64}$/.test(sig) || !req.headers['service-event-id']) bad++;
    else count++;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/webhooks` })}\n`);
});
