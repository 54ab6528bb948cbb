// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// @title AuthCaptureEscrow
/// @notice Hold and capture for ERC-20 payments, written from the published interface of the commerce-payments
/// protocol (v1.1: fees submitted as an amount): the same functions, events, errors, `PaymentInfo` struct and
/// payment-info hash, so that clients which sign for the canonical deployment (x402's `auth-capture` scheme) work
/// against this contract once it is placed at the canonical address on a local node.
///
/// The payer's signed authorization names a `PaymentInfo`; its `operator` alone moves the payment on:
///   authorize  payer → escrow, at most `maxAmount`, before `preApprovalExpiry`; the amount becomes capturable
///   capture    escrow → receiver (minus a fee within [minFeeBps, maxFeeBps] of the amount), before
///              `authorizationExpiry`, repeatable up to what is capturable
///   void       all that is still capturable → payer, any time
///   charge     authorize and capture in one step
///   refund     captured money → payer again, before `refundExpiry`, at most what was captured and not refunded
/// and the payer alone may `reclaim` what is still capturable from `authorizationExpiry` on.
///
/// Invariants: for every payment, captured + voided + reclaimed ≤ authorized ≤ maxAmount, and refunded ≤ captured;
/// a payment is collected (authorized or charged) at most once. Money sits in one token store per operator (a
/// contract this escrow deploys with CREATE2 on first use), so one operator's payments never pay another's.
/// Every state-changing entry point is non-reentrant (transient storage), and state is written before any token
/// moves; the amount a collector brings in is measured on the store's balance, not taken on trust.
///
/// Placement: no constructor and no immutables, so the runtime code works unchanged at any address
/// (`hardhat_setCode` at the canonical one); token stores are derived from `address(this)`.
contract AuthCaptureEscrow is ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    /// @notice Everything a payer agrees to; its hash identifies the payment.
    struct PaymentInfo {
        address operator;
        address payer;
        address receiver;
        address token;
        uint120 maxAmount;
        uint48 preApprovalExpiry;
        uint48 authorizationExpiry;
        uint48 refundExpiry;
        uint16 minFeeBps;
        uint16 maxFeeBps;
        address feeReceiver;
        uint256 salt;
    }

    struct PaymentState {
        bool hasCollectedPayment;
        uint120 capturableAmount;
        uint120 refundableAmount;
    }

    bytes32 public constant PAYMENT_INFO_TYPEHASH = PaymentInfoHash.TYPEHASH;

    uint16 private constant BPS = 10_000;

    mapping(bytes32 paymentInfoHash => PaymentState) public paymentState;

    event PaymentAuthorized(
        bytes32 indexed paymentInfoHash, PaymentInfo paymentInfo, uint256 amount, address tokenCollector
    );
    event PaymentCharged(
        bytes32 indexed paymentInfoHash,
        PaymentInfo paymentInfo,
        uint256 amount,
        address tokenCollector,
        uint256 feeAmount,
        address feeReceiver
    );
    event PaymentCaptured(bytes32 indexed paymentInfoHash, uint256 amount, uint256 feeAmount, address feeReceiver);
    event PaymentVoided(bytes32 indexed paymentInfoHash, uint256 amount);
    event PaymentReclaimed(bytes32 indexed paymentInfoHash, uint256 amount);
    event PaymentRefunded(bytes32 indexed paymentInfoHash, uint256 amount, address tokenCollector);
    event TokenStoreCreated(address indexed operator, address tokenStore);

    error InvalidSender(address sender, address expected);
    error ZeroAmount();
    error AmountOverflow(uint256 amount, uint256 limit);
    error ExceedsMaxAmount(uint256 amount, uint256 maxAmount);
    error AfterPreApprovalExpiry(uint48 timestamp, uint48 expiry);
    error InvalidExpiries(uint48 preApproval, uint48 authorization, uint48 refund);
    error FeeBpsOverflow(uint16 feeBps);
    error InvalidFeeBpsRange(uint16 minFeeBps, uint16 maxFeeBps);
    error FeeAmountOutOfRange(uint256 feeAmount, uint256 minFee, uint256 maxFee);
    error ZeroFeeReceiver();
    error InvalidFeeReceiver(address attempted, address expected);
    error InvalidCollectorForOperation();
    error TokenCollectionFailed();
    error PaymentAlreadyCollected(bytes32 paymentInfoHash);
    error AfterAuthorizationExpiry(uint48 timestamp, uint48 expiry);
    error InsufficientAuthorization(bytes32 paymentInfoHash, uint256 authorizedAmount, uint256 requestedAmount);
    error ZeroAuthorization(bytes32 paymentInfoHash);
    error BeforeAuthorizationExpiry(uint48 timestamp, uint48 expiry);
    error AfterRefundExpiry(uint48 timestamp, uint48 expiry);
    error RefundExceedsCapture(uint256 refund, uint256 captured);

    modifier onlySender(address expected) {
        if (msg.sender != expected) revert InvalidSender(msg.sender, expected);
        _;
    }

    modifier validAmount(uint256 amount) {
        if (amount == 0) revert ZeroAmount();
        if (amount > type(uint120).max) revert AmountOverflow(amount, type(uint120).max);
        _;
    }

    /// @notice Collects `amount` from the payer and pays it out at once (receiver and fee).
    function charge(
        PaymentInfo calldata paymentInfo,
        uint256 amount,
        address tokenCollector,
        bytes calldata collectorData,
        uint256 feeAmount,
        address feeReceiver
    ) external nonReentrant onlySender(paymentInfo.operator) validAmount(amount) {
        _checkCollectable(paymentInfo, amount);
        _checkFee(paymentInfo, amount, feeAmount, feeReceiver);
        bytes32 id = getHash(paymentInfo);
        if (paymentState[id].hasCollectedPayment) revert PaymentAlreadyCollected(id);
        paymentState[id] = PaymentState(true, 0, uint120(amount));
        emit PaymentCharged(id, paymentInfo, amount, tokenCollector, feeAmount, feeReceiver);
        _collect(paymentInfo, amount, tokenCollector, collectorData, ITokenCollector.CollectorType.Payment);
        _payOut(paymentInfo, amount, feeAmount, feeReceiver);
    }

    /// @notice Collects `amount` from the payer into the operator's token store, capturable until
    /// `authorizationExpiry`.
    function authorize(
        PaymentInfo calldata paymentInfo,
        uint256 amount,
        address tokenCollector,
        bytes calldata collectorData
    ) external nonReentrant onlySender(paymentInfo.operator) validAmount(amount) {
        _checkCollectable(paymentInfo, amount);
        bytes32 id = getHash(paymentInfo);
        if (paymentState[id].hasCollectedPayment) revert PaymentAlreadyCollected(id);
        paymentState[id] = PaymentState(true, uint120(amount), 0);
        emit PaymentAuthorized(id, paymentInfo, amount, tokenCollector);
        _collect(paymentInfo, amount, tokenCollector, collectorData, ITokenCollector.CollectorType.Payment);
    }

    /// @notice Pays `amount` of what is capturable to the receiver, `feeAmount` of it to `feeReceiver`.
    function capture(PaymentInfo calldata paymentInfo, uint256 amount, uint256 feeAmount, address feeReceiver)
        external
        nonReentrant
        onlySender(paymentInfo.operator)
        validAmount(amount)
    {
        _checkFee(paymentInfo, amount, feeAmount, feeReceiver);
        if (block.timestamp >= paymentInfo.authorizationExpiry) {
            revert AfterAuthorizationExpiry(uint48(block.timestamp), paymentInfo.authorizationExpiry);
        }
        bytes32 id = getHash(paymentInfo);
        PaymentState memory state = paymentState[id];
        if (amount > state.capturableAmount) revert InsufficientAuthorization(id, state.capturableAmount, amount);
        unchecked {
            state.capturableAmount -= uint120(amount);
        }
        // Cannot overflow: capturable + refundable never exceeds the authorized amount, itself a uint120.
        state.refundableAmount += uint120(amount);
        paymentState[id] = state;
        emit PaymentCaptured(id, amount, feeAmount, feeReceiver);
        _payOut(paymentInfo, amount, feeAmount, feeReceiver);
    }

    /// @notice Returns everything still capturable to the payer; the operator may void at any time.
    function void(PaymentInfo calldata paymentInfo) external nonReentrant onlySender(paymentInfo.operator) {
        bytes32 id = getHash(paymentInfo);
        uint256 amount = _releaseCapturable(id);
        emit PaymentVoided(id, amount);
        _send(paymentInfo.operator, paymentInfo.token, paymentInfo.payer, amount);
    }

    /// @notice The payer takes back everything still capturable, from `authorizationExpiry` on.
    function reclaim(PaymentInfo calldata paymentInfo) external nonReentrant onlySender(paymentInfo.payer) {
        if (block.timestamp < paymentInfo.authorizationExpiry) {
            revert BeforeAuthorizationExpiry(uint48(block.timestamp), paymentInfo.authorizationExpiry);
        }
        bytes32 id = getHash(paymentInfo);
        uint256 amount = _releaseCapturable(id);
        emit PaymentReclaimed(id, amount);
        _send(paymentInfo.operator, paymentInfo.token, paymentInfo.payer, amount);
    }

    /// @notice Pays `amount` of captured money back to the payer, brought in by a refund collector (for
    /// OperatorRefundCollector: from the operator's own balance, by its allowance).
    function refund(
        PaymentInfo calldata paymentInfo,
        uint256 amount,
        address tokenCollector,
        bytes calldata collectorData
    ) external nonReentrant onlySender(paymentInfo.operator) validAmount(amount) {
        if (block.timestamp >= paymentInfo.refundExpiry) {
            revert AfterRefundExpiry(uint48(block.timestamp), paymentInfo.refundExpiry);
        }
        bytes32 id = getHash(paymentInfo);
        uint120 refundable = paymentState[id].refundableAmount;
        if (amount > refundable) revert RefundExceedsCapture(amount, refundable);
        paymentState[id].refundableAmount = refundable - uint120(amount);
        emit PaymentRefunded(id, amount, tokenCollector);
        _collect(paymentInfo, amount, tokenCollector, collectorData, ITokenCollector.CollectorType.Refund);
        _send(paymentInfo.operator, paymentInfo.token, paymentInfo.payer, amount);
    }

    /// @notice The payment's identifier on this chain and at this address.
    function getHash(PaymentInfo calldata paymentInfo) public view returns (bytes32) {
        return PaymentInfoHash.hash(paymentInfo, address(this));
    }

    /// @notice Where `operator`'s payments are held (deployed on its first payout).
    function getTokenStore(address operator) public view returns (address) {
        return Create2.computeAddress(_storeSalt(operator), keccak256(type(TokenStore).creationCode));
    }

    function _checkCollectable(PaymentInfo calldata p, uint256 amount) private view {
        if (amount > p.maxAmount) revert ExceedsMaxAmount(amount, p.maxAmount);
        if (block.timestamp >= p.preApprovalExpiry) {
            revert AfterPreApprovalExpiry(uint48(block.timestamp), p.preApprovalExpiry);
        }
        if (p.preApprovalExpiry > p.authorizationExpiry || p.authorizationExpiry > p.refundExpiry) {
            revert InvalidExpiries(p.preApprovalExpiry, p.authorizationExpiry, p.refundExpiry);
        }
        if (p.maxFeeBps > BPS) revert FeeBpsOverflow(p.maxFeeBps);
        if (p.minFeeBps > p.maxFeeBps) revert InvalidFeeBpsRange(p.minFeeBps, p.maxFeeBps);
    }

    /// @dev The fee is an amount within [amount × minFeeBps, amount × maxFeeBps] / 10,000 (both rounded down), to
    /// the payment's fee receiver, or to any non-zero one when the payment left it open.
    function _checkFee(PaymentInfo calldata p, uint256 amount, uint256 feeAmount, address feeReceiver) private pure {
        uint256 minFee = amount * p.minFeeBps / BPS;
        uint256 maxFee = amount * p.maxFeeBps / BPS;
        if (feeAmount < minFee || feeAmount > maxFee) revert FeeAmountOutOfRange(feeAmount, minFee, maxFee);
        if (feeAmount > 0 && feeReceiver == address(0)) revert ZeroFeeReceiver();
        if (p.feeReceiver != address(0) && p.feeReceiver != feeReceiver) {
            revert InvalidFeeReceiver(feeReceiver, p.feeReceiver);
        }
    }

    function _releaseCapturable(bytes32 id) private returns (uint256 amount) {
        amount = paymentState[id].capturableAmount;
        if (amount == 0) revert ZeroAuthorization(id);
        paymentState[id].capturableAmount = 0;
    }

    /// @dev Has `collector` bring `amount` into the operator's store and checks on the store's balance that it did.
    function _collect(
        PaymentInfo calldata p,
        uint256 amount,
        address collector,
        bytes calldata collectorData,
        ITokenCollector.CollectorType kind
    ) private {
        if (ITokenCollector(collector).collectorType() != kind) revert InvalidCollectorForOperation();
        address store = getTokenStore(p.operator);
        uint256 before = IERC20(p.token).balanceOf(store);
        ITokenCollector(collector).collectTokens(p, store, amount, collectorData);
        if (IERC20(p.token).balanceOf(store) != before + amount) revert TokenCollectionFailed();
    }

    function _payOut(PaymentInfo calldata p, uint256 amount, uint256 feeAmount, address feeReceiver) private {
        if (feeAmount > 0) _send(p.operator, p.token, feeReceiver, feeAmount);
        if (amount > feeAmount) _send(p.operator, p.token, p.receiver, amount - feeAmount);
    }

    /// @dev Pays from `operator`'s token store, deploying the store first if this is its first payout.
    function _send(address operator, address token, address to, uint256 amount) private {
        address store = getTokenStore(operator);
        if (store.code.length == 0) {
            new TokenStore{salt: _storeSalt(operator)}();
            emit TokenStoreCreated(operator, store);
        }
        TokenStore(store).sendTokens(token, to, amount);
    }

    function _storeSalt(address operator) private pure returns (bytes32) {
        return bytes32(bytes20(operator));
    }
}

