/**
 * The compiled contracts (contracts/build/*.json, produced by contracts/compile.ts and committed), read once on first
 * use. Nothing here compiles: the server and the CLI run on the committed bytecode.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAbi, type Abi, type Hex } from 'viem';
import { KASSE_HOME } from '../../config.ts';

/** A compiled contract as stored under contracts/build/. */
export interface ContractArtifact {
  contractName: string;
  sourceName: string;
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
  compiler: {
    version: string;
    settings: {
      evmVersion: string;
      optimizer: { enabled: boolean; runs: number };
      metadata: { bytecodeHash: string; appendCBOR: boolean };
    };
  };
}

/** Where the committed artifacts are. */
export const BUILD_DIR = join(KASSE_HOME, 'contracts', 'build');

export type ContractName =
  | 'ForwarderFactory'
  | 'Forwarder'
  | 'TestUSDC'
  | 'Disperse'
  | 'AuthCaptureEscrow'
  | 'TokenStore'
  | 'ERC3009PaymentCollector'
  | 'OperatorRefundCollector'
  | 'SubscriptionCollector'
  | 'ReentrantToken'
  | 'ShortCollector';

const cache = new Map<ContractName, ContractArtifact>();

/** The committed artifact of `name`. */
export function artifact(name: ContractName): ContractArtifact {
  let a = cache.get(name);
  if (!a) {
    a = JSON.parse(readFileSync(join(BUILD_DIR, `${name}.json`), 'utf8')) as ContractArtifact;
    cache.set(name, a);
  }
  return a;
}

/** ABI of the forwarder factory (typed for viem's encoders). */
export const forwarderFactoryAbi = parseAbi([
  'constructor(address owner_, address treasury_)',
  'function implementation() view returns (address)',
  'function owner() view returns (address)',
  'function treasury() view returns (address)',
  'function forwarderAddress(bytes32 salt) view returns (address)',
  'function sweep(bytes32[] salts, address[] tokens)',
  'function setTreasury(address treasury_)',
  'function transferOwnership(address owner_)',
  'event ForwarderDeployed(bytes32 indexed salt, address indexed forwarder)',
  'event Swept(bytes32 indexed salt, address indexed forwarder, bool ok)',
  'event TreasuryChanged(address indexed previous, address indexed current)',
  'event OwnershipTransferred(address indexed previous, address indexed current)',
  'error NotOwner()',
  'error ZeroAddress()',
]);

/** The ERC-20 subset Kasse uses, plus TestUSDC's `mint`, EIP-3009 and EIP-2612 entry points. */
export const erc20Abi = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function approve(address spender, uint256 value) returns (bool)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function mint(address to, uint256 amount)',
  'function setBlocked(address account, bool value)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, bytes signature)',
  'function nonces(address owner) view returns (uint256)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** ABI of the Disperse contract: ERC-20 payouts in batches, a refused one reported by position. */
export const disperseAbi = parseAbi([
  'function disperseToken(address token, address[] recipients, uint256[] amounts)',
  'event Failed(uint256 indexed index)',
  'error LengthMismatch()',
  'error OutOfGas(uint256 index)',
]);

const PAYMENT_INFO =
  'struct PaymentInfo { address operator; address payer; address receiver; address token; uint120 maxAmount; uint48 preApprovalExpiry; uint48 authorizationExpiry; uint48 refundExpiry; uint16 minFeeBps; uint16 maxFeeBps; address feeReceiver; uint256 salt; }';

/**
 * ABI of AuthCaptureEscrow (the commerce-payments v1.1 interface: charge and capture take a fee amount). Every
 * state change is the operator's call except `reclaim` (the payer's).
 */
