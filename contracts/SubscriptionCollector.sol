// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Permit.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";

/// @title SubscriptionCollector
/// @notice Recurring charges a payer grants once and the chain limits. The payer signs two things: an EIP-2612
/// permit letting this contract spend the token, and EIP-712 `Terms` (receiver, token, amount per period, period
/// length, start, end, the operator allowed to charge, a salt). Anyone may submit them (`grant`,
/// `grantWithPermit`); from then on the terms' operator may move at most `amountPerPeriod` of the token from the
/// payer to the terms' receiver once per period, from `start` until `end` or until the payer revokes — directly
/// (`revoke`) or by a signed `Revoke` anyone submits (`revokeWithSignature`).
///
/// Periods are counted from `start`: period n is [start + n·period, start + (n+1)·period). One charge per period,
/// of any amount up to `amountPerPeriod`; a period that passes without a charge is gone (missed periods do not add
/// up, so a late charger can never take more than one period's amount at once).
///
/// Invariants: money moves only from the terms' payer to the terms' receiver, only in the terms' token, only on
/// the operator's call; per grant, at most one charge per period and at most amountPerPeriod per charge; nothing
/// after `end` or after a revoke; the same terms are granted at most once (the grant id is the EIP-712 digest of the
/// terms, and a revoked id stays revoked), and a revoke signature names one grant id in this contract's domain.
contract SubscriptionCollector is EIP712, ReentrancyGuardTransient {
    using SafeERC20 for IERC20;

    struct Terms {
        address payer;
        address token;
        address receiver;
        address operator;
        uint256 amountPerPeriod;
        uint48 period;
        uint48 start;
        uint48 end;
        bytes32 salt;
    }

    struct Charge {
        Terms terms;
        uint256 amount;
    }

    enum Status {
        None,
        Active,
        Revoked
    }

    /// @dev One storage slot per grant.
    struct Grant {
        Status status;
        uint48 nextPeriod;
        uint48 charges;
        uint128 charged;
    }

    bytes32 public constant TERMS_TYPEHASH = keccak256(
        "Terms(address payer,address token,address receiver,address operator,uint256 amountPerPeriod,uint48 period,uint48 start,uint48 end,bytes32 salt)"
    );
    bytes32 public constant REVOKE_TYPEHASH = keccak256("Revoke(bytes32 grantId)");

    /// @notice State per grant id: status, the first period still chargeable, charges so far and their total.
    mapping(bytes32 grantId => Grant) public grants;

    event Granted(bytes32 indexed grantId, address indexed payer, address indexed receiver, Terms terms);
    event Charged(bytes32 indexed grantId, uint256 indexed period, uint256 amount);
    /// @notice `chargeBatch` item `index` was not charged, for the reason given (an error selector of this contract).
    event ChargeFailed(bytes32 indexed grantId, uint256 index, bytes4 reason);
    event Revoked(bytes32 indexed grantId);

    error InvalidTerms();
    error InvalidSignature();
    error AlreadyGranted();
    error PermitFailed();
    error NotPayer();
    error NotOperator();
    error UnknownGrant();
    error GrantRevoked();
    error NotStarted();
    error Ended();
    error ZeroAmount();
    error ExceedsAmountPerPeriod();
    error AlreadyChargedThisPeriod();
    error TransferFailed();

    constructor() EIP712("Kasse Subscriptions", "1") {}

    /// @notice Records the payer-signed terms. Anyone may submit them.
    function grant(Terms calldata terms, bytes calldata signature) external nonReentrant returns (bytes32 id) {
        return _grant(terms, signature);
    }

    /// @notice Submits the payer's EIP-2612 permit for this contract, then the terms. A permit already used (someone
    /// submitted it first) is fine as long as the allowance it set is still there.
    function grantWithPermit(
        Terms calldata terms,
        bytes calldata signature,
        uint256 permitValue,
        uint256 permitDeadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external nonReentrant returns (bytes32 id) {
        try IERC20Permit(terms.token).permit(terms.payer, address(this), permitValue, permitDeadline, v, r, s) {}
        catch {
            if (IERC20(terms.token).allowance(terms.payer, address(this)) < permitValue) revert PermitFailed();
        }
        return _grant(terms, signature);
    }

    /// @notice Moves `amount` from the payer to the receiver for the current period. Only the terms' operator.
    function charge(Terms calldata terms, uint256 amount) external nonReentrant {
        (bytes32 id, uint256 period, bytes4 err) = _check(terms, amount, msg.sender);
        if (err != 0) {
            assembly ("memory-safe") {
                mstore(0, err)
                revert(0, 4)
            }
        }
        _record(id, period, amount);
        IERC20(terms.token).safeTransferFrom(terms.payer, terms.receiver, amount);
    }

    /// @notice Charges several grants in one transaction. An item that cannot be charged (rule, balance, allowance)
    /// is reported with `ChargeFailed` and changes nothing; the others go through. Returns how many were charged.
    function chargeBatch(Charge[] calldata items) external nonReentrant returns (uint256 charged) {
        for (uint256 i; i < items.length; ++i) {
            Terms calldata t = items[i].terms;
            uint256 amount = items[i].amount;
            (bytes32 id, uint256 period, bytes4 err) = _check(t, amount, msg.sender);
            if (err == 0) {
                if (IERC20(t.token).trySafeTransferFrom(t.payer, t.receiver, amount)) {
                    _record(id, period, amount);
                    ++charged;
                    continue;
                }
                err = TransferFailed.selector;
            }
            emit ChargeFailed(id, i, err);
        }
    }

    /// @notice Ends the grant for good. Only the payer; works before the terms were submitted too.
    function revoke(Terms calldata terms) external nonReentrant {
        if (msg.sender != terms.payer) revert NotPayer();
        _revoke(grantId(terms));
    }

    /// @notice Ends the grant by the payer's EIP-712 `Revoke(bytes32 grantId)` signature. Anyone may submit it.
    function revokeWithSignature(Terms calldata terms, bytes calldata signature) external nonReentrant {
        bytes32 id = grantId(terms);
        bytes32 digest = _hashTypedDataV4(keccak256(abi.encode(REVOKE_TYPEHASH, id)));
        if (!SignatureChecker.isValidSignatureNow(terms.payer, digest, signature)) revert InvalidSignature();
        _revoke(id);
    }

    /// @notice The grant id: the EIP-712 digest of `terms` in this contract's domain (what the payer signs).
    function grantId(Terms calldata terms) public view returns (bytes32) {
        bytes32 typeHash = TERMS_TYPEHASH;
        bytes32 structHash;
        // keccak256(abi.encode(TERMS_TYPEHASH, terms)) without the ABI encoder: Terms is nine static words. Values
        // with dirty high bits hash to an id no payer signed, so they meet UnknownGrant.
        assembly ("memory-safe") {
            let m := mload(0x40)
            mstore(m, typeHash)
            calldatacopy(add(m, 0x20), terms, 0x120)
            structHash := keccak256(m, 0x140)
        }
        return _hashTypedDataV4(structHash);
    }

    /// @notice Why `charger` could not charge `amount` now (an error selector), or zero if the rules allow it. The
    /// payer's balance and allowance are not checked.
    function chargeError(Terms calldata terms, uint256 amount, address charger) external view returns (bytes4) {
        (,, bytes4 err) = _check(terms, amount, charger);
        return err;
    }

    // solhint-disable-next-line func-name-mixedcase
    function DOMAIN_SEPARATOR() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    function _grant(Terms calldata t, bytes calldata signature) private returns (bytes32 id) {
        if (
            t.payer == address(0) || t.token == address(0) || t.receiver == address(0) || t.operator == address(0)
                || t.amountPerPeriod == 0 || t.amountPerPeriod > type(uint128).max || t.period == 0 || t.end <= t.start
        ) revert InvalidTerms();
        if (block.timestamp >= t.end) revert Ended();
        id = grantId(t);
        Status status = grants[id].status;
        if (status == Status.Active) revert AlreadyGranted();
        if (status == Status.Revoked) revert GrantRevoked();
        if (!SignatureChecker.isValidSignatureNow(t.payer, id, signature)) revert InvalidSignature();
        grants[id].status = Status.Active;
        emit Granted(id, t.payer, t.receiver, t);
    }

    function _check(Terms calldata t, uint256 amount, address charger)
        private
        view
        returns (bytes32 id, uint256 period, bytes4 err)
    {
        id = grantId(t);
        Grant storage g = grants[id];
        Status status = g.status;
        if (status != Status.Active) return (id, 0, status == Status.None ? UnknownGrant.selector : GrantRevoked.selector);
        if (charger != t.operator) return (id, 0, NotOperator.selector);
        uint256 start = t.start;
        if (block.timestamp < start) return (id, 0, NotStarted.selector);
        if (block.timestamp >= t.end) return (id, 0, Ended.selector);
        if (amount == 0) return (id, 0, ZeroAmount.selector);
        if (amount > t.amountPerPeriod) return (id, 0, ExceedsAmountPerPeriod.selector);
        unchecked {
            period = (block.timestamp - start) / t.period;
        }
        if (period < g.nextPeriod) return (id, period, AlreadyChargedThisPeriod.selector);
    }

    function _record(bytes32 id, uint256 period, uint256 amount) private {
        Grant storage g = grants[id];
        // period < (end − start) / period < 2^48 and amount ≤ amountPerPeriod ≤ 2^128 − 1: the casts are exact.
        g.nextPeriod = uint48(period + 1);
        g.charges += 1;
        g.charged += uint128(amount);
        emit Charged(id, period, amount);
    }

    function _revoke(bytes32 id) private {
        if (grants[id].status == Status.Revoked) revert GrantRevoked();
        grants[id].status = Status.Revoked;
        emit Revoked(id);
    }
}