/// @title TokenStore
/// @notice Holds one operator's escrowed tokens; only the escrow that deployed it can move them.
contract TokenStore {
    using SafeERC20 for IERC20;

    address public immutable authCaptureEscrow;

    error OnlyAuthCaptureEscrow();

    constructor() {
        authCaptureEscrow = msg.sender;
    }

    function sendTokens(address token, address recipient, uint256 amount) external returns (bool) {
        if (msg.sender != authCaptureEscrow) revert OnlyAuthCaptureEscrow();
        IERC20(token).safeTransfer(recipient, amount);
        return true;
    }
}

/// @notice What the escrow asks of a token collector.
interface ITokenCollector {
    enum CollectorType {
        Payment,
        Refund
    }

    function collectorType() external view returns (CollectorType);

    function collectTokens(
        AuthCaptureEscrow.PaymentInfo calldata paymentInfo,
        address tokenStore,
        uint256 amount,
        bytes calldata collectorData
    ) external;
}

/// @notice The payment-info hash: keccak256(abi.encode(chainId, escrow, keccak256(abi.encode(PAYMENT_INFO_TYPEHASH,
/// paymentInfo)))). One definition for the escrow's identifier and the collectors' payer-agnostic nonce.
library PaymentInfoHash {
    bytes32 internal constant TYPEHASH = keccak256(
        "PaymentInfo(address operator,address payer,address receiver,address token,uint120 maxAmount,uint48 preApprovalExpiry,uint48 authorizationExpiry,uint48 refundExpiry,uint16 minFeeBps,uint16 maxFeeBps,address feeReceiver,uint256 salt)"
    );

    function hash(AuthCaptureEscrow.PaymentInfo memory p, address escrow) internal view returns (bytes32) {
        return keccak256(abi.encode(block.chainid, escrow, keccak256(abi.encode(TYPEHASH, p))));
    }

    /// @dev The same hash with the payer set to zero: what an ERC-3009 or Permit2 authorization takes as its nonce,
    /// so the payer can sign before the operator knows who pays.
    function payerAgnostic(AuthCaptureEscrow.PaymentInfo calldata p, address escrow) internal view returns (bytes32) {
        AuthCaptureEscrow.PaymentInfo memory copy = p;
        copy.payer = address(0);
        return hash(copy, escrow);
    }
}
