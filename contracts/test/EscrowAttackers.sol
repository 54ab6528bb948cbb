// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {AuthCaptureEscrow, ITokenCollector} from "../AuthCaptureEscrow.sol";

/// @title ReentrantToken
/// @notice TEST ONLY. A hostile ERC-20 for the escrow's invariant suite: it is also the payments' operator (its
/// `operate` calls the escrow as `msg.sender`), accepts any `receiveWithAuthorization` signature, and once armed,
/// calls a target of its choosing from inside its next token movement — as the operator, so the call would pass the
/// escrow's operator check — and records how that call ended.
contract ReentrantToken is ERC20 {
    address private _hookTarget;
    bytes private _hookCall;
    bool public hookFired;
    bool public hookSucceeded;
    bytes public hookResult;

    constructor() ERC20("Reentrant", "RE") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @notice Calls `target` with `data` as this contract, bubbling a revert.
    function operate(address target, bytes calldata data) external returns (bytes memory) {
        (bool ok, bytes memory ret) = target.call(data);
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(ret, 32), mload(ret))
            }
        }
        return ret;
    }

    /// @notice Makes the next token movement call `target` with `data` first.
    function arm(address target, bytes calldata data) external {
        _hookTarget = target;
        _hookCall = data;
        hookFired = false;
    }

    /// @notice ERC-3009 shape without the signature check: moves `value` from `from` to the caller.
    function receiveWithAuthorization(address from, address to, uint256 value, uint256, uint256, bytes32, bytes memory)
        external
    {
        require(to == msg.sender, "caller must be payee");
        _transfer(from, to, value);
    }

    function _update(address from, address to, uint256 value) internal override {
        address target = _hookTarget;
        if (target != address(0)) {
            _hookTarget = address(0);
            (bool ok, bytes memory ret) = target.call(_hookCall);
            hookFired = true;
            hookSucceeded = ok;
            hookResult = ret;
        }
        super._update(from, to, value);
    }
}

/// @title ShortCollector
/// @notice TEST ONLY. A payment collector that reports success without bringing any tokens in.
contract ShortCollector is ITokenCollector {
    function collectorType() external pure returns (CollectorType) {
        return CollectorType.Payment;
    }

    function collectTokens(AuthCaptureEscrow.PaymentInfo calldata, address, uint256, bytes calldata) external {}
}