export const authCaptureEscrowAbi = parseAbi([
  PAYMENT_INFO,
  'function authorize(PaymentInfo paymentInfo, uint256 amount, address tokenCollector, bytes collectorData)',
  'function charge(PaymentInfo paymentInfo, uint256 amount, address tokenCollector, bytes collectorData, uint256 feeAmount, address feeReceiver)',
  'function capture(PaymentInfo paymentInfo, uint256 amount, uint256 feeAmount, address feeReceiver)',
  'function void(PaymentInfo paymentInfo)',
  'function reclaim(PaymentInfo paymentInfo)',
  'function refund(PaymentInfo paymentInfo, uint256 amount, address tokenCollector, bytes collectorData)',
  'function getHash(PaymentInfo paymentInfo) view returns (bytes32)',
  'function getTokenStore(address operator) view returns (address)',
  'function paymentState(bytes32 paymentInfoHash) view returns (bool hasCollectedPayment, uint120 capturableAmount, uint120 refundableAmount)',
  'function PAYMENT_INFO_TYPEHASH() view returns (bytes32)',
  'event PaymentAuthorized(bytes32 indexed paymentInfoHash, PaymentInfo paymentInfo, uint256 amount, address tokenCollector)',
  'event PaymentCharged(bytes32 indexed paymentInfoHash, PaymentInfo paymentInfo, uint256 amount, address tokenCollector, uint256 feeAmount, address feeReceiver)',
  'event PaymentCaptured(bytes32 indexed paymentInfoHash, uint256 amount, uint256 feeAmount, address feeReceiver)',
  'event PaymentVoided(bytes32 indexed paymentInfoHash, uint256 amount)',
  'event PaymentReclaimed(bytes32 indexed paymentInfoHash, uint256 amount)',
  'event PaymentRefunded(bytes32 indexed paymentInfoHash, uint256 amount, address tokenCollector)',
  'event TokenStoreCreated(address indexed operator, address tokenStore)',
  'error InvalidSender(address sender, address expected)',
  'error ZeroAmount()',
  'error AmountOverflow(uint256 amount, uint256 limit)',
  'error ExceedsMaxAmount(uint256 amount, uint256 maxAmount)',
  'error AfterPreApprovalExpiry(uint48 timestamp, uint48 expiry)',
  'error InvalidExpiries(uint48 preApproval, uint48 authorization, uint48 refund)',
  'error FeeBpsOverflow(uint16 feeBps)',
  'error InvalidFeeBpsRange(uint16 minFeeBps, uint16 maxFeeBps)',
  'error FeeAmountOutOfRange(uint256 feeAmount, uint256 minFee, uint256 maxFee)',
  'error ZeroFeeReceiver()',
  'error InvalidFeeReceiver(address attempted, address expected)',
  'error InvalidCollectorForOperation()',
  'error TokenCollectionFailed()',
  'error PaymentAlreadyCollected(bytes32 paymentInfoHash)',
  'error AfterAuthorizationExpiry(uint48 timestamp, uint48 expiry)',
  'error InsufficientAuthorization(bytes32 paymentInfoHash, uint256 authorizedAmount, uint256 requestedAmount)',
  'error ZeroAuthorization(bytes32 paymentInfoHash)',
  'error BeforeAuthorizationExpiry(uint48 timestamp, uint48 expiry)',
  'error AfterRefundExpiry(uint48 timestamp, uint48 expiry)',
  'error RefundExceedsCapture(uint256 refund, uint256 captured)',
  'error ReentrancyGuardReentrantCall()',
]);

/** ABI of the escrow's token collectors (ERC3009PaymentCollector, OperatorRefundCollector). */
export const tokenCollectorAbi = parseAbi([
  PAYMENT_INFO,
  'function authCaptureEscrow() view returns (address)',
  'function collectorType() view returns (uint8)',
  'function collectTokens(PaymentInfo paymentInfo, address tokenStore, uint256 amount, bytes collectorData)',
  'error OnlyAuthCaptureEscrow()',
]);

const TERMS =
  'struct Terms { address payer; address token; address receiver; address operator; uint256 amountPerPeriod; uint48 period; uint48 start; uint48 end; bytes32 salt; }';

/** ABI of SubscriptionCollector: grants of recurring charges, charged by the terms' operator, revoked by the payer. */
export const subscriptionCollectorAbi = parseAbi([
  TERMS,
  'struct Charge { Terms terms; uint256 amount; }',
  'function grant(Terms terms, bytes signature) returns (bytes32 id)',
  'function grantWithPermit(Terms terms, bytes signature, uint256 permitValue, uint256 permitDeadline, uint8 v, bytes32 r, bytes32 s) returns (bytes32 id)',
  'function charge(Terms terms, uint256 amount)',
  'function chargeBatch(Charge[] items) returns (uint256 charged)',
  'function revoke(Terms terms)',
  'function revokeWithSignature(Terms terms, bytes signature)',
  'function grantId(Terms terms) view returns (bytes32)',
  'function grants(bytes32 grantId) view returns (uint8 status, uint48 nextPeriod, uint48 charges, uint128 charged)',
  'function chargeError(Terms terms, uint256 amount, address charger) view returns (bytes4)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'event Granted(bytes32 indexed grantId, address indexed payer, address indexed receiver, Terms terms)',
  'event Charged(bytes32 indexed grantId, uint256 indexed period, uint256 amount)',
  'event ChargeFailed(bytes32 indexed grantId, uint256 index, bytes4 reason)',
  'event Revoked(bytes32 indexed grantId)',
  'error InvalidTerms()',
  'error InvalidSignature()',
  'error AlreadyGranted()',
  'error PermitFailed()',
  'error NotPayer()',
  'error NotOperator()',
  'error UnknownGrant()',
  'error GrantRevoked()',
  'error NotStarted()',
  'error Ended()',
  'error ZeroAmount()',
  'error ExceedsAmountPerPeriod()',
  'error AlreadyChargedThisPeriod()',
  'error TransferFailed()',
  'error ReentrancyGuardReentrantCall()',
]);
