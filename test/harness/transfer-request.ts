/**
 * A Solana Pay transfer request read back as a wallet reads it (https://docs.solanapay.com/spec): the tests check that
 * what Kasse shows a payer parses to the recipient, amount, mint and reference it meant.
 */
export interface ParsedTransferRequest {
  recipient: string;
  amount: string | null;
  splToken: string | null;
  references: string[];
  label: string | null;
  message: string | null;
}

export function parseTransferRequestUri(uri: string): ParsedTransferRequest {
  const m = /^solana:([1-9A-HJ-NP-Za-km-z]{32,44})(?:\?(.*))?$/.exec(uri);
  if (!m) throw new Error(`not a Solana Pay transfer request: ${uri}`);
  const q = new URLSearchParams(m[2] ?? '');
  return {
    recipient: m[1]!,
    amount: q.get('amount'),
    splToken: q.get('spl-token'),
    references: q.getAll('reference'),
    label: q.get('label'),
    message: q.get('message'),
  };
}
