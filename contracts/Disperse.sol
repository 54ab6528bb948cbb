// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

/// @title Disperse
/// @notice Pays many recipients of one ERC-20 token in one transaction, from the caller's balance (the caller approves
/// this contract once). Each payment is its own call: a payment the token refuses (a blocked recipient, a revert, a
/// `false` answer) is reported with `Failed(index)` and does not stop or undo the others. No state, no owner.
contract Disperse {
    /// @notice The payment at `index` did not go out; the token kept the amount with the caller.
    event Failed(uint256 indexed index);

    error LengthMismatch();
    error OutOfGas(uint256 index);

    /// @dev Gas each payment needs at least; with less left the whole batch reverts, so a payment is never reported
    /// failed only because the transaction ran short (the sender then sends the payments one by one).
    uint256 private constant GAS_PER_PAYMENT = 60_000;

    /// @notice Sends `amounts[i]` of `token` from the caller to `recipients[i]` for every i.
    function disperseToken(IERC20 token, address[] calldata recipients, uint256[] calldata amounts) external {
        uint256 n = recipients.length;
        if (n != amounts.length) revert LengthMismatch();
        for (uint256 i; i < n; ++i) {
            if (gasleft() < GAS_PER_PAYMENT) revert OutOfGas(i);
            // A low-level call so that one refusal is caught here instead of reverting the whole batch.
            (bool ok, bytes memory ret) = address(token).call(abi.encodeCall(IERC20.transferFrom, (msg.sender, recipients[i], amounts[i])));
            if (!ok || (ret.length != 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) emit Failed(i);
        }
    }
}
