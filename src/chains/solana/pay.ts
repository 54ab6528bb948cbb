/**
 * Solana Pay transfer requests (https://docs.solanapay.com/spec):
 *   solana:<recipient>?amount=<decimal>&spl-token=<mint>&reference=<key>&label=<text>&message=<text>
 * `amount` is in whole coins (never exponent notation), `spl-token` names the mint for a token payment (absent for
 * SOL), `reference` is a key the payer's wallet adds to the transfer instruction as a read-only account, and label
 * and message are shown by the wallet. Values are percent-encoded.
 */
import { formatUnits } from '../../core/money.ts';
import type { TokenConfig } from '../types.ts';

export interface TransferRequest {
  recipient: string;
  /** Smallest units. */
  amount: bigint;
  token: Pick<TokenConfig, 'kind' | 'contract' | 'decimals'>;
  reference?: string;
  label?: string | null;
  message?: string | null;
}

export function transferRequestUri(r: TransferRequest): string {
  const params: string[] = [`amount=${formatUnits(r.amount, r.token.decimals)}`];
  if (r.token.kind === 'spl' && r.token.contract) params.push(`spl-token=${r.token.contract}`);
  if (r.reference) params.push(`reference=${r.reference}`);
  if (r.label) params.push(`label=${encodeURIComponent(r.label)}`);
  if (r.message) params.push(`message=${encodeURIComponent(r.message)}`);
  return `solana:${r.recipient}?${params.join('&')}`;
}
