/**
 * What tells one UTXO chain from another for Kasse: the coin (Bitcoin, Litecoin), the network (mainnet, testnet,
 * signet, regtest), and from them the address prefixes (bech32 HRP, base58 version bytes), the BIP-44 coin type
 * used in BIP-84 paths, and the BIP-21 URI scheme. Everything else (RPC, blocks, transactions, signing) is the same
 * for both coins: Litecoin Core is a fork of Bitcoin Core with the same RPC.
 */
export const COINS = ['bitcoin', 'litecoin'] as const;
export type Coin = (typeof COINS)[number];
export const CHAINS = ['mainnet', 'testnet', 'signet', 'regtest'] as const;
export type ChainKind = (typeof CHAINS)[number];

/** A network's address encodings, in the shape @scure/btc-signer takes (`BTC_NETWORK`). */
export interface AddressNetwork {
  bech32: string;
  pubKeyHash: number;
  scriptHash: number;
  wif: number;
}

export interface UtxoParams {
  coin: Coin;
  chain: ChainKind;
  /** Address encodings. */
  address: AddressNetwork;
  /** SLIP-44 coin type of BIP-84 paths: the coin's own on mainnet, 1 on every test network. */
  coinType: number;
  /** BIP-21 URI scheme. */
  scheme: string;
}

const ADDRESSES: Record<Coin, Record<ChainKind, AddressNetwork>> = {
  bitcoin: {
    mainnet: { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, wif: 0x80 },
    testnet: { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef },
    signet: { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef },
    regtest: { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, wif: 0xef },
  },
  litecoin: {
    mainnet: { bech32: 'ltc', pubKeyHash: 0x30, scriptHash: 0x32, wif: 0xb0 },
    testnet: { bech32: 'tltc', pubKeyHash: 0x6f, scriptHash: 0x3a, wif: 0xef },
    signet: { bech32: 'tltc', pubKeyHash: 0x6f, scriptHash: 0x3a, wif: 0xef },
    regtest: { bech32: 'rltc', pubKeyHash: 0x6f, scriptHash: 0x3a, wif: 0xef },
  },
};

const MAINNET_COIN_TYPE: Record<Coin, number> = { bitcoin: 0, litecoin: 2 };

export function utxoParams(coin: Coin, chain: ChainKind): UtxoParams {
  return {
    coin,
    chain,
    address: ADDRESSES[coin][chain],
    coinType: chain === 'mainnet' ? MAINNET_COIN_TYPE[coin] : 1,
    scheme: coin,
  };
}

/** Every known network's parameters (for a format check that is not told the network). */
export const ALL_PARAMS: UtxoParams[] = COINS.flatMap((coin) => CHAINS.map((chain) => utxoParams(coin, chain)));
