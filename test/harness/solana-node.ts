/** The shared Solana test node of an `npm test` run (see solana.ts): prints `{"urls":[…]}` and serves until killed. */
import { serveSolana } from './solana.ts';
import { SolanaValidator } from './solana-validator.ts';

const node = await serveSolana(new SolanaValidator(), 2);
process.stdout.write(`${JSON.stringify({ urls: node.urls })}\n`);
const stop = () => void node.stop().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
