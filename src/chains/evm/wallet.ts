/**
 * The operator's EVM hot wallet: it deploys the ForwarderFactory (and owns it), pays the gas of sweeps, and later
 * sends refunds and payouts. It is `KASSE_HOT_WALLET_KEY` when set, otherwise the account at HOT_WALLET_PATH of the
 * master seed (so a wallet app restoring the mnemonic shows the same account).
 */
import { mnemonicToAccount, privateKeyToAccount, type HDAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Secrets } from '../../core/secrets.ts';

/** BIP-44 path of the hot wallet when no explicit key is configured (account 0 of Ethereum's coin type). */
export const HOT_WALLET_PATH = "m/44'/60'/0'/0/0";

/** The hot-wallet account (same on every EVM chain). */
export function hotWalletAccount(secrets: Pick<Secrets, 'masterSeed' | 'hotWalletKey'>): PrivateKeyAccount | HDAccount {
  if (secrets.hotWalletKey) return privateKeyToAccount(secrets.hotWalletKey as `0x${string}`);
  return mnemonicToAccount(secrets.masterSeed, { path: HOT_WALLET_PATH });
}
