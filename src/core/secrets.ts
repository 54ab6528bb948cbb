/**
 * Operator secrets: the key that encrypts webhook secrets at rest, and the master seed from which deposit addresses
 * and hot wallets are derived. They come from the environment (`KASSE_SECRET_KEY`, `KASSE_MASTER_SEED`,
 * `KASSE_HOT_WALLET_KEY`) or a JSON file (`KASSE_SECRETS_FILE`); with neither, a file is generated once under the
 * data directory (mode 0600) so a development install works with no set-up. They are never logged and never
 * written to the database in clear.
 */
import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generateMnemonic } from '@scure/bip39';
import { wordlist as english } from '@scure/bip39/wordlists/english';
import { ConfigError, type Config } from '../config.ts';

export interface Secrets {
  /** 32 bytes: AES-256-GCM key for secrets at rest. */
  secretKey: Buffer;
  /** BIP-39 mnemonic: deposit addresses and (unless given) hot wallets derive from it. */
  masterSeed: string;
  /**
   * Optional explicit hot-wallet private key instead of the account derived from the seed, in a format a chain family
   * declares (`ChainFamily.hotWalletKey`; checked when Kasse opens with its families, `checkHotWalletKey`).
   */
  hotWalletKey: string | null;
}

interface SecretsFile {
  secret_key: string;
  master_seed: string;
  hot_wallet_key?: string;
}

function parseKey(hex: string, source: string): Buffer {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new ConfigError(`${source}: secret key must be 64 hex characters`);
  return Buffer.from(hex, 'hex');
}

/**
 * The operator's secrets. With `create: false` (the CLI) a missing secrets file is an error naming it rather than a
 * new file: new secrets would not decrypt what the server sealed, nor derive its deposit addresses.
 */
export function loadSecrets(
  config: Pick<Config, 'secretsFile' | 'dataDir' | 'secretsEnv'>,
  opts: { create?: boolean } = {},
): Secrets {
  const env = config.secretsEnv;
  let file: SecretsFile | null = null;
  const path = config.secretsFile ?? join(config.dataDir, 'secrets.json');
  if (existsSync(path)) {
    try {
      file = JSON.parse(readFileSync(path, 'utf8')) as SecretsFile;
    } catch {
      throw new ConfigError(`${path}: not valid JSON`);
    }
  } else if (config.secretsFile) {
    throw new ConfigError(`KASSE_SECRETS_FILE: ${path} does not exist`);
  } else if ((!env.secretKey || !env.masterSeed) && opts.create === false) {
    throw new ConfigError(
      `no secrets at ${path}. This command uses the server's secrets and makes no new ones: start Kasse once (npm start), or give it the KASSE_DATA_DIR (or KASSE_SECRETS_FILE, or KASSE_SECRET_KEY and KASSE_MASTER_SEED) the server runs with`,
    );
  } else if (!env.secretKey || !env.masterSeed) {
    file = { secret_key: randomBytes(32).toString('hex'), master_seed: generateMnemonic(english) };
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  }
  const keyHex = env.secretKey ?? file?.secret_key;
  const seed = env.masterSeed ?? file?.master_seed;
  if (!keyHex) throw new ConfigError('KASSE_SECRET_KEY is not set');
  if (!seed) throw new ConfigError('KASSE_MASTER_SEED is not set');
  if (seed.trim().split(/\s+/).length < 12)
    throw new ConfigError('KASSE_MASTER_SEED must be a BIP-39 mnemonic of 12 or more words');
  const hot = env.hotWalletKey ?? file?.hot_wallet_key ?? null;
  return { secretKey: parseKey(keyHex, 'KASSE_SECRET_KEY'), masterSeed: seed.trim(), hotWalletKey: hot };
}

/** AES-256-GCM; output `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export function encryptSecret(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

export function decryptSecret(key: Buffer, sealed: string): string {
  const [v, iv, tag, ct] = sealed.split('.');
  if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unknown sealed secret format');
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  d.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
}

/** API keys are stored only as this hash. A fast hash suffices: keys carry 192 random bits. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}
