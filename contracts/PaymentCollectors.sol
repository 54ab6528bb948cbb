// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {AuthCaptureEscrow, ITokenCollector, PaymentInfoHash} from "./AuthCaptureEscrow.sol";

/// @notice The ERC-3009 entry point the payment collector calls (USDC v2.2 and TestUSDC take the signature as bytes).
interface IERC3009 {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/// @title TokenCollector
/// @notice A way for AuthCaptureEscrow to bring tokens into an operator's token store. Only the escrow named at
/// construction may call it. Placement: the escrow's address is an immutable, so a collector built with the
/// canonical escrow's address works when its runtime code is placed at the canonical collector address.
abstract contract TokenCollector is ITokenCollector {
    /// @notice The escrow this collector serves.
    address public immutable authCaptureEscrow;

    error OnlyAuthCaptureEscrow();

    constructor(address escrow) {
        authCaptureEscrow = escrow;
    }

    function collectTokens(
        AuthCaptureEscrow.PaymentInfo calldata paymentInfo,
        address tokenStore,
        uint256 amount,
        bytes calldata collectorData
    ) external {
        if (msg.sender != authCaptureEscrow) revert OnlyAuthCaptureEscrow();
        _collect(paymentInfo, tokenStore, amount, collectorData);
    }

    function _collect(
        AuthCaptureEscrow.PaymentInfo calldata paymentInfo,
        address tokenStore,
        uint256 amount,
        bytes calldata collectorData
    ) internal virtual;
}

/// @title ERC3009PaymentCollector
/// @notice Collects a payment by the payer's ERC-3009 `ReceiveWithAuthorization` to this collector for `maxAmount`,
/// valid from 0 until `preApprovalExpiry`, whose nonce is the payer-agnostic payment-info hash: the signature is
/// good for exactly one PaymentInfo (any payer field) at this escrow on this chain, and only this collector can
/// submit it. What the operator does not collect (maxAmount − amount) goes straight back to the payer.
/// `collectorData` is the payer's signature as the token takes it.
/// NOTE: ERC-6492 signatures (a smart wallet not yet deployed) are passed to the token as they are; such a wallet
/// must be deployed before its authorization is collected.
contract ERC3009PaymentCollector is TokenCollector {
    using SafeERC20 for IERC20;

    constructor(address escrow) TokenCollector(escrow) {}

    function collectorType() external pure returns (CollectorType) {
        return CollectorType.Payment;
    }

    function _collect(
        AuthCaptureEscrow.PaymentInfo calldata p,
        address tokenStore,
        uint256 amount,
        bytes calldata signature
    ) internal override {
        IERC3009(p.token).receiveWithAuthorization(
            p.payer,
            address(this),
            p.maxAmount,
            0,
            p.preApprovalExpiry,
            PaymentInfoHash.payerAgnostic(p, authCaptureEscrow),
            signature
        );
        if (p.maxAmount > amount) IERC20(p.token).safeTransfer(p.payer, p.maxAmount - amount);
        IERC20(p.token).safeTransfer(tokenStore, amount);
    }
}

/// @title OperatorRefundCollector
/// @notice Brings refund money from the operator's own balance into its token store, by the allowance the operator
/// gave this collector. Only the operator can start a refund (the escrow checks), so no further consent is needed.
contract OperatorRefundCollector is TokenCollector {
    using SafeERC20 for IERC20;

    constructor(address escrow) TokenCollector(escrow) {}

    function collectorType() external pure returns (CollectorType) {
        return CollectorType.Refund;
    }

    function _collect(AuthCaptureEscrow.PaymentInfo calldata p, address tokenStore, uint256 amount, bytes calldata)
        internal
        override
    {
        IERC20(p.token).safeTransferFrom(p.operator, tokenStore, amount);
    }
}
